"""Faults mid-cell on a real local Kafka cluster started by ``kbench run`` (issue 12).

- one broker of three killed with SIGKILL while a cell runs: that repetition's rows say
  FAILED with the reason, the run goes on with the next cells, every row written before is
  intact, and the report shows it;
- the broker log directory's disk filling up (a small tmpfs mounted for the test): a clear
  reason in the rows and the printed tables, nothing truncated;
- SIGINT: a clean stop (no broker left running) that ``--resume`` continues, each
  cell x repetition exactly once.

Kept short: saturated producer cells (experiment B: no consumer to wait for) of 2-3 s.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kbenv import KBENCH_PATH

from kbench import _native
from kbench.commands.run import EXIT_SHORT
from kbench.engine import store
from kbench.kafka.cluster_state import pid_alive

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent


def plan(name: str, brokers: int, codecs: str, reps: int, duration: float) -> str:
    return f"""
name = "{name}"
repetitions = {reps}
duration_s = {duration}
min_window_s = 0
warmup = false
corpus_size = 200000
seed = 11

[transport]
kind = "local"
brokers = {brokers}

[client]
"message.timeout.ms" = "4000"
"request.timeout.ms" = "3000"

[[sweep]]
experiments = ["B"]
codec = {codecs}
rate = "saturated"
"""


def start(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "kbench", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # steal injected at 0 %: the statuses must come from the fault, not from this host's hypervisor
        env={**os.environ, "PYTHONPATH": KBENCH_PATH, "KBENCH_INJECT_STEAL_PCT": "0", **(env or {})},
    )


def wait_for(cond, proc: subprocess.Popen[str], what: str, timeout: float = 240.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"kbench run ended (rc {proc.returncode}) before {what}:\n{out}\n{err}")
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"timed out waiting for {what}")


def journal(run: Path) -> list[dict[str, object]]:
    p = run / store.JOURNAL
    if not p.exists():
        return []
    return [json.loads(x) for x in p.read_text().splitlines() if x.endswith("}")]


def manifest(run: Path) -> dict[str, object]:
    try:
        return json.loads((run / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}


def brokers_of(run: Path) -> list[dict[str, object]]:
    t = manifest(run).get("transport")
    return list(t["brokers"]) if isinstance(t, dict) and t.get("brokers") else []


def finish(proc: subprocess.Popen[str], timeout: float = 300.0) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"kbench run did not finish:\n{out}\n{err}") from None
    return proc.returncode, out, err


def test_broker_sigkill_mid_cell(tmp_path: Path) -> None:
    (tmp_path / "p.toml").write_text(plan("kill3", 3, '["none", "lz4"]', 2, 3))
    run = tmp_path / "run"
    proc = start(["run", str(tmp_path / "p.toml"), "-o", str(run), "--force", "--gate-sample-s", "0"])
    wait_for(lambda: len(journal(run)) >= 1 and brokers_of(run), proc, "the first repetition")
    m = manifest(run)
    run_id, bootstrap = m["run_id"], m["transport"]["bootstrap"]  # type: ignore[index]
    done = {(str(j["cell_id"]), int(j["rep"])) for j in journal(run)}

    def running_topic() -> tuple[str, int] | None:
        md = _native.metadata({"bootstrap.servers": bootstrap}, timeout=5.0)
        for name, t in md["topics"].items():
            if not name.startswith(f"kbench-{run_id}-"):
                continue
            cell, rep = name.removeprefix(f"kbench-{run_id}-").rsplit("-r", 1)
            leaders = [p["leader"] for p in t["partitions"] if p["leader"] >= 0]
            if (cell, int(rep)) not in done and leaders:
                return name, leaders[0]
        return None

    topic, leader = wait_for(running_topic, proc, "a running cell's topic")
    before = (run / "B.csv").read_bytes()
    pid = next(int(b["pid"]) for b in brokers_of(run) if int(b["broker_id"]) == leader)
    os.kill(pid, signal.SIGKILL)
    killed = tuple(topic.removeprefix(f"kbench-{run_id}-").rsplit("-r", 1))
    rc, out, err = finish(proc)
    assert rc == EXIT_SHORT, err[-3000:]  # the killed repetition is FAILED (not retried): its cell is short
    after = (run / "B.csv").read_bytes()
    assert after.startswith(before), "a row written before the kill changed"
    rows = store.read_rows(run / "B.csv")
    assert len(rows) == 4 and len({(r["cell_id"], r["rep"]) for r in rows}) == 4
    hit = [r for r in rows if (r["cell_id"], r["rep"]) == killed]
    assert hit and hit[0]["status"].startswith("FAILED"), hit
    assert f"broker {leader} (pid {pid}) died during the run" in hit[0]["reason"], hit
    order = [(str(j["cell_id"]), str(j["rep"])) for j in journal(run)]
    later = order[order.index(killed) + 1 :]  # type: ignore[arg-type]
    assert later, "the run stopped at the failed cell"
    assert any(r["status"] == "OK" for r in rows if (r["cell_id"], r["rep"]) in later), rows
    rep = tmp_path / "rep"
    p = subprocess.run(
        [sys.executable, "-m", "kbench", "report", str(run), "-o", str(rep), "--no-plots"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": KBENCH_PATH},
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    assert "died during the run" in (rep / "report.md").read_text()


@pytest.fixture
def small_fs(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A 4 GiB tmpfs mounted for the test (root only): room for one saturated repetition (the
    producer without per-record headers saturates near 1 GiB in a repetition here)."""
    if os.geteuid() != 0:
        pytest.fail("the full-disk test mounts a tmpfs: run it as root")
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4g", "tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill(mnt: Path) -> Path:
    """Make the filesystem full at once: shrink the tmpfs to what it holds, then write into
    whatever page is left.  (Writing GiBs of filler instead takes seconds, during which the
    repetition under test can finish on a disk that is not yet full.)"""
    filler = mnt / "filler"
    with filler.open("wb", buffering=0) as f:  # unbuffered: close() has nothing left to flush
        for _ in range(100):
            st = os.statvfs(mnt)
            used = (st.f_blocks - st.f_bfree) * st.f_frsize
            # the broker may write between statvfs and remount: the kernel refuses a size below use
            remount = ["mount", "-o", f"remount,size={used}", str(mnt)]
            if subprocess.run(remount, capture_output=True).returncode == 0:
                break
        else:
            pytest.fail(f"could not shrink the tmpfs at {mnt} to its use")
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass
    assert os.statvfs(mnt).f_bavail == 0
    return filler


