"""Plans: built-ins load, bad plans fail before any work with one line naming the key and the fix."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kbench.engine import plan as plan_mod
from kbench.engine.plan import PlanError

BUILTINS = ("quick", "zstd-vs-none", "batch-size-sweep", "recompression", "codec-levels", "clients")


def test_builtin_plans_are_listed_and_valid() -> None:
    names = plan_mod.builtin_plans()
    assert set(BUILTINS) <= set(names)
    for n in BUILTINS:
        p = plan_mod.load(n)
        cells = plan_mod.expand(p)
        assert cells, n
        assert len({c.cell_id for c in cells}) == len(cells)


def test_builtin_plans_cover_their_experiments() -> None:
    assert plan_mod.load("quick").experiments == ["A", "B", "C", "D"]
    assert plan_mod.load("zstd-vs-none").experiments == ["A", "B", "C", "D"]
    assert "E" in plan_mod.load("batch-size-sweep").experiments
    assert "F" in plan_mod.load("recompression").experiments
    levels = {c.codec for c in plan_mod.expand(plan_mod.load("codec-levels"))}
    assert {f"zstd:{i}" for i in range(1, 13)} | {"lz4", "snappy", "gzip"} <= levels


def test_quick_plan_uses_auto_rate_after_saturated_cells() -> None:
    cells = plan_mod.expand(plan_mod.load("quick"))
    assert any(c.rate == "saturated" for c in cells)
    assert all(c.rate == "auto" for c in cells if "A" in c.experiments)


def test_expansion_crosses_every_axis() -> None:
    p = plan_mod.parse(
        {
            "sweep": [
                {
                    "name": "e",
                    "experiments": ["E"],
                    "codec": ["lz4", "zstd:1"],
                    "batch_size": [16384, 65536, 1 << 20],
                    "linger_ms": [0, 5],
                    "partitions": [1, 4],
                    "rate": 1000,
                }
            ]
        }
    )
    cells = plan_mod.expand(p)
    assert len(cells) == 2 * 3 * 2 * 2
    assert cells[0].cell_id == "e-000" and cells[-1].cell_id == "e-023"


BASE = """
[[sweep]]
name = "s"
experiments = ["A"]
codec = ["none"]
rate = 1000
"""

BAD = [
    # (plan text, key that must be named, a word of the fix)
    ("colour = 1\n" + BASE, "colour", "unknown key"),
    (BASE + "batchsize = 5\n", "sweep[0].batchsize", "batch_size"),
    ("[transport]\nknd = 'local'\n" + BASE, "transport.knd", "kind"),
    (BASE.replace('codec = ["none"]', 'codec = ["zstdd"]'), "sweep[0].codec", "use one of"),
    (BASE.replace('codec = ["none"]', 'codec = ["zstd:99"]'), "sweep[0].codec", "out of range"),
    (BASE.replace('codec = ["none"]', 'codec = ["gzip:0"]'), "sweep[0].codec", "out of range"),
    (BASE.replace("rate = 1000", "rate = -5"), "sweep[0].rate", "positive number"),
    (BASE.replace("rate = 1000", 'rate = "fast"'), "sweep[0].rate", "saturated"),
    (BASE + 'corpus = ["no/such/file.txt"]\n', "sweep[0].corpus", "not found"),
    ("[corpora.mine]\nsource = 'file'\npath = 'missing.txt'\n" + BASE, "corpora.mine.path", "not found"),
    (BASE.replace('experiments = ["A"]', 'experiments = ["B"]'), "sweep[0].rate", "saturated"),
    (BASE.replace("rate = 1000", 'rate = "auto"'), "sweep.rate", "saturated"),
    ("repetitions = 0\n" + BASE, "repetitions", "at least 1"),
    ('[client]\n"compression.type" = "lz4"\n' + BASE, "client.compression.type", "sweep"),
    # zstd allows 1..22, but the linked librdkafka refuses compression.level above 12 at run time
    (BASE.replace('codec = ["none"]', 'codec = ["zstd:15"]'), "sweep[0].codec", "compression.level -1..12"),
    ("[transport]\nheader_sample = 0\n" + BASE, "transport.header_sample", "at least 1"),
]


@pytest.mark.parametrize("text,key,fix", BAD)
def test_bad_plan_names_key_and_fix(tmp_path: Path, text: str, key: str, fix: str) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(PlanError) as ei:
        plan_mod.load(str(f))
    msg = str(ei.value)
    assert "\n" not in msg
    assert msg.startswith(key), msg
    assert fix in msg, msg


def test_client_level_range_is_asked_of_librdkafka_and_sim_keeps_high_levels(tmp_path: Path) -> None:
    from kbench.kafka import drivers

    assert drivers.client_level_range("zstd") == (-1, 12)  # librdkafka 2.0.2's compression.level
    with pytest.raises(ValueError, match="compression.codec"):
        drivers.client_level_range("brotli")
    f = tmp_path / "p.toml"
    f.write_text('[transport]\nkind = "sim"\nheader_sample = 50\n' + BASE.replace('["none"]', '["zstd:15"]'))
    p = plan_mod.load(str(f))
    assert [str(c) for c in p.sweeps[0].codec] == ["zstd:15"] and p.transport.header_sample == 50
    f.write_text(BASE.replace('["none"]', '["zstd:12"]'))
    assert plan_mod.load(str(f)).transport.header_sample == drivers.DEFAULT_HEADER_SAMPLE


def test_unknown_builtin_plan_lists_the_builtins() -> None:
    with pytest.raises(PlanError, match="quick"):
        plan_mod.load("no-such-plan")


@pytest.mark.parametrize("text,key,fix", [BAD[1], BAD[4], BAD[6], BAD[8]])
def test_cli_bad_plan_fails_before_any_work(tmp_path: Path, text: str, key: str, fix: str) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(text)
    out = tmp_path / "run"
    p = subprocess.run(
        [sys.executable, "-m", "kbench", "run", str(f), "-o", str(out)], capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert key in lines[0] and fix in lines[0]
    assert not out.exists()


def test_client_axis_and_its_level_ranges() -> None:
    base = {"transport": {"kind": "dry"}}
    sweep = {"experiments": ["C"], "rate": 100, "codec": ["lz4", "zstd:19"], "client": "java"}
    cells = plan_mod.expand(plan_mod.parse({**base, "sweep": [sweep]}))
    assert {(c.client, c.codec) for c in cells} == {("java", "lz4"), ("java", "zstd:19")}
    assert cells[0].params()["client"] == "java"
    two = plan_mod.expand(
        plan_mod.parse({**base, "sweep": [{**sweep, "codec": "zstd:3", "client": ["librdkafka", "java"]}]})
    )
    assert [c.client for c in two] == ["librdkafka", "java"]
    kafka = {"transport": {"kind": "bootstrap", "bootstrap": "b:9092"}}
    plan_mod.parse({**kafka, "sweep": [sweep]})  # java takes zstd:19 on Kafka
    with pytest.raises(
        plan_mod.PlanError, match=r"sweep\[0\]\.codec: zstd:19 is refused by the client.*client = \"java\""
    ):
        plan_mod.parse({**kafka, "sweep": [{**sweep, "client": ["librdkafka", "java"]}]})
    with pytest.raises(plan_mod.PlanError, match=r"sweep\[0\]\.client: unknown client 'jvm'"):
        plan_mod.parse({**base, "sweep": [{**sweep, "client": "jvm"}]})
    with pytest.raises(plan_mod.PlanError, match=r"sweep\[0\]\.client: empty"):
        plan_mod.parse({**base, "sweep": [{**sweep, "client": []}]})


# ---------------------------------------------------------------- parsed once, one spelling each

PARSE_ONCE = """
name = "p"
[transport]
kind = "dry"
[[sweep]]
name = "s"
experiments = ["C", "F"]
codec = ["zstd:3", "lz4"]
rate = 100
topic_compression = ["producer", "none"]
key_policy = "{kp}"
"""


@pytest.mark.parametrize("kp", ["roundrobin", "round-robin"])
def test_cells_carry_a_parsed_codec_and_one_spelling_each(tmp_path: Path, kp: str) -> None:
    from kbench.kafka.drivers import KEY_POLICIES
    from kbench.model.codecs import CodecSpec

    path = tmp_path / "p.toml"
    path.write_text(PARSE_ONCE.format(kp=kp))
    cells = plan_mod.expand(plan_mod.load(str(path)))
    assert {c.spec for c in cells} == {CodecSpec("zstd", 3), CodecSpec("lz4", None)}
    assert all(str(c.spec) == c.codec for c in cells)
    assert {c.topic_compression for c in cells} == {"producer", "uncompressed"}
    assert {c.key_policy for c in cells} == {"round-robin"} and "round-robin" in KEY_POLICIES


def test_transports_do_not_parse_the_codec_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbench.engine.transports.base import RunRequest
    from kbench.engine.transports.dry import DryTransport
    from kbench.engine.transports.simulated import SimTransport
    from kbench.model import codecs, corpus

    path = tmp_path / "p.toml"
    path.write_text(PARSE_ONCE.format(kp="none"))
    cells = plan_mod.expand(plan_mod.load(str(path)))

    def refuse(text: str) -> codecs.CodecSpec:
        raise AssertionError(f"codec parsed again: {text}")

    monkeypatch.setattr(codecs, "parse_spec", refuse)
    data = corpus.generate("json", 20000)
    for transport in (DryTransport(), SimTransport()):
        for c in cells:
            req = RunRequest(cell=c, topic="t", corpus=data, rate=100.0, duration_s=0.01, steady_skip_s=0.0)
            res = transport.run(req)
            want = c.spec.codec if c.topic_compression == "producer" else "none"
            assert set(res.stored_codecs) == {want}, (transport.kind, c)
