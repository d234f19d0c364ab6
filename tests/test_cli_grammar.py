"""One command-line grammar (docs/cli.md), checked on every subcommand: help on every option,
``--version``, one size rule, one list rule, ``-o/--output`` on every command that writes,
``kbench run``'s exit status when a cell is short, ``kbench plans FILE`` as a dry run and
``kbench run --label``.  Fast: no Kafka (the sim transport)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kbenv import KBENCH_PATH

import kbench
from kbench.cli import build_parser
from kbench.cli import main as cli_main
from kbench.commands import codecs as codecs_cmd
from kbench.commands import sim as sim_cmd
from kbench.commands.args import SIZE_HELP
from kbench.commands.run import EXIT_SHORT
from kbench.kafka import procstat
from kbench.model.units import SIZE_RULE, parse_size

ROOT = Path(__file__).resolve().parent.parent

#: Hidden options that are not older spellings of a visible one (a test knob).
HIDDEN_KNOBS = {"gate_sample_s"}

#: Every command that writes a file or directory of results.
WRITERS = (
    ("run",),
    ("report",),
    ("sim",),
    ("codecs", "bench"),
    ("inspect",),
    ("produce",),
    ("advise",),
    ("corpus", "sample"),
)

#: Every option that takes a size, with the arguments that make its command parse (and refuse the
#: size before any other work: no cluster, no network).
SIZE_OPTIONS = {
    ("sim", "--corpus-size"): [],
    ("sim", "--batch-size"): [],
    ("codecs", "bench", "--corpus-size"): [],
    ("codecs", "bench", "--block-sizes"): [],
    ("produce", "--corpus-size"): ["--topic", "t", "--bootstrap", "127.0.0.1:1", "--rate", "10", "--count", "1"],
    ("advise", "--batch-size"): ["--rate", "1000", "--partitions", "1"],
    ("corpus", "sample", "--max-bytes"): [
        "--bootstrap",
        "127.0.0.1:1",
        "--topic",
        "t",
        "--count",
        "1",
        "-o",
        "{tmp}/c",
    ],
    ("cluster", "up", "--heap"): ["--dir", "{tmp}/cluster"],
}


def _parsers() -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    out = []
    stack: list[tuple[tuple[str, ...], argparse.ArgumentParser]] = [((), build_parser())]
    while stack:
        path, p = stack.pop()
        out.append((path, p))
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                stack.extend(((*path, name), sp) for name, sp in a.choices.items())
    return sorted(out)


PARSERS = _parsers()
LEAVES = [(path, p) for path, p in PARSERS if not any(isinstance(a, argparse._SubParsersAction) for a in p._actions)]


def _option(path: tuple[str, ...], flag: str) -> argparse.Action:
    p = dict(PARSERS)[path]
    return next(a for a in p._actions if flag in a.option_strings)


def test_every_subcommand_is_walked() -> None:
    names = {p[0] for p, _ in LEAVES}
    assert names >= {"run", "report", "plans", "gate", "sim", "codecs", "advise", "produce", "inspect", "cluster"}
    assert ("codecs", "bench") in dict(LEAVES) and ("cluster", "up") in dict(LEAVES)


@pytest.mark.parametrize("path", [p for p, _ in PARSERS], ids=lambda p: " ".join(p) or "kbench")
def test_every_option_has_help(path: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    p = dict(PARSERS)[path]
    visible = {a.dest for a in p._actions if a.help != argparse.SUPPRESS}
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            continue
        name = "/".join(a.option_strings) or a.dest
        if a.help == argparse.SUPPRESS:  # hidden: an older spelling of a visible option, or a test knob
            assert a.dest in visible or a.dest in HIDDEN_KNOBS, f"kbench {' '.join(path)} {name}: hidden and alone"
            continue
        assert a.help and a.help.strip(), f"kbench {' '.join(path)} {name}: no help text"
    with pytest.raises(SystemExit) as e:
        cli_main([*path, "--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    for a in p._actions:
        if a.help != argparse.SUPPRESS and a.option_strings:
            assert a.option_strings[-1] in text, f"kbench {' '.join(path)} --help does not show {a.option_strings}"


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        cli_main(["--version"])
    assert e.value.code == 0
    # kbench's version first, then its libraries' (tests/test_librdkafka_versions.py checks them)
    assert capsys.readouterr().out.splitlines()[0] == f"kbench {kbench.__version__}"
    p = subprocess.run([sys.executable, "-m", "kbench", "--version"], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0 and p.stdout.splitlines()[0] == f"kbench {kbench.__version__}"


def test_the_size_rule() -> None:
    assert [parse_size(t) for t in ("16384", "16KiB", "16kib", "1MiB", "1.5MiB", "2GiB", "512B")] == [
        16384,
        16384,
        16384,
        1 << 20,
        3 << 19,
        2 << 30,
        512,
    ]
    for bad in ("16q", "16 KiBs", "0.5", "1.0001KiB", "", "k"):
        with pytest.raises(ValueError, match="--x: .*write bytes"):
            parse_size(bad, "--x")


@pytest.mark.parametrize(
    ("text", "binary", "decimal"),
    [("16k", "16KiB (= 16384 bytes", "or 16000"), ("16KB", "16KiB (= 16384 bytes", "or 16000"),
     ("1M", "1MiB (= 1048576 bytes", "or 1000000"), ("2gb", "2GiB (= 2147483648 bytes", "or 2000000000")],
)  # fmt: skip
def test_an_ambiguous_unit_is_refused_with_both_exact_spellings(text: str, binary: str, decimal: str) -> None:
    # Kafka's users say "16 KB" for batch.size 16384, SI says 16000: neither is guessed
    with pytest.raises(ValueError) as e:
        parse_size(text, "--batch-size")
    msg = str(e.value)
    assert msg.startswith(f"--batch-size: '{text}' is ambiguous; write {binary}") and msg.endswith(decimal)


def test_every_size_option_says_the_rule_and_only_those() -> None:
    says = {(*path, a.option_strings[0]) for path, p in LEAVES for a in p._actions if a.help and SIZE_HELP in a.help}
    assert says == set(SIZE_OPTIONS)


@pytest.mark.parametrize("opt", list(SIZE_OPTIONS), ids=lambda o: " ".join(o))
def test_every_size_option_refuses_another_spelling(
    opt: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    *path, flag = opt
    extra = [a.replace("{tmp}", str(tmp_path)) for a in SIZE_OPTIONS[opt]]
    assert cli_main([*path, flag, "16q", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"kbench: error: {flag}: bad size '16q'; write {SIZE_RULE}"
    assert list(tmp_path.iterdir()) == []  # refused before anything was written


def _parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def test_sizes_and_lists_mean_the_same_in_sim_and_codecs_bench() -> None:
    # the same words, the same bytes: 16000 is bytes, 16KiB binary, in both commands
    a = sim_cmd._configs(_parse("sim", "--batch-size", "16000,16KiB", "--codec", "none,lz4"))
    assert sorted({c.batch_size for c in a}) == [16000, 16384]
    b = codecs_cmd._blocks(_parse("codecs", "bench", "--block-sizes", "16000,16KiB").block_sizes)
    assert b == [16000, 16384]
    # commas and repeats are one rule: sim --codec none,lz4 is sim --codec none --codec lz4
    repeated = sim_cmd._configs(
        _parse("sim", "--batch-size", "16000", "--batch-size", "16KiB", "--codec", "none", "--codec", "lz4")
    )
    assert [(c.codec, c.level, c.batch_size) for c in a] == [(c.codec, c.level, c.batch_size) for c in repeated]
    assert {c.codec for c in a} == {"none", "lz4"}
    specs = codecs_cmd._specs(_parse("codecs", "bench", "--codecs", "zstd:3,lz4", "--codecs", "gzip:6").codecs)
    assert [str(s) for s in specs] == ["zstd:3", "lz4", "gzip:6"]


@pytest.mark.parametrize("path", WRITERS, ids=" ".join)
def test_every_writer_takes_o_output(path: tuple[str, ...]) -> None:
    short, long = _option(path, "-o"), _option(path, "--output")
    assert short is long and short.dest == "output"


def test_o_writes_what_sim_codecs_and_inspect_say(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """-o names a directory on every command (docs/cli.md); --csv FILE is the one-file form."""
    out, seg = tmp_path / "out", tmp_path / "seg"
    common = ["--corpus-size", "64KiB", "--batch-size", "16KiB"]
    assert cli_main(["sim", *common, "--codec", "none,lz4", "-o", str(out), "--segments", str(seg)]) == 0
    rows = (out / "sim.csv").read_text().splitlines()
    assert len(rows) == 3 and "lz4" in rows[2]
    bench = [
        "codecs",
        "bench",
        "--corpus",
        "json",
        "--corpus-size",
        "64KiB",
        "--codecs",
        "lz4",
        "--block-sizes",
        "16KiB",
    ]
    assert cli_main([*bench, "--min-time", "0.01", "--repeats", "1", "--json", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    cells = json.loads(text[text.index("{") :])["cells"]
    assert [(c["spec"], c["block_size"]) for c in cells] == [("lz4", 16384)]
    assert (out / "M.csv").is_file() and "lz4" in (out / "M.csv").read_text()
    batches = tmp_path / "batches-here.csv"
    assert cli_main(["inspect", str(seg / "run001"), "--summary-only", "--csv", str(batches)]) == 0
    assert batches.read_text().startswith("file,") or "base_offset" in batches.read_text().splitlines()[0]
    assert cli_main(["inspect", str(seg / "run001"), "--summary-only", "-o", str(out)]) == 0
    assert (out / "batches.csv").read_text() == batches.read_text()


PLAN = """\
name = "grammar"
description = "kbench's CLI grammar test"
repetitions = 2
warmup = false
duration_s = 0.05
min_window_s = 0
seed = 3