def test_log_dir_disk_full(tmp_path: Path, small_fs: Path) -> None:
    (tmp_path / "p.toml").write_text(plan("full", 1, '["none", "lz4"]', 1, 3))
    run = tmp_path / "run"  # the run directory is on another disk: it must stay intact
    proc = start(
        ["run", str(tmp_path / "p.toml"), "-o", str(run), "--force", "--gate-sample-s", "0"],
        env={"TMPDIR": str(small_fs)},  # the local cluster's log dirs go there
    )
    wait_for(lambda: len(journal(run)) >= 1, proc, "the first repetition")
    before = (run / "B.csv").read_bytes()
    fill(small_fs)
    rc, out, err = finish(proc)
    assert "Traceback" not in err, err[-3000:]
    after = (run / "B.csv").read_bytes()
    assert after.startswith(before) and after.endswith(b"\n")
    rows = store.read_rows(run / "B.csv")
    assert len(rows) == 2, rows
    assert rows[0]["status"] == "OK", rows[0]
    assert rows[1]["status"].startswith("FAILED"), rows[1]
    assert "is full" in rows[1]["reason"] and "log dir" in rows[1]["reason"], rows[1]
    assert "is full" in out + err  # the printed tables name the reason
    with (run / "B.csv").open() as f:
        assert len(list(csv.DictReader(f))) == 2


def test_sigint_then_resume(tmp_path: Path) -> None:
    (tmp_path / "p.toml").write_text(plan("intr", 1, '["none", "lz4"]', 2, 2))
    run = tmp_path / "run"
    args = ["--force", "--gate-sample-s", "0"]
    proc = start(["run", str(tmp_path / "p.toml"), "-o", str(run), *args])
    wait_for(lambda: len(journal(run)) >= 1, proc, "the first repetition")
    pids = [int(b["pid"]) for b in brokers_of(run)]
    proc.send_signal(signal.SIGINT)
    rc, out, err = finish(proc, 120)
    assert rc == 130, err[-3000:]
    assert "Traceback" not in err
    assert f"continue with: kbench run --resume {run}" in err
    assert manifest(run)["state"] == "interrupted"
    assert pids and not any(pid_alive(p) for p in pids), "a broker outlived the interrupted run"
    before = (run / "B.csv").read_bytes()
    n_before = len(journal(run))
    assert 1 <= n_before < 4
    rc, out, err = finish(start(["run", "--resume", str(run), *args]))
    assert rc == 0, err[-3000:]
    assert (run / "B.csv").read_bytes().startswith(before)
    keys = [(r["cell_id"], r["rep"]) for r in store.read_rows(run / "B.csv")]
    assert len(keys) == 4 and len(set(keys)) == 4
    assert manifest(run)["state"] == "complete"
