"""A catalogue of bad inputs, as a careless or hostile user gives them (issue 12).

Each case is one ``kbench ...`` command (in a forked child of the test process, see :func:`kbench`): its expected exit status and a fragment of
its one-line message.  Every case also asserts: no traceback, no hang (a timeout), nothing
created where a refused input must leave no trace, and the earlier results (a complete run
directory made once for the module) byte for byte unchanged.  Runs use the ``dry`` transport.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import resource
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kbenv import KBENCH_PATH

from kbench import _native
from kbench.model import batch, limits, segment
from kbench.model.batch import Record

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 90

TOP = {
    "name": '"cat"',
    "repetitions": "1",
    "duration_s": "0.05",
    "min_window_s": "0",
    "warmup": "false",
    "corpus_size": "20000",
}
SWEEP = {"experiments": '["C"]', "codec": '["none", "lz4"]', "corpus": '"json"', "rate": "100"}


def plan_text(top: dict[str, str] | None = None, sweep: dict[str, str] | None = None, extra: str = "") -> str:
    t = {**TOP, **(top or {})}
    s = {**SWEEP, **(sweep or {})}
    lines = [f"{k} = {v}" for k, v in t.items() if v is not None]
    lines += ["", "[transport]", 'kind = "dry"', extra, "[[sweep]]"]
    lines += [f"{k} = {v}" for k, v in s.items() if v is not None]
    return "\n".join(lines) + "\n"


#: Mounts a 64 KiB tmpfs at $1, fills it, runs the rest of the command line there, then lists
#: what is left on that disk into $2 (the mount goes away with the namespace).
FULL_DISK = (
    'mount -t tmpfs -o size=64k kbench-full "$1" && (head -c 1048576 /dev/zero > "$1/filler" || true) && '
    'disk=$1 listing=$2 && shift 2 && "$@"; rc=$?; ls -A "$disk" > "$listing"; exit $rc'
)


def kbench(
    args: list[str], cwd: Path, nofile: int | None = None, full_disk: tuple[Path, Path] | None = None
) -> subprocess.CompletedProcess[str]:
    """``kbench args`` in ``cwd``: in a forked child of this process (kbench's modules are imported
    once per test process, not once per case: the catalogue's ~200 commands would spend a minute of
    CPU starting interpreters), or in a new interpreter when the case lowers the open-file limit (a
    fork inherits this process's open files) or runs on a full disk (a mount namespace)."""
    if nofile is None and full_disk is None:
        return forked_cli(args, cwd)

    def limit() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    env = {**os.environ, "PYTHONPATH": KBENCH_PATH}
    wrap = [] if full_disk is None else ["unshare", "-rm", "sh", "-c", FULL_DISK, "sh", *map(str, full_disk)]
    return subprocess.run(
        [*wrap, sys.executable, "-m", "kbench", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=TIMEOUT,
        preexec_fn=limit,
    )


def _child_cli(args: list[str], cwd: Path, out: int, err: int, go: int | None = None) -> None:
    """In a forked child: ``kbench args`` with stdin from /dev/null and stdout/stderr on ``out``/``err``
    (after one byte on ``go``, when given), then exit with its status.  Never returns."""
    code = 70
    try:
        if go is not None:
            os.read(go, 1)
        os.chdir(cwd)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), errors="backslashreplace")
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), errors="backslashreplace")
        sys.argv = ["kbench", *args]  # what a run records as its command line
        from kbench import cli

        try:
            code = cli.main(args)
        except SystemExit as e:  # argparse's refusals
            code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
        except BaseException:  # noqa: BLE001 - printed as the interpreter would, for the case to see
            traceback.print_exc()
            code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _wait(pid: int, timeout: float) -> int:
    """The exit status of child ``pid``; killed and an AssertionError past ``timeout`` seconds."""
    fd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
    finally:
        os.close(fd)
    if not ready:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise AssertionError(f"kbench (pid {pid}) still running after {timeout} s")
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def forked_cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:
            _child_cli(args, cwd, out.fileno(), err.fileno())
        code = _wait(pid, TIMEOUT)
        texts = []
        for f in (out, err):
            f.seek(0)
            texts.append(f.read().decode(errors="replace"))
    return subprocess.CompletedProcess(["kbench", *args], code, texts[0], texts[1])