[transport]
kind = "sim"

[corpora]
json = { source = "json", size = "64KiB", seed = 1 }

[[sweep]]
name = "c"
experiments = ["C"]
codec = ["none", "lz4"]
corpus = ["json"]
batch_size = "16KiB"
linger_ms = 5
rate = 2000
"""


def _kbench(*args: str, cwd: Path, steal: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=KBENCH_PATH + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop(procstat.INJECT_ENV, None)
    if steal is not None:
        env[procstat.INJECT_ENV] = steal
    cmd = [sys.executable, "-m", "kbench", *args]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture()
def plan_file(tmp_path: Path) -> Path:
    p = tmp_path / "grammar.toml"
    p.write_text(PLAN)
    return p


def test_plans_file_is_a_dry_run(plan_file: Path, tmp_path: Path) -> None:
    before = sorted(tmp_path.iterdir())
    p = _kbench("plans", str(plan_file), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "plan grammar" in p.stdout and "valid" in p.stdout
    assert "c-000" in p.stdout and "c-001" in p.stdout and "16384" in p.stdout  # "16KiB" in the file
    assert "estimated time: ~" in p.stdout
    j = _kbench("plans", str(plan_file), "--json", cwd=tmp_path)
    doc = json.loads(j.stdout)
    assert [c["cell_id"] for c in doc["cells"]] == ["c-000", "c-001"]
    assert sorted(map(tuple, doc["order"])) == [("c-000", 1), ("c-000", 2), ("c-001", 1), ("c-001", 2)]
    assert doc["order_seed"] == 3 and doc["estimate_s"] == pytest.approx(4 * 0.05)
    assert sorted(tmp_path.iterdir()) == before  # nothing written
    # the order shown is the order kbench run uses with that seed
    from kbench.engine import plan as plan_mod
    from kbench.engine.runner import order_runs

    plan = plan_mod.load(plan_file)
    assert doc["order"] == [[c.cell_id, r] for c, r in order_runs(plan_mod.expand(plan), 2, 3)]
    # built-in names too; a bad plan: one line naming the problem, exit 2
    q = _kbench("plans", "quick", cwd=tmp_path)
    assert q.returncode == 0 and "plan quick" in q.stdout and "order (" in q.stdout
    bad = tmp_path / "bad.toml"
    bad.write_text(PLAN.replace('batch_size = "16KiB"', 'batch_size = "16KB!"'))
    b = _kbench("plans", str(bad), cwd=tmp_path)
    assert b.returncode == 2 and len(b.stderr.strip().splitlines()) == 1 and "bad size" in b.stderr
    t = _kbench("plans", "quick", "--toml", cwd=tmp_path)
    assert t.returncode == 0 and 'name = "quick"' in t.stdout


def test_run_label_json_and_exit_status(plan_file: Path, tmp_path: Path) -> None:
    # steal injected (0 %, then 50 %): a run this short cannot measure steal, and its verdict must not hang on it
    ok = _kbench(
        "run",
        str(plan_file),
        "-o",
        "ok",
        "--label",
        "alpha",
        "--gate-sample-s",
        "0.05",
        "--json",
        cwd=tmp_path,
        steal="0",
    )
    assert ok.returncode == 0, ok.stderr[-2000:]
    doc = json.loads(ok.stdout)
    assert doc["state"] == "complete" and doc["short_cells"] == [] and doc["exit_status"] == 0
    man = json.loads((tmp_path / "ok" / "manifest.json").read_text())
    assert man["machine"]["label"] == "alpha"
    from kbench.reporting.runs import machine_label

    assert machine_label(man["machine"]) == "alpha"
    # every repetition INVALID (injected steal): the run completes, short of OK repetitions: exit 4
    short = _kbench(
        "run", str(plan_file), "-o", "short", "--gate-sample-s", "0.05", "--force", cwd=tmp_path, steal="50"
    )
    assert short.returncode == EXIT_SHORT == 4, short.stderr[-2000:]
    assert "cells short of OK repetitions" in short.stdout
    assert f"exit status {EXIT_SHORT}" in short.stderr
    assert "label" not in json.loads((tmp_path / "short" / "manifest.json").read_text())["machine"]
    # a resume of the complete run has nothing to run: the same tables and the same exit status
    again = _kbench("run", "--resume", "short", cwd=tmp_path, steal="50")
    assert again.returncode == EXIT_SHORT, again.stderr[-2000:]
    assert "cells short of OK repetitions" in again.stdout and "already complete" in again.stdout


def test_run_exits_0_when_only_a_figure_the_transport_does_not_measure_is_missing(tmp_path: Path) -> None:
    """A on the sim transport: latency is not measured (NA), the tables list the cell, the status is 0."""
    plan = tmp_path / "a.toml"
    plan.write_text(PLAN.replace('experiments = ["C"]', 'experiments = ["A", "C"]'))
    p = _kbench("run", str(plan), "-o", "run", "--gate-sample-s", "0.05", cwd=tmp_path, steal="0")
    assert p.returncode == 0, p.stderr[-2000:]
    assert "cells short of OK repetitions" in p.stdout and "latency not measured by this transport" in p.stdout


def test_report_json_on_the_bundled_example(tmp_path: Path) -> None:
    runs = [str(ROOT / "notebooks" / "example-runs" / d) for d in ("one-cpu", "two-cpus")]
    p = _kbench("report", *runs, "-o", str(tmp_path / "rep"), "--no-plots", "--verify", "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    doc = json.loads(p.stdout)  # the document alone on stdout; the status lines on stderr
    assert Path(doc["markdown"]).is_file() and Path(doc["html"]).is_file() and doc["verified"] is True
    assert "wrote" in p.stderr and "verified" in p.stderr
