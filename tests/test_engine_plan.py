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
    ("repetitions = 0\n" + BASE, "repetitions", "> 0"),
    ('[client]\n"compression.type" = "lz4"\n' + BASE, "client.compression.type", "sweep"),
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
    with pytest.raises(plan_mod.PlanError, match=r"sweep\[0\]\.codec: zstd:19 is beyond librdkafka.*client = \"java\""):
        plan_mod.parse({**base, "sweep": [{**sweep, "client": ["librdkafka", "java"]}]})
    with pytest.raises(plan_mod.PlanError, match=r"sweep\[0\]\.client: unknown client 'jvm'"):
        plan_mod.parse({**base, "sweep": [{**sweep, "client": "jvm"}]})
    with pytest.raises(plan_mod.PlanError, match=r"sweep\[0\]\.client: empty"):
        plan_mod.parse({**base, "sweep": [{**sweep, "client": []}]})