def tree_hash(d: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(d.rglob("*")):
        h.update(str(p.relative_to(d)).encode("utf-8", "surrogateescape"))
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Files every case may refer to: a complete run, a run of another plan, segments, odd paths."""
    d = tmp_path_factory.mktemp("bad-inputs")
    w: dict[str, Path] = {"root": d}
    (d / "base.toml").write_text(plan_text())
    (d / "other.toml").write_text(plan_text(sweep={"codec": '["none", "zstd"]'}))
    for name in ("run", "other"):
        plan = d / f"{'base' if name == 'run' else 'other'}.toml"
        p = kbench(["run", str(plan), "-o", str(d / name), "--gate-sample-s", "0"], d)  # no steal sampled: no noise
        assert p.returncode == 0, p.stderr
        w[name] = d / name
    w["base"] = d / "base.toml"
    (d / "afile").write_text("not a directory\n")
    w["afile"] = d / "afile"
    (d / "adir").mkdir()
    w["adir"] = d / "adir"
    os.mkfifo(d / "fifo")
    w["fifo"] = d / "fifo"
    (d / "binary.toml").write_bytes(bytes(range(256)) * 4)
    w["binary"] = d / "binary.toml"
    (d / "empty.log").write_bytes(b"")
    w["empty_log"] = d / "empty.log"
    good = batch.encode([Record(value=b"hello kafka", timestamp=1)] * 3, "lz4")
    segment.write_segment(d / "good.log", [good])
    w["good_log"] = d / "good.log"
    bad = bytearray(batch.encode([Record(value=b"hello", timestamp=1)] * 3, "none"))
    bad[57:61] = struct.pack(">i", 2**31 - 1)  # recordsCount
    bad[17:21] = struct.pack(">I", _native.crc32c(bytes(bad[21:])))
    segment.write_segment(d / "count.log", [bytes(bad)])
    w["count_log"] = d / "count.log"
    nu = Path(os.fsdecode(bytes(d / "nu") + b"/\xff\xfe-0.log"))
    nu.parent.mkdir()
    shutil.copy(d / "good.log", nu)
    w["nonutf8_dir"] = nu.parent
    w["nonutf8_run"] = Path(os.fsdecode(bytes(d) + b"/run-\xff"))
    shutil.copytree(d / "run", w["nonutf8_run"])
    return w


# ----------------------------------------------------------------------------- the catalogue


@dataclass(frozen=True)
class Case:
    id: str
    argv: list[str]  # "{name}" is replaced by world[name] or the case's own paths ({tmp}, {plan}, {out})
    rc: int
    fragment: str
    plan: str | None = None  # written to {plan}
    setup: Callable[[dict[str, Path], Path], None] | None = None
    after: Callable[[dict[str, Path], Path], None] | None = None
    must_not_exist: tuple[str, ...] = ("{out}",)  # refused inputs leave no trace
    nofile: int | None = None
    tags: tuple[str, ...] = field(default_factory=tuple)
    full_disk: bool = False  # run on a full tmpfs mounted at {disk} (a user and mount namespace of its own)
    output: Callable[[str], None] | None = None  # a check of what the command printed (stdout)


RUN = ["run", "{plan}", "-o", "{out}", "--gate-sample-s", "0"]


def plan_case(
    cid: str, fragment: str, top: dict[str, str] | None = None, sweep: dict[str, str] | None = None, extra: str = ""
) -> Case:
    return Case(cid, RUN, 2, fragment, plan=plan_text(top, sweep, extra))


def copy_run(w: dict[str, Path], tmp: Path) -> Path:
    dst = tmp / "copy"
    shutil.copytree(w["run"], dst)
    return dst


def csv_bytes(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.glob("*.csv"))}


def _delete_journal(w: dict[str, Path], tmp: Path) -> None:
    (copy_run(w, tmp) / "done.jsonl").unlink()


def _journal_rebuilt(w: dict[str, Path], tmp: Path) -> None:
    c = tmp / "copy"
    assert csv_bytes(c) == csv_bytes(w["run"]), "a resume dropped or changed rows"
    assert (c / "done.jsonl").read_text().count("\n") == 2
    assert json.loads((c / "manifest.json").read_text())["state"] == "complete"


def _damage_journal(w: dict[str, Path], tmp: Path) -> None:
    (copy_run(w, tmp) / "done.jsonl").write_bytes(b'{"cell_id": "s0-0\x00garbage\n')


def _complete_untouched(w: dict[str, Path], tmp: Path) -> None:
    assert tree_hash(tmp / "copy") == tree_hash(w["run"])


def _make_interrupted(w: dict[str, Path], tmp: Path) -> None:
    c = copy_run(w, tmp)
    m = json.loads((c / "manifest.json").read_text())
    m["state"] = "interrupted"
    (c / "manifest.json").write_text(json.dumps(m))
    lines = (c / "done.jsonl").read_text().splitlines(keepends=True)
    (c / "done.jsonl").write_text("".join(lines[:1]))  # one repetition left to run
    rows = (c / "C.csv").read_text().splitlines(keepends=True)
    keep = json.loads(lines[0])
    (c / "C.csv").write_text(
        rows[0] + "".join(r for r in rows[1:] if r.startswith(f"{keep['cell_id']},{keep['rep']},"))
    )


def _still_interrupted(w: dict[str, Path], tmp: Path) -> None:
    m = json.loads((tmp / "copy" / "manifest.json").read_text())
    assert m["state"] == "interrupted", m["state"]
    assert len(list(csv.DictReader((tmp / "copy" / "C.csv").open()))) == 1


def _banana(w: dict[str, Path], tmp: Path) -> None:
    c = copy_run(w, tmp)
    rows = list(csv.DictReader((c / "C.csv").open()))
    rows[0]["ratio"] = "banana"
    with (c / "C.csv").open("w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        wr.writeheader()
        wr.writerows(rows)


def _edit_c(w: dict[str, Path], tmp: Path, edit: Callable[[list[dict[str, str]]], list[dict[str, str]]]) -> None:
    c = copy_run(w, tmp)
    rows = list(csv.DictReader((c / "C.csv").open()))
    fields = list(rows[0])
    rows = edit(rows)
    with (c / "C.csv").open("w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        wr.writeheader()
        wr.writerows(rows)


def _set_first(col: str, value: str) -> Callable[[dict[str, Path], Path], None]:
    def setup(w: dict[str, Path], tmp: Path) -> None:
        def edit(rows: list[dict[str, str]]) -> list[dict[str, str]]:
            ok = next(r for r in rows if r["status"] == "OK")
            ok[col] = value
            return rows

        _edit_c(w, tmp, edit)

    return setup


def _duplicate_row(w: dict[str, Path], tmp: Path) -> None:
    _edit_c(w, tmp, lambda rows: [*rows, dict(rows[0])])


def _excluded_listed(fragment: str) -> Callable[[dict[str, Path], Path], None]:
    def after(w: dict[str, Path], tmp: Path) -> None:
        md = (tmp / "rep" / "report.md").read_text()
        excluded = md.split("## Excluded data points", 1)[1].split("\n## ", 1)[0]
        assert fragment in excluded, excluded

    return after


def _foreign_header(w: dict[str, Path], tmp: Path) -> None:
    """An interrupted run whose C.csv another command replaced (e.g. codecs bench --csv RUN/C.csv)."""
    _make_interrupted(w, tmp)
    c = tmp / "copy"
    (c / "C.csv").write_text("codec,level,block_size,corpus,ratio\nlz4,,16384,json,2.5\n")
    (tmp / "before.hash").write_text(tree_hash(c))


def _foreign_header_untouched(w: dict[str, Path], tmp: Path) -> None:
    assert tree_hash(tmp / "copy") == (tmp / "before.hash").read_text(), "the refused resume changed the run"


def _other_transport(w: dict[str, Path], tmp: Path) -> None:
    c = copy_run(w, tmp)
    other = tmp / "other-kind"
    shutil.copytree(c, other)
    m = json.loads((other / "manifest.json").read_text())
    m["transport"]["kind"] = "sim" if m["transport"].get("kind") != "sim" else "dry"
    m["run_id"] = "another-run"
    (other / "manifest.json").write_text(json.dumps(m))


def _banana_row_only(w: dict[str, Path], tmp: Path) -> None:
    md = (tmp / "rep" / "report.md").read_text()
    assert "ratio: 'banana' is not a number" in md
    # the other cell keeps its repetition (n = 1), the banana cell has none
    # C's table (the answer table's "codec vs baseline" rows are not C's)
    table = [line for line in md.splitlines() if line.startswith("| ") and "× [" in line and " vs " not in line]
    assert len(table) == 1, table


def _cut_quoted(w: dict[str, Path], tmp: Path) -> None:
    c = copy_run(w, tmp)
    with (c / "C.csv").open("a") as f:
        f.write('s0-000,2,s0,none,json,16384,5,1,all,producer,100,100,0,5,1873,"cut inside a quo')


def _medians_within_their_ranges(stdout: str) -> None:
    """Every figure ``med [min-max]`` codecs bench prints: the median inside its own range, both
    at one precision (a median of 5.5 over repetitions all at 5.5 once read "5.5 [6-6]")."""
    figures = re.findall(r"(\d+(?:\.\d+)?) \[(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)\]", stdout)
    assert len(figures) == 2 * 3, stdout  # compress and decompress, per codec
    for med, lo, hi in figures:
        assert float(lo) <= float(med) <= float(hi), (med, lo, hi)
        assert {len(x.partition(".")[2]) for x in (med, lo, hi)} == {1}, (med, lo, hi)


def _mixed_schema(w: dict[str, Path], tmp: Path) -> None:
    """A run whose C.csv got rows of another schema appended under their own header (what
    ``--resume`` once did after ``codecs bench --csv RUN/C.csv``: two schemas in one file)."""
    c = copy_run(w, tmp)
    with (c / "C.csv").open("a") as f:
        f.write("codec,level,block_size,corpus,ratio\nlz4,,16384,json,2.5\n")
    (tmp / "before.hash").write_text(tree_hash(c))


def _foreign_csv(w: dict[str, Path], tmp: Path) -> None:
    """A run whose C.csv another command replaced (codecs bench's CSV: status, ratio, reason, but
    no repetition of a run)."""
    c = copy_run(w, tmp)
    header = "experiment,corpus,codec,level,block_size,repetition,warmup,ratio,status,reason"
    (c / "C.csv").write_text(f"{header}\nM,json,lz4,,16384,1,false,2.5,OK,\n")
    (tmp / "before.hash").write_text(tree_hash(c))


def _twice_is_once(w: dict[str, Path], tmp: Path) -> None:
    prov = json.loads((tmp / "rep" / "provenance.json").read_text())
    assert len(prov["runs"]) == 1, prov["runs"]


def _user_report(w: dict[str, Path], tmp: Path) -> None:
    (tmp / "rep").mkdir()
    (tmp / "rep" / "report.md").write_text("my own notes\n")


def _user_report_kept(w: dict[str, Path], tmp: Path) -> None:
    assert (tmp / "rep" / "report.md").read_text() == "my own notes\n"
    assert sorted(p.name for p in (tmp / "rep").iterdir()) == ["report.md"]


def _no_temp_files(w: dict[str, Path], tmp: Path) -> None:
    leftovers = [p for p in w["adir"].iterdir()] + [
        p for p in tmp.iterdir() if ".tmp" in p.name or p.suffix == ".partial"
    ]
    assert not leftovers, leftovers


def _nonutf8_csv(w: dict[str, Path], tmp: Path) -> None:
    data = (tmp / "out.csv").read_bytes()
    assert b"\xff\xfe-0.log" in data  # the file's own name, byte for byte


METRICS_PASSWORD = "KbMetr1cs-pw"
METRICS_URL = f"http://bench:{METRICS_PASSWORD}@127.0.0.1:9/metrics"


def _no_metrics_password(w: dict[str, Path], tmp: Path) -> None:
    run = tmp / "out"
    texts = [p.read_bytes() for p in run.rglob("*") if p.is_file()]
    assert texts and not [t for t in texts if METRICS_PASSWORD.encode() in t]
    assert "http://<redacted>@127.0.0.1:9/metrics" in (run / "manifest.json").read_text()


def _run_dir_untouched(w: dict[str, Path], tmp: Path) -> None:
    assert tree_hash(tmp / "copy") == tree_hash(w["run"])


def _new_file_beside_the_run(w: dict[str, Path], tmp: Path) -> None:
    assert (tmp / "copy" / "M.csv").read_text().startswith("experiment,corpus,")
    assert csv_bytes(w["run"]) == {k: v for k, v in csv_bytes(tmp / "copy").items() if k != "M.csv"}


def _full_disk_left_nothing(w: dict[str, Path], tmp: Path) -> None:
    assert (tmp / "listing").read_text().split() == ["filler"]  # no run directory, no .manifest.json.tmpNNNN


def _sparse(name: str, size: int) -> Callable[[dict[str, Path], Path], None]:
    """A sparse file of zeros (costs no disk and no time)."""

    def make(w: dict[str, Path], tmp: Path) -> None:
        with (tmp / name).open("wb") as f:
            f.truncate(size)

    return make


def _lines_over_the_records_limit(w: dict[str, Path], tmp: Path) -> None:
    (tmp / "many.txt").write_bytes(b"a\n" * (limits.MAX_CORPUS_RECORDS + 1))


def _evil(w: dict[str, Path], tmp: Path) -> None:
    assert not (tmp / "runs").exists() and not (tmp.parent / "evil").exists()


# ----------------------------------------------------------------------------- issue 32: hostile families

HOSTILE_PW = "KbSeCrEt32q7"


def _no_password_anywhere(w: dict[str, Path], tmp: Path) -> None:
    for f in tmp.rglob("*"):
        if f.is_file() and f.name != "plan.toml":  # the user's own plan holds it
            assert HOSTILE_PW.encode() not in f.read_bytes(), f


def _write(name: str, data: bytes | str) -> Callable[[dict[str, Path], Path], None]:
    def make(w: dict[str, Path], tmp: Path) -> None:
        (tmp / name).write_bytes(data.encode() if isinstance(data, str) else data)

    return make


def _manifest(text: str) -> Callable[[dict[str, Path], Path], None]:
    def make(w: dict[str, Path], tmp: Path) -> None:
        (copy_run(w, tmp) / "manifest.json").write_text(text)

    return make


def _copy_unchanged_but_manifest(w: dict[str, Path], tmp: Path) -> None:
    assert csv_bytes(tmp / "copy") == csv_bytes(w["run"])
    assert not (tmp / "copy" / ".kbench.lock").exists()


def _short_password_left_results(w: dict[str, Path], tmp: Path) -> None:
    """``sasl.password = "json"``: redacted under its key, the corpus ``json`` kept everywhere."""
    m = json.loads((tmp / "out" / "manifest.json").read_text())
    assert m["plan"]["client"]["sasl.password"] == "<redacted>"
    text = (tmp / "out" / "manifest.json").read_text()
    assert text.count("<redacted>") == json.dumps(m).count("<redacted>")
    assert "json" in {r["corpus"] for r in csv.DictReader((tmp / "out" / "C.csv").open())}
    rest = dict(m, plan=dict(m["plan"], client=None), client_properties=None, argv=None)
    assert "<redacted>" not in json.dumps(rest)


def _symlinked_c(w: dict[str, Path], tmp: Path) -> None:
    _make_interrupted(w, tmp)
    c = tmp / "copy" / "C.csv"
    outside = tmp / "outside.csv"
    outside.write_bytes(c.read_bytes())
    c.unlink()
    c.symlink_to(outside)


def _outside_untouched(w: dict[str, Path], tmp: Path) -> None:
    assert (tmp / "outside.csv").read_text().count("\n") == 2
    assert (tmp / "copy" / "C.csv").is_symlink()


def _segments_in_run(w: dict[str, Path], tmp: Path) -> None:
    c = copy_run(w, tmp)
    p = subprocess.run(
        [sys.executable, "-m", "kbench", "sim", "--segments", str(c), "--corpus-size", "20000"],
        env={**os.environ, "PYTHONPATH": KBENCH_PATH},
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert p.returncode == 0, p.stderr  # the first time adds new files beside the run's
    (tmp / "first").write_bytes(next(c.glob("kbench-sim-*/*.log")).read_bytes())


def _segments_kept(w: dict[str, Path], tmp: Path) -> None:
    assert next((tmp / "copy").glob("kbench-sim-*/*.log")).read_bytes() == (tmp / "first").read_bytes()


ADVISE = ["advise", "--rate", "1000", "--partitions", "4"]


CASES: list[Case] = [
    # --- plan bounds: counts, sizes, rates, durations (nothing created)
    plan_case("plan-repetitions-1e12", "repetitions: 1000000000000 is out of range", {"repetitions": "1000000000000"}),
    plan_case("plan-repetitions-0", "at least 1", {"repetitions": "0"}),
    plan_case("plan-repetitions-fraction", "whole number", {"repetitions": "1.5"}),
    plan_case("plan-repetitions-nan", "not a finite number", {"repetitions": "nan"}),
    plan_case("plan-rate-1e300", "at most 10000000", sweep={"rate": "1e300"}),
    plan_case("plan-rate-inf", "rate: inf is not a finite number", sweep={"rate": "inf"}),
    plan_case("plan-rate-nan", "rate: nan is not a finite number", sweep={"rate": "nan"}),
    plan_case("plan-rate-minus-inf", "positive number", sweep={"rate": "-inf"}),
    plan_case("plan-rate-1e-9", "at least 1 is needed", sweep={"rate": "1e-9"}),
    plan_case("plan-duration-nan", "duration_s: nan is not a finite number", {"duration_s": "nan"}),
    plan_case("plan-duration-inf", "duration_s: inf is not a finite number", {"duration_s": "inf"}),
    plan_case("plan-duration-1e-9", "duration_s: 1e-09 is out of range", {"duration_s": "1e-9"}),
    plan_case("plan-duration-1e9", "at most 86400", {"duration_s": "1e9"}),
    plan_case("plan-warmup-nan", "warmup_s: nan", {"warmup_s": "nan", "warmup": "true"}),
    plan_case("plan-steady-skip-inf", "steady_skip_s: inf", {"steady_skip_s": "inf"}),
    plan_case(
        "plan-corpus-size-1e12", "corpus_size: 1000000000000 bytes is out of range", {"corpus_size": "1000000000000"}
    ),
    plan_case("plan-corpus-size-nan", "corpus_size: nan is not a finite number", {"corpus_size": "nan"}),
    plan_case("plan-codec-empty", "codec: empty list", sweep={"codec": "[]"}),
    plan_case("plan-codec-twice", "'lz4' is listed twice", sweep={"codec": '["lz4", "lz4"]'}),
    plan_case("plan-codec-default-level-twice", "listed twice", sweep={"codec": '["zstd", "zstd"]'}),
    plan_case(
        "plan-batch-size-huge", "batch_size: 99999999999999 is out of range", sweep={"batch_size": "99999999999999"}
    ),
    plan_case("plan-batch-size-0", "batch_size: 0 is out of range", sweep={"batch_size": "0"}),
    plan_case("plan-batch-size-twice", "listed twice", sweep={"batch_size": "[16384, 16384]"}),
    plan_case("plan-linger-nan", "linger_ms: nan", sweep={"linger_ms": "nan"}),
    plan_case("plan-linger-huge", "at most 900000", sweep={"linger_ms": "1e9"}),
    plan_case("plan-partitions-0", "partitions: 0 is out of range", sweep={"partitions": "0"}),
    plan_case("plan-partitions-1e6", "at most 4096", sweep={"partitions": "1000000"}),
    plan_case("plan-seed-negative", "seed: -1 is out of range", {"seed": "-1"}),
    plan_case("plan-seed-2-64", "at most 9223372036854775807", {"seed": str(2**64)}),
    plan_case("plan-auto-fraction-nan", "auto_rate_fraction: nan", {"auto_rate_fraction": "nan"}),
    plan_case("plan-auto-fraction-2", "auto_rate_fraction: 2 is out of range", {"auto_rate_fraction": "2"}),
    plan_case("plan-too-long", "above the limit of 604800 s", {"repetitions": "1000", "duration_s": "86400"}),
    plan_case(
        "plan-client-compression",
        "client.compression.type: kbench sets this per cell",
        extra='[client]\n"compression.type" = "zstd"',
    ),
    plan_case("plan-brokers-99", "transport.brokers: 99 is out of range", extra="brokers = 99"),
    plan_case(
        "plan-misr-above-rf", "min_insync_replicas: 2 exceeds replication_factor", extra="min_insync_replicas = 2"
    ),
    plan_case("plan-corpus-dev-zero", "is a character device", sweep={"corpus": '"/dev/zero"'}),
    # --- issue 22: secrets in clear, levels the client refuses
    plan_case(
        "plan-client-misspelled-secret",
        "client.sasl.passwd: librdkafka",
        extra='[client]\n"sasl.passwd" = "hunter22"',
    ),
    Case(
        "plan-corpus-2GiB-sparse-line",
        RUN,
        2,
        "the line at byte 0 is over 1000000000 bytes long",
        plan=plan_text(sweep={"corpus": '"sparse2g"'}),
        setup=_sparse("sparse2g", 2 << 30),
    ),
    plan_case("plan-zstd-13-librdkafka-dry", "zstd:13 is refused by the client", sweep={"codec": '["zstd:13"]'}),
    Case(
        "plan-metrics-url-credentials",
        RUN,
        0,
        "run directory",
        plan=plan_text(extra=f'broker_metrics = ["{METRICS_URL}"]'),
        after=_no_metrics_password,
    ),
    plan_case("plan-corpus-dir", "is a directory", sweep={"corpus": '"/"'}),
    Case(
        "plan-name-traversal",
        ["run", "{plan}", "--gate-sample-s", "0"],
        2,
        "is not a usable run-directory name",
        plan=plan_text({"name": '"../../../tmp/evil"'}),
        after=_evil,
    ),
    # --- plan files
    Case("plan-binary", ["run", "{binary}", "-o", "{out}"], 2, "binary.toml is not UTF-8 text"),
    Case("plan-directory", ["run", "{adir}", "-o", "{out}"], 2, "is a directory; give a .toml file"),
    Case("plan-dev-zero", ["run", "/dev/zero", "-o", "{out}"], 2, "/dev/zero is a character device"),
    Case("plan-fifo", ["run", "{fifo}", "-o", "{out}"], 2, "is a FIFO"),
    Case("plan-missing", ["run", "{tmp}/nope.toml", "-o", "{out}"], 2, "plan file not found"),
    # --- run flags and directories
    Case(
        "run-X-compression",
        [*RUN, "-X", "compression.type=zstd"],
        2,
        "-X compression.type: kbench sets this per cell",
        plan=plan_text(),
    ),
    Case("run-X-batch-size", [*RUN, "-X", "batch.size=1"], 2, "-X batch.size", plan=plan_text()),
    Case("run-X-no-equals", [*RUN, "-X", "acks"], 2, "write -X key=value", plan=plan_text()),
    Case(
        "run-X-misspelled-secret",
        [*RUN, "-X", "sasl.passwd=hunter22"],
        2,
        "has no property 'sasl.passwd'; did you mean sasl.password?",
        plan=plan_text(),
    ),
    Case(
        "run-broker-metrics-credentials",
        [*RUN, "--broker-metrics", METRICS_URL],
        0,
        "run directory",
        plan=plan_text(),
        after=_no_metrics_password,
    ),
    Case("run-seed-negative", [*RUN, "--seed", "-1"], 2, "--seed: -1 is out of range", plan=plan_text()),
    Case("run-seed-huge", [*RUN, "--seed", str(2**64)], 2, "--seed", plan=plan_text()),
    Case("run-gate-sample-nan", [*RUN, "--gate-sample-s", "nan"], 2, "--gate-sample-s: nan", plan=plan_text()),
    Case("run-broker-pid-0", [*RUN, "--broker-pid", "0"], 2, "--broker-pid: 0 is out of range", plan=plan_text()),
    Case("run-o-existing-run", ["run", "{base}", "-o", "{run}"], 2, "directory is not empty", must_not_exist=()),
    Case("run-o-file", ["run", "{base}", "-o", "{afile}"], 2, "exists and is not a directory", must_not_exist=()),
    Case("run-o-under-file", ["run", "{base}", "-o", "{afile}/x"], 2, "is a file, not a directory"),
    Case(
        "run-o-sys", ["run", "{base}", "-o", "/sys/kbench-x"], 2, "cannot create it", must_not_exist=("/sys/kbench-x",)
    ),
    Case("run-resume-file", ["run", "--resume", "{afile}"], 2, "is not a directory"),
    Case("run-resume-missing", ["run", "--resume", "{tmp}/none"], 2, "does not exist", must_not_exist=("{tmp}/none",)),
    Case("run-resume-no-manifest", ["run", "--resume", "{adir}"], 2, "no manifest.json in it"),
    Case("run-transport-bogus", ["run", "{base}", "-o", "{out}", "--transport", "carrier-pigeon"], 2, "invalid choice"),
    # --- resume: the CSVs are the record
    Case(
        "resume-complete",
        ["run", "--resume", "{tmp}/copy"],
        0,
        "already complete; nothing to run, nothing changed",
        setup=lambda w, t: copy_run(w, t) and None,
        after=_complete_untouched,
    ),
    Case(
        "resume-complete-low-nofile",
        ["run", "--resume", "{tmp}/copy"],
        0,
        "already complete",
        setup=lambda w, t: copy_run(w, t) and None,
        after=_complete_untouched,
        nofile=1024,
    ),
    Case(
        "resume-journal-deleted",
        ["run", "--resume", "{tmp}/copy"],
        0,
        "journal rebuilt from the CSVs (2 repetitions)",
        setup=_delete_journal,
        after=_journal_rebuilt,
    ),
    Case(
        "resume-journal-damaged",
        ["run", "--resume", "{tmp}/copy"],
        0,
        "journal rebuilt from the CSVs",
        setup=_damage_journal,
        after=_journal_rebuilt,
    ),
    Case(
        "resume-gate-refuses",
        ["run", "--resume", "{tmp}/copy", "--gate-sample-s", "0"],
        3,
        "open-file limit",
        setup=_make_interrupted,
        after=_still_interrupted,
        nofile=1024,
    ),
    # --- codecs bench flags
    Case(
        "bench-corpus-size-1e12",
        ["codecs", "bench", "--corpus", "json", "--corpus-size", "1000000000000"],
        2,
        "--corpus-size: 1000000000000 bytes is out of range",
    ),
    Case(
        "bench-block-1e30",
        ["codecs", "bench", "--block-sizes", "1" + "0" * 30],
        2,
        "--block-sizes: 1000000000000000000000000000000 is out of range",
    ),
    Case(
        "bench-block-minus-1kib",
        ["codecs", "bench", "--block-sizes", "-1KiB"],
        2,
        "--block-sizes: -1024 is out of range",
    ),
    Case("bench-block-garbage", ["codecs", "bench", "--block-sizes", "16q"], 2, "--block-sizes: bad size '16q'"),
    Case("bench-min-time-nan", ["codecs", "bench", "--min-time", "nan"], 2, "--min-time: nan is not a finite number"),
    Case("bench-min-time-inf", ["codecs", "bench", "--min-time", "inf"], 2, "--min-time: inf"),
    Case("bench-repeats-0", ["codecs", "bench", "--repeats", "0"], 2, "--repeats: 0 is out of range"),
    Case("bench-seed-negative", ["codecs", "bench", "--seed", "-1"], 2, "--seed: -1 is out of range"),
    Case("bench-codecs-empty", ["codecs", "bench", "--codecs", ","], 2, "--codecs is empty"),
    Case(
        "bench-csv-dir",
        ["codecs", "bench", "--corpus-size", "1000", "--csv", "{adir}"],
        2,
        "--csv",
        after=_no_temp_files,
    ),
    Case(
        "bench-csv-proc",
        ["codecs", "bench", "--corpus-size", "1000", "--csv", "/proc/kbench.csv"],
        2,
        "cannot create a file in /proc",
        after=_no_temp_files,
    ),
    Case("bench-corpus-dev-zero", ["codecs", "bench", "--corpus", "/dev/zero"], 2, "is a character device"),
    Case("bench-corpus-fifo", ["codecs", "bench", "--corpus", "{fifo}"], 2, "is a FIFO"),
    Case("bench-corpus-dir", ["codecs", "bench", "--corpus", "{adir}"], 2, "is a directory"),
    Case("bench-corpus-dev-null", ["codecs", "bench", "--corpus", "/dev/null"], 2, "is a character device"),
    # --- sim flags
    Case(
        "sim-batch-size-1e30",
        ["sim", "--batch-size", "1" + "0" * 30],
        2,
        "--batch-size: 1000000000000000000000000000000 is out of range",
    ),
    Case("sim-rate-nan", ["sim", "--rate", "nan"], 2, "--rate: nan is not a finite number"),
    Case("sim-rate-inf", ["sim", "--rate", "inf"], 2, "--rate: inf is not a finite number"),
    Case("sim-rate-1e300", ["sim", "--rate", "1e300"], 2, "at most 10000000"),
    Case("sim-linger-nan", ["sim", "--linger-ms", "nan"], 2, "--linger-ms: nan"),
    Case("sim-partitions-0", ["sim", "--partitions", "0"], 2, "--partitions: 0 is out of range"),
    Case("sim-keys-negative", ["sim", "--keys", "-1"], 2, "--keys: -1 is out of range"),
    Case("sim-corpus-size-1e12", ["sim", "--corpus-size", "1000000000000"], 2, "--corpus-size: 1000000000000 bytes"),
    Case("sim-csv-dir", ["sim", "--corpus-size", "64KiB", "--csv", "{adir}"], 2, "--csv {adir}", after=_no_temp_files),
    Case(
        "sim-o-file", ["sim", "--corpus-size", "64KiB", "-o", "{afile}"], 2, "is not a directory; -o names a directory"
    ),
    Case("sim-corpus-fifo", ["sim", "--corpus", "{fifo}"], 2, "is a FIFO"),
    # --- issue 22: limits on records and memory, not only bytes
    Case(
        "sim-corpus-lenprefixed-1GiB-of-zeros",
        ["sim", "--corpus", "{tmp}/zeros", "--corpus-format", "lenprefixed"],
        2,
        f"more than {limits.MAX_CORPUS_RECORDS} records, above the limit of {limits.MAX_CORPUS_RECORDS} records",
        setup=_sparse("zeros", 1 << 30),
    ),
    Case(
        "sim-corpus-lines-over-the-records-limit",
        ["sim", "--corpus", "{tmp}/many.txt"],
        2,
        f"{limits.MAX_CORPUS_RECORDS + 1} records, above the limit of {limits.MAX_CORPUS_RECORDS} records",
        setup=_lines_over_the_records_limit,
    ),
    Case(
        "sim-corpus-lenprefixed-record-over-kafka",
        ["sim", "--corpus", "{tmp}/big.bin", "--corpus-format", "lenprefixed"],
        2,
        "the record at byte 0 is 4294967295 bytes, above the 1000000000 bytes librdkafka's message.max.bytes allows",
        setup=lambda w, t: (t / "big.bin").write_bytes(b"\xff\xff\xff\xff" + b"x" * 16) and None,
    ),
    # --- issue 22: no command writes over a file of a run directory; a full disk
    Case(
        "sim-csv-over-a-run-csv",
        ["sim", "--corpus-size", "64KiB", "--csv", "{run}/C.csv"],
        2,
        "C.csv: is a file of the run directory",
    ),
    Case(
        "bench-csv-over-a-run-csv",
        ["codecs", "bench", "--corpus-size", "1000", "--csv", "{run}/C.csv"],
        2,
        "kbench never replaces a run's files; choose a new file name",
    ),
    Case(
        "inspect-csv-over-a-run-manifest",
        ["inspect", "{good_log}", "--csv", "{run}/manifest.json"],
        2,
        "manifest.json: is a file of the run directory",
    ),
    Case(
        "bench-csv-new-file-in-a-run",
        [
            "codecs",
            "bench",
            "--corpus-size",
            "1000",
            "--codecs",
            "lz4",
            "--block-sizes",
            "1000",
            "--repeats",
            "1",
            "--min-time",
            "0.01",
            "-o",
            "{tmp}/copy",
        ],
        0,
        "wrote",
        setup=lambda w, t: copy_run(w, t) and None,
        after=_new_file_beside_the_run,
    ),
    Case(
        "run-full-disk",
        ["run", "{base}", "-o", "{disk}/run", "--gate-sample-s", "0"],
        2,
        "the disk of {disk}/run/manifest.json is full (No space left on device); free space there",
        full_disk=True,
        after=_full_disk_left_nothing,
    ),
    # --- issue 22: advise and produce, tracebacks and wrong messages
    Case(
        "advise-corpus-1-byte",
        ["advise", "--rate", "1000", "--partitions", "4", "--corpus", "{tmp}/one.txt"],
        2,
        "less than the 4096 bytes experiment M compresses at its smallest block; give a sample of more records",
        setup=lambda w, t: (t / "one.txt").write_bytes(b"x") and None,
    ),
    Case(
        "advise-corpus-3GiB-sparse",
        ["advise", "--rate", "1000", "--partitions", "4", "--corpus", "{tmp}/sparse"],
        2,
        "above the",  # one record over Kafka's limit, or (on a small machine) a file over the memory limit
        setup=_sparse("sparse", 3 << 30),
    ),
    Case("advise-rate-1e300", ["advise", "--rate", "1e300", "--partitions", "4"], 2, "--rate: 1e+300 is out of range"),
    Case("advise-rate-nan", ["advise", "--rate", "nan", "--partitions", "4"], 2, "--rate: nan is not a finite number"),
    Case(
        "advise-p99-budget-nan",
        ["advise", "--rate", "1000", "--partitions", "4", "--p99-budget-ms", "nan"],
        2,
        "--p99-budget-ms: nan is not a finite number",
    ),
    Case(
        "advise-zstd-22-librdkafka",
        ["advise", "--rate", "1000", "--partitions", "4", "--codec", "zstd:22", "--client", "librdkafka"],
        2,
        "--codec zstd:22: librdkafka",
    ),
    Case(
        "produce-count-0",
        ["produce", "--topic", "t", "--bootstrap", "127.0.0.1:9", "--rate", "100", "--count", "0"],
        2,
        "--count: 0 is out of range",
    ),
    Case(
        "produce-no-rate",
        ["produce", "--topic", "t", "--bootstrap", "127.0.0.1:9", "--count", "10"],
        2,
        "--rate: fixed-rate mode needs a target; give --rate MSGS_PER_S, or --mode saturated",
    ),
    Case(
        "produce-X-misspelled",
        ["produce", "--topic", "t", "--bootstrap", "127.0.0.1:9", "--rate", "9", "--count", "9", "-X", "lingr.ms=5"],
        2,
        "did you mean linger.ms?",
    ),
    # --- inspect
    Case("inspect-dev-null", ["inspect", "/dev/null"], 2, "/dev/null: is a character device"),
    Case("inspect-dev-zero", ["inspect", "/dev/zero"], 2, "/dev/zero: is a character device"),
    Case("inspect-fifo", ["inspect", "{fifo}"], 2, "is a FIFO"),
    Case("inspect-dir-without-logs", ["inspect", "{adir}"], 2, "no .log segment files in it"),
    Case("inspect-missing", ["inspect", "{tmp}/nope.log"], 2, "does not exist"),
    Case("inspect-empty-log", ["inspect", "{empty_log}"], 1, "no batches in"),
    Case("inspect-records-count-2-31", ["inspect", "{count_log}", "--summary-only"], 1, "0 records"),
    Case(
        "inspect-records-count-no-decompress",
        ["inspect", "{count_log}", "--no-decompress"],
        1,
        "exceeds the batch's offset range",
    ),
    Case("inspect-csv-dir", ["inspect", "{good_log}", "--csv", "{adir}"], 2, "--csv {adir}", after=_no_temp_files),
    Case(
        "inspect-csv-proc",
        ["inspect", "{good_log}", "--csv", "/proc/kbench.csv"],
        2,
        "cannot create a file in /proc",
        after=_no_temp_files,
    ),
    Case("inspect-nonutf8-csv", ["inspect", "{nonutf8_dir}", "--csv", "{tmp}/out.csv"], 0, "wrote", after=_nonutf8_csv),
    # --- report
    Case(
        "report-same-dir-twice",
        ["report", "{run}", "{run}", "-o", "{tmp}/rep", "--no-plots"],
        0,
        "wrote",
        after=_twice_is_once,
    ),
    Case(
        "report-different-plans", ["report", "{run}", "{other}", "-o", "{out}", "--no-plots"], 2, "ran different plans"
    ),
    Case(
        "report-copy-of-a-run",
        ["report", "{run}", "{tmp}/copy", "-o", "{out}", "--no-plots"],
        2,
        "hold the same run",
        setup=lambda w, t: copy_run(w, t) and None,
    ),
    Case(
        "report-banana",
        ["report", "{tmp}/copy", "-o", "{tmp}/rep", "--no-plots", "--verify"],
        0,
        "verified",
        setup=_banana,
        after=_banana_row_only,
    ),
    Case(
        "report-cut-inside-quotes",
        ["report", "{tmp}/copy", "-o", "{tmp}/rep", "--no-plots", "--verify"],
        0,
        "verified",
        setup=_cut_quoted,
    ),
    Case(
        "report-user-file",
        ["report", "{run}", "-o", "{tmp}/rep", "--no-plots"],
        2,
        "was not written by kbench report",
        setup=_user_report,
        after=_user_report_kept,
    ),
    Case("report-o-file", ["report", "{run}", "-o", "{afile}", "--no-plots"], 2, "exists and is not a directory"),
    Case("report-nonutf8-run", ["report", "{nonutf8_run}", "-o", "{tmp}/rep", "--no-plots"], 0, "wrote"),
    Case("report-not-a-run", ["report", "{adir}", "-o", "{out}", "--no-plots"], 2, "no manifest.json"),
    # --- reports that would accept nonsense
    Case(
        "report-mixed-schema",
        ["report", "{tmp}/copy", "-o", "{out}", "--no-plots"],
        2,
        "C.csv: row 3 has 5 fields, the header 31: rows of another schema were appended to this file; "
        "restore the run's own C.csv",
        setup=_mixed_schema,
        after=_foreign_header_untouched,
    ),
    Case(
        "report-foreign-csv",
        ["report", "{tmp}/copy", "-o", "{out}", "--no-plots"],
        2,
        "C.csv: no column rep, which every kbench C.csv has; it was written by another command: "
        "restore the run's own C.csv, or move this file out of the run directory",
        setup=_foreign_csv,
        after=_foreign_header_untouched,
    ),
    Case(
        "bench-medians-within-their-ranges",
        ["codecs", "bench", "--corpus", "json", "--corpus-size", "300000", "--codecs", "zstd:19,gzip:9,lz4"]
        + ["--block-sizes", "64000", "--repeats", "3", "--min-time", "0.02", "--csv", "{tmp}/bench.csv"],
        0,
        "wrote {tmp}/bench.csv",
        output=_medians_within_their_ranges,
    ),
    Case(
        "report-unknown-status",
        ["report", "{tmp}/copy", "-o", "{out}", "--no-plots"],
        2,
        "has status 'MAYBE', which kbench never writes",
        setup=_set_first("status", "MAYBE"),
    ),
    Case(
        "report-duplicated-row",
        ["report", "{tmp}/copy", "-o", "{out}", "--no-plots"],
        2,
        "repeats row 1 (same cell_id, rep, attempt)",
        setup=_duplicate_row,
    ),
    Case(
        "report-ratio-inf",
        ["report", "{tmp}/copy", "-o", "{tmp}/rep", "--no-plots", "--verify"],
        0,
        "wrote",
        setup=_set_first("ratio", "inf"),
        after=_excluded_listed("ratio: 'inf' is not a finite number in an OK row"),
    ),
    Case(
        "report-ratio-nan",
        ["report", "{tmp}/copy", "-o", "{tmp}/rep", "--no-plots", "--verify"],
        0,
        "wrote",
        setup=_set_first("ratio", "nan"),
        after=_excluded_listed("ratio: 'nan' is not a finite number in an OK row"),
    ),
    Case(
        "report-ratio-negative",
        ["report", "{tmp}/copy", "-o", "{tmp}/rep", "--no-plots", "--verify"],
        0,
        "wrote",
        setup=_set_first("ratio", "-1"),
        after=_excluded_listed("ratio: -1 is negative in an OK row"),
    ),
    Case(
        "report-two-transports",
        ["report", "{tmp}/copy", "{tmp}/other-kind", "-o", "{out}", "--no-plots"],
        2,
        "a figure pooled over them would mix measurements of different kinds",
        setup=_other_transport,
    ),
    Case(
        "resume-foreign-header",
        ["run", "--resume", "{tmp}/copy", "--gate-sample-s", "0"],
        2,
        "its header is not this kbench's C.csv header",
        setup=_foreign_header,
        after=_foreign_header_untouched,
        must_not_exist=(),
    ),
    # --- issue 32: secrets in every address form
    Case(
        "produce-bootstrap-sasl-url-password",
        [
            "produce",
            "--bootstrap",
            f"SASL_SSL://user:{HOSTILE_PW}@127.0.0.1:9",
            "--topic",
            "t",
            "--mode",
            "saturated",
            "--count",
            "1",
        ],
        2,
        "SASL_SSL://<redacted>@127.0.0.1:9' holds credentials",
        after=_no_password_anywhere,
    ),
    Case(
        "run-bootstrap-userinfo-password",
        [*RUN, "--transport", "bootstrap", "--bootstrap", f"user:{HOSTILE_PW}@host:9"],
        2,
        "--bootstrap: '<redacted>@host:9' holds credentials",
        plan=plan_text(),
        after=_no_password_anywhere,
    ),
    Case("run-bootstrap-empty", [*RUN, "--bootstrap", ""], 2, "--bootstrap: empty", plan=plan_text()),
    Case("run-bootstrap-no-port", [*RUN, "--bootstrap", "broker-1"], 2, "is not host:port", plan=plan_text()),
    Case(
        "plan-bootstrap-password",
        RUN,
        2,
        "transport.bootstrap: '<redacted>@h:9' holds credentials",
        plan=plan_text().replace('kind = "dry"', f'kind = "bootstrap"\nbootstrap = "u:{HOSTILE_PW}@h:9"'),
        after=_no_password_anywhere,
    ),
    Case(
        "plan-short-password-keeps-results",
        RUN,
        0,
        "run directory",
        plan=plan_text(extra='[client]\n"sasl.password" = "json"\n"sasl.username" = "bob"'),
        after=_short_password_left_results,
    ),
    # --- issue 32: URLs that are not http(s) endpoints
    Case("run-metrics-no-port", [*RUN, "--broker-metrics", "broker-1:metrics"], 2, "numeric port", plan=plan_text()),
    Case(
        "run-metrics-data-url",
        [*RUN, "--broker-metrics", "data:text/plain,x"],
        2,
        "not an http(s) URL",
        plan=plan_text(),
    ),
    Case(
        "run-metrics-javascript",
        [*RUN, "--broker-metrics", "javascript:alert(1)"],
        2,
        "not an http(s) URL",
        plan=plan_text(),
    ),
    plan_case("plan-metrics-ftp", "not an http(s) URL", extra='broker_metrics = ["ftp://h/x"]'),
    # the gate's own --broker-metrics (an input error that is also a MetricsError: exit 2, one line)
    Case("gate-metrics-javascript", ["gate", "--broker-metrics", "javascript:alert(1)"], 2, "not an http(s) URL"),
    Case("gate-metrics-no-port", ["gate", "--broker-metrics", "broker-1:metrics"], 2, "numeric port"),
    # --- issue 32: parsers: nesting, huge numbers, wrong shapes (one line each)
    Case("plan-deep-arrays", RUN, 2, "nested too deep", plan="a = " + "[" * 5000 + "]" * 5000 + "\n"),
    Case("plan-deep-tables", RUN, 2, "nested too deep", plan="a = " + "{b=" * 3000 + "1" + "}" * 3000 + "\n"),
    Case("plan-nested-40", RUN, 2, "nested more than 32 levels", plan="a = " + "[" * 40 + "]" * 40 + "\n"),
    plan_case(
        "plan-repetitions-401-digits",
        "repetitions: a 401-digit number is out of range",
        {"repetitions": "1" + "0" * 400},
    ),
    plan_case("plan-huge-file", "over the limit of 1048576 for a plan", extra="# " + "x" * (1 << 20)),
    Case(
        "resume-manifest-list",
        ["run", "--resume", "{tmp}/copy", "--gate-sample-s", "0"],
        2,
        "its top level is a list, not an object",
        setup=_manifest("[1, 2]"),
        after=_copy_unchanged_but_manifest,
        must_not_exist=(),
    ),
    Case(
        "resume-manifest-deep",
        ["run", "--resume", "{tmp}/copy", "--gate-sample-s", "0"],
        2,
        "nested too deep to parse",
        setup=_manifest("[" * 100_000 + "]" * 100_000),
        after=_copy_unchanged_but_manifest,
        must_not_exist=(),
    ),
    Case(
        "report-manifest-deep",
        ["report", "{tmp}/copy", "-o", "{out}", "--no-plots"],
        2,
        "nested too deep to parse",
        setup=_manifest("[" * 100_000 + "]" * 100_000),
    ),
    Case("advise-linger-1e308", [*ADVISE, "--linger-ms", "1e308"], 2, "--linger-ms: 1e+308 is out of range"),
    Case("advise-linger-nan", [*ADVISE, "--linger-ms", "nan"], 2, "--linger-ms: nan is not a finite number"),
    Case("advise-top-minus-1", [*ADVISE, "--top", "-1"], 2, "--top: -1 is out of range"),
    Case("advise-seed-2-64", [*ADVISE, "--seed", str(2**64)], 2, "--seed: 18446744073709551616 is out of range"),
    Case("advise-bootstrap-empty", [*ADVISE, "--verify", "--bootstrap", ""], 2, "--bootstrap: empty"),
    Case("advise-costs-dev-zero", [*ADVISE, "--costs", "/dev/zero"], 2, "cost file /dev/zero is a character device"),
    Case(
        "advise-costs-nan",
        [*ADVISE, "--costs", "{tmp}/c.toml"],
        2,
        "core_hour must be a number",
        setup=_write("c.toml", "core_hour = nan\n"),
    ),
    Case(
        "advise-costs-cross-zone-2",
        [*ADVISE, "--costs", "{tmp}/c.toml"],
        2,
        "cross_zone_produce must be a number from 0 to 1",
        setup=_write("c.toml", "cross_zone_produce = 2\n"),
    ),
    Case(
        "advise-costs-2MiB",
        [*ADVISE, "--costs", "{tmp}/c.toml"],
        2,
        "over the limit of 1048576 for a cost file",
        setup=_write("c.toml", "# " + "x" * (2 << 20)),
    ),
    Case(
        "advise-costs-deep",
        [*ADVISE, "--costs", "{tmp}/c.toml"],
        2,
        "nested too deep",
        setup=_write("c.toml", "a = " + "[" * 5000 + "]" * 5000),
    ),
    Case("bench-block-1", ["codecs", "bench", "--block-sizes", "1"], 2, "--block-sizes: 1 is out of range"),
    # --- issue 32: bounds checked at load, before anything is expanded or written
    Case(
        "plans-million-cells",
        ["plans", "{plan}"],
        2,
        "plan: 2000000 cells, above the limit of 10000 cells",
        plan=plan_text(
            {"duration_s": "0.01"},
            {"batch_size": str(list(range(1000, 2000))), "linger_ms": str(list(range(1000)))},
        ),
    ),
    plan_case("plan-name-list", "name: ['a', 'b'] is not a usable run-directory name", {"name": '["a", "b"]'}),
    plan_case("plan-sweep-name-fullwidth", "must be ASCII letters, digits", sweep={"name": '"ｃｏｄｅｃｓ"'}),
    plan_case("plan-sweep-name-300", "300 characters, over 200", sweep={"name": '"' + "s" * 300 + '"'}),
    plan_case("plan-sweep-name-list", "is not a string", sweep={"name": '["a"]'}),
    plan_case(
        "plan-client-array", "client.acks: a list is not a client property value", extra='[client]\nacks = ["all"]'
    ),
    plan_case("plan-client-table", "client.x: a dict is not a client property value", extra="[client]\nx = { y = 1 }"),
    plan_case("plan-retries-1e9", "retries: 1000000000 is out of range", {"retries": "1000000000"}),
    plan_case(
        "plan-backlog-1e15",
        "backlog_bytes: 1000000000000000 is out of range",
        sweep={"backlog_bytes": "1000000000000000"},
    ),
    # --- issue 32: no symlink followed out of a run directory, no run file replaced
    Case(
        "resume-c-csv-symlink",
        ["run", "--resume", "{tmp}/copy", "--gate-sample-s", "0"],
        2,
        "C.csv is a symbolic link",
        setup=_symlinked_c,
        after=_outside_untouched,
        must_not_exist=(),
    ),
    Case(
        "sim-segments-run-twice",
        ["sim", "--segments", "{tmp}/copy", "--corpus-size", "20000"],
        2,
        "would be replaced; give a new directory",
        setup=_segments_in_run,
        after=_segments_kept,
        must_not_exist=(),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case: Case, world: dict[str, Path], tmp_path: Path) -> None:
    names = {k: str(v) for k, v in world.items()} | {"tmp": str(tmp_path), "out": str(tmp_path / "out")}
    names["disk"] = str(tmp_path / "disk")
    disk = None
    if case.full_disk:
        (tmp_path / "disk").mkdir()
        disk = (tmp_path / "disk", tmp_path / "listing")
    if case.plan is not None:
        (tmp_path / "plan.toml").write_text(case.plan)
        names["plan"] = str(tmp_path / "plan.toml")
    if case.setup is not None:
        case.setup(world, tmp_path)
    before = {k: tree_hash(world[k]) for k in ("run", "other", "adir")}
    argv = [a.format(**names) for a in case.argv]
    p = kbench(argv, tmp_path, nofile=case.nofile, full_disk=disk)
    out = p.stdout + p.stderr
    assert "Traceback" not in out, out
    assert p.returncode == case.rc, out
    assert case.fragment.format(**names) in out, out
    if case.rc in (2, 3):  # a refusal is one line naming the problem (1: inspect's per-batch problems)
        lines = [line for line in p.stderr.splitlines() if line.startswith("kbench:")]
        assert len(lines) == 1, p.stderr
    for k, h in before.items():
        assert tree_hash(world[k]) == h, f"{k} changed"
    for path in case.must_not_exist:
        if case.rc != 0:
            assert not Path(path.format(**names)).exists(), path
    if case.after is not None:
        case.after(world, tmp_path)
    if case.output is not None:
        case.output(p.stdout)


def test_catalogue_covers_every_kind() -> None:
    assert len(CASES) >= 60
    kinds = {c.id.split("-")[0] for c in CASES}
    assert {"plan", "run", "resume", "bench", "sim", "inspect", "report"} <= kinds


# ----------------------------------------------------------------------------- one writer per run directory


def _two_writers(argv: list[str], tmp: Path) -> list[tuple[int, str]]:
    """Two forked ``kbench argv`` released together (one pipe, two bytes): their statuses and output."""
    r, w = os.pipe()
    outs = [(tmp / f"out{i}").open("wb") for i in range(2)]
    pids = []
    for f in outs:
        pid = os.fork()
        if pid == 0:
            _child_cli(argv, tmp, f.fileno(), f.fileno(), go=r)
        pids.append(pid)
    os.write(w, b"gg")  # both start together
    os.close(w)
    os.close(r)
    codes = [_wait(p, TIMEOUT) for p in pids]
    for f in outs:
        f.close()
    return [(c, (tmp / f"out{i}").read_text(errors="replace")) for i, c in enumerate(codes)]


def _keys(run_dir: Path) -> list[tuple[str, str]]:
    return [(r["cell_id"], r["rep"]) for r in csv.DictReader((run_dir / "C.csv").open())]


@pytest.mark.parametrize("mode", ["new", "resume"])
def test_two_writers_one_run_directory(mode: str, world: dict[str, Path], tmp_path: Path) -> None:
    """Two ``run -o X`` (or two ``run --resume X``) started together, 50 times: never a duplicated
    row; one runs, the other refuses naming the holder (or, for a new directory that the first has
    already filled, refuses it as not empty; for a resume, finds it complete)."""
    plan = tmp_path / "plan.toml"
    plan.write_text(plan_text({"repetitions": "3"}))
    outcomes: set[str] = set()
    for i in range(50):
        d = tmp_path / f"t{i}"
        d.mkdir()
        target = d / "X"
        if mode == "new":
            argv = ["run", str(plan), "-o", str(target), "--gate-sample-s", "0", "--json"]
        else:
            _make_interrupted(world, d)
            target = d / "copy"
            argv = ["run", "--resume", str(target), "--gate-sample-s", "0", "--json"]
        results = _two_writers(argv, d)
        texts = "\n".join(t for _, t in results)
        assert "Traceback" not in texts, texts
        codes = sorted(c for c, _ in results)
        assert (target / "C.csv").exists(), f"try {i}: no C.csv; exit codes {codes}: {texts}"
        keys = _keys(target)
        assert len(keys) == len(set(keys)), f"duplicated rows in try {i}: {texts}"
        want = 6 if mode == "new" else 2
        assert len(keys) == want, texts
        assert not (target / ".kbench.lock").exists()
        if codes == [0, 2]:
            refusal = next(t for c, t in results if c == 2)
            assert refusal.count("kbench:") == 1, refusal
            assert re.search(r"in use by kbench pid \d+|directory is not empty", refusal), refusal
            outcomes.add("busy" if "in use" in refusal else "not-empty")
        else:
            assert mode == "resume" and codes == [0, 0], texts  # the second found the run complete
            assert 'already_complete": true' in texts, texts
            outcomes.add("complete")
    assert outcomes, "no try ran"


# ----------------------------------------------------------------------------- network reads (metrics endpoints)


class _Server:
    """A loopback TCP server answering each connection with ``answer(conn, request)`` in a thread."""

    def __init__(self, answer: Callable[[socket.socket, bytes], None]) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.requests: list[bytes] = []
        self.answer = answer
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                req = b""
                while b"\r\n\r\n" not in req:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    req += chunk
                self.requests.append(req)
                try:
                    self.answer(conn, req)
                except OSError:
                    pass

    def close(self) -> None:
        self.sock.close()


EXPOSITION = b"# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 1.5\n"


def _ok(conn: socket.socket, req: bytes) -> None:
    conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(EXPOSITION), EXPOSITION))


def test_credentials_never_follow_a_redirect_to_another_origin() -> None:
    from kbench.kafka import metrics

    other = _Server(_ok)
    first = _Server(
        lambda c, r: c.sendall(
            b"HTTP/1.0 302 Found\r\nLocation: http://127.0.0.1:%d/metrics\r\nContent-Length: 0\r\n\r\n" % other.port
        )
    )
    try:
        got = metrics.scrape(f"http://admin:KbSeCrEt31q@127.0.0.1:{first.port}/metrics", timeout=10)
        assert got.cpu_s == 1.5  # the redirect was followed ...
        assert b"authorization" in first.requests[0].lower()  # ... the credentials went to their origin ...
        assert b"authorization" not in other.requests[0].lower(), other.requests[0]  # ... and nowhere else
    finally:
        first.close()
        other.close()


def test_a_slow_metrics_server_ends_at_the_deadline() -> None:
    """Headers, then one byte a second: the read ends at the overall deadline, which the error states."""
    import time

    from kbench.kafka import metrics

    def trickle(conn: socket.socket, req: bytes) -> None:
        conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 100000\r\n\r\n")
        for _ in range(60):
            conn.sendall(b"#")
            time.sleep(1)

    def trickle_headers(conn: socket.socket, req: bytes) -> None:
        for b in b"HTTP/1.0 200 OK\r\nX-Slow: " + b"a" * 100:
            conn.sendall(bytes([b]))
            time.sleep(1)

    for answer in (trickle, trickle_headers):
        s = _Server(answer)
        try:
            t0 = time.monotonic()
            with pytest.raises(metrics.MetricsError, match=r"within the 2 s deadline"):
                metrics.scrape(f"http://127.0.0.1:{s.port}/metrics", timeout=2)
            assert time.monotonic() - t0 < 4
        finally:
            s.close()


def test_a_reason_phrase_is_printed_without_control_characters_and_short() -> None:
    from kbench.kafka import metrics

    reason = b"\x1b[31mred\x1b]0;title\x07" + b"x" * 5000
    s = _Server(lambda c, r: c.sendall(b"HTTP/1.0 500 " + reason + b"\r\nContent-Length: 0\r\n\r\n"))
    try:
        with pytest.raises(metrics.MetricsError) as ei:
            metrics.scrape(f"http://127.0.0.1:{s.port}/metrics", timeout=5)
        msg = str(ei.value)
        assert "HTTP 500" in msg and "\x1b" not in msg and "\x07" not in msg and len(msg) < 400, msg
    finally:
        s.close()


# ----------------------------------------------------------------------------- memory bounded by a constant


def _peak_rss_mb(argv: list[str], cwd: Path) -> tuple[int, str, float]:
    """Exit status, output and peak RSS (MB) of ``kbench argv`` run by a fresh interpreter."""
    probe = (
        "import resource, subprocess, sys; "
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True, errors='replace'); "
        "print(p.returncode); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024); "
        "print(p.stdout[-2000:] + p.stderr[-2000:])"
    )
    p = subprocess.run(
        [sys.executable, "-c", probe, sys.executable, "-m", "kbench", *argv],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": KBENCH_PATH},
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    rc, rss, out = p.stdout.split("\n", 2)
    return int(rc), out, float(rss)


def test_inspect_memory_does_not_grow_with_batches(tmp_path: Path) -> None:
    """40 MB of 26-byte legacy messages peaked at 1.47 GB RSS before inspect streamed its rows."""
    msg = struct.pack(">qi", 0, 14) + bytes(4) + b"\0\0" + struct.pack(">ii", -1, 0)
    (tmp_path / "legacy.log").write_bytes(msg * (12_000_000 // len(msg)))
    rc, out, rss = _peak_rss_mb(["inspect", "legacy.log", "--summary-only", "--csv", "rows.csv"], tmp_path)
    assert rc == 1 and "legacy 461538" in out and "Traceback" not in out, out
    assert rss < 150, f"{rss:.0f} MB"
    assert sum(1 for _ in (tmp_path / "rows.csv").open()) == 461538 + 1


def test_inspect_never_reads_a_batch_claiming_gigabytes(tmp_path: Path) -> None:
    with (tmp_path / "sparse.log").open("wb") as f:
        f.write(struct.pack(">qi", 0, 2**31 - 13) + b"\0\0\0\0\x02")
        f.truncate(2**31 + 100)
    rc, out, rss = _peak_rss_mb(["inspect", "sparse.log", "--summary-only"], tmp_path)
    assert rc == 1 and "Traceback" not in out, out
    assert rss < 150, f"{rss:.0f} MB"
    rows = segment.scan_file(tmp_path / "sparse.log")
    assert rows[0].status == "corrupt" and "skipped unread" in rows[0].message


def test_streamed_scan_equals_one_scan(tmp_path: Path) -> None:
    """Rows read SCAN_ROWS at a time (each call resuming at the next batch) are the rows of one scan."""
    recs = [Record(value=b"v" * (i % 50), timestamp=i) for i in range(3)]
    batches = [batch.encode(recs, "lz4" if i % 2 else "none") for i in range(segment.SCAN_ROWS * 2 + 17)]
    f = segment.write_segment(tmp_path / "s.log", batches)
    whole, nxt = _native.segment_scan_file(str(f))
    assert nxt is None
    streamed = [r for r in segment.iter_file(f)]
    assert [(r.position, r.stored_bytes, r.status) for r in streamed] == [(t[0], t[4], t[13]) for t in whole]
    assert segment.summarize(streamed) == segment.summarize(segment.scan_bytes(f.read_bytes(), str(f)))


def test_cell_count_is_the_expansion_length() -> None:
    from kbench.engine import plan as plan_mod
    from kbench.engine.cell import cell_count

    for name in plan_mod.builtin_plans():
        p = plan_mod.load(name)
        assert cell_count(p.sweeps) == len(plan_mod.expand(p)), name


# ----------------------------------------------------------------------------- signals


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_end_a_run_like_ctrl_c(sig: str, tmp_path: Path) -> None:
    import signal
    import time

    plan = tmp_path / "plan.toml"
    plan.write_text(plan_text({"repetitions": "20", "duration_s": "0.5"}))
    out = tmp_path / "run"
    p = subprocess.Popen(
        [sys.executable, "-m", "kbench", "run", str(plan), "-o", str(out), "--gate-sample-s", "0"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": KBENCH_PATH},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + TIMEOUT
    while not (out / "done.jsonl").exists():  # the run is under way: a repetition is journaled
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()
        time.sleep(0.05)
    p.send_signal(getattr(signal, sig))
    _, err = p.communicate(timeout=TIMEOUT)
    assert p.returncode == 130, err
    assert "Traceback" not in err and f"continue with: kbench run --resume {out}" in err, err
    assert json.loads((out / "manifest.json").read_text())["state"] == "interrupted"
    assert not (out / ".kbench.lock").exists()


# ----------------------------------------------------------------------------- outputs safe for their readers

HOSTILE_CORPORA = {
    "formula": '=HYPERLINK("http://x","y")',
    "tex": "$\\undefinedmacro{x$",
    "html": "<img src=x onerror=alert(1)>",
    "slash": "orders/v2",
    "esc": "bad\x1b[31mred",
}


def test_report_and_csvs_are_safe_for_their_readers(tmp_path: Path) -> None:
    """Corpus names a spreadsheet would evaluate, that are invalid TeX, HTML, a path, a terminal
    escape; a --label with a newline and a heading: the run, report (with plots) and --verify-only
    pass, report.md holds no markup from them, C.csv quotes the formula, kbench reads it back."""
    names = list(HOSTILE_CORPORA.values())
    corpora = "\n".join(f'[corpora.{json.dumps(n)}]\nsource = "json"' for n in names)
    plan = tmp_path / "plan.toml"
    text = plan_text(sweep={"corpus": json.dumps(names), "codec": '["none"]'}) + corpora + "\n"
    plan.write_text(text)
    label = "lab\n# injected <script>alert(1)</script> [x](javascript:alert(1))"
    run = kbench(["run", str(plan), "-o", str(tmp_path / "run"), "--gate-sample-s", "0", "--label", label], tmp_path)
    assert run.returncode == 0, run.stderr
    assert "\x1b" not in run.stdout + run.stderr
    rows = list(csv.DictReader((tmp_path / "run" / "C.csv").open()))
    assert "'" + HOSTILE_CORPORA["formula"] in {r["corpus"] for r in rows}  # quoted as OWASP says
    assert all(not r["corpus"].startswith("=") for r in rows)
    rep = kbench(["report", str(tmp_path / "run"), "-o", str(tmp_path / "rep"), "--verify"], tmp_path)
    assert rep.returncode == 0, rep.stderr
    md = (tmp_path / "rep" / "report.md").read_text()
    # escaped, so they render as text: no raw tag, no link target
    assert not re.search(r"(?<!\\)<(script|img)|(?<!\\)\]\(javascript", md), md
    assert "\\<script>" in md and "\\<img" in md
    assert "\n# injected" not in md
    assert HOSTILE_CORPORA["formula"] in md and "'=HYPERLINK" not in md  # read back without its quote
    assert list((tmp_path / "rep" / "plots").glob("*.png"))
    again = kbench(["report", str(tmp_path / "run"), "-o", str(tmp_path / "rep"), "--verify-only"], tmp_path)
    assert again.returncode == 0, again.stderr
    html = tmp_path / "rep" / "report.html"
    html.write_text(html.read_text().replace("<td>1</td>", "<td>2</td>", 1))
    edited = kbench(["report", str(tmp_path / "run"), "-o", str(tmp_path / "rep"), "--verify-only"], tmp_path)
    assert edited.returncode == 1 and "report.html: reads" in edited.stderr, edited.stderr


def test_csv_cells_that_a_spreadsheet_would_evaluate_are_quoted_text_only() -> None:
    from kbench.model.csvcell import read_cell, safe_cell

    for text in ["=1+1", "+cmd", "-cmd|' /C calc'!A0", "@SUM(A1)", "\tx", "\rx", "'quoted"]:
        assert str(safe_cell(text)).startswith("'") and read_cell(str(safe_cell(text))) == text
    for number in ["-3.2", "-1e-05", "+4", "12", "0.5"]:
        assert safe_cell(number) == number


def test_kbench_admin_client_takes_only_librdkafka_properties() -> None:
    """A Java plan's ``sasl.jaas.config`` is the Java client's; kbench's own admin client is
    librdkafka, which refuses the name: it is never handed to it (every repetition failed before)."""
    from kbench.engine.plan import TransportDef
    from kbench.engine.transports.kafka import KafkaTransport

    t = KafkaTransport(TransportDef(kind="bootstrap", bootstrap="127.0.0.1:9"))
    t.bootstrap = "127.0.0.1:9"
    props = t._admin_props(
        {
            "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required;",
            "security.protocol": "SASL_SSL",
        }
    )
    assert props == {"security.protocol": "SASL_SSL", "bootstrap.servers": "127.0.0.1:9"}
