"""SIGKILL ``kbench run`` mid-plan, resume it: every cell x repetition exactly once, no truncated row."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from engine_fakes import engine_plan, grep_secrets, write_plan

from kbench.engine import plan as plan_mod
from kbench.engine import store
from kbench.experiments import registry

# The plan says local; the first run overrides it with --transport dry, which the resume must reuse.
DRY_PLAN = engine_plan(transport="local", duration_s=0.25, warmup_s=0.05)


def kbench(*args: str) -> list[str]:
    return [sys.executable, "-m", "kbench", "run", *args, "--gate-sample-s", "0", "--force"]


def wait_for_journal(path: Path, lines: int, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= lines:
            return
        assert proc.poll() is None, "kbench run ended before it could be killed"
        time.sleep(0.02)  # polling an observable condition, not a fixed wait
    raise AssertionError(f"{path} never reached {lines} lines")


def test_sigkill_then_resume(tmp_path: Path) -> None:
    plan_file = write_plan(tmp_path, DRY_PLAN)
    run = tmp_path / "run"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    p = subprocess.Popen(
        kbench(str(plan_file), "-o", str(run), "--transport", "dry", "-X", "sasl.password=hunter2-SECRET"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        wait_for_journal(run / store.JOURNAL, 4, p)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
    assert p.returncode == -signal.SIGKILL
    done_before = store.read_done(run)
    assert 4 <= len(done_before) < 18
    m = json.loads((run / "manifest.json").read_text())
    assert m["state"] == "running"

    r = subprocess.run(kbench("--resume", str(run)), capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "== A:" in r.stdout and "== D:" in r.stdout

    plan = plan_mod.load(str(plan_file))
    cells = plan_mod.expand(plan)
    for exp in ("A", "B", "C", "D"):
        path = run / f"{exp}.csv"
        data = path.read_bytes()
        assert data.endswith(b"\n")
        rows = list(csv.reader(data.decode().splitlines()))
        header, body = rows[0], rows[1:]
        assert header == list(registry.columns(exp))
        assert all(len(x) == len(header) for x in body), "a truncated row survived"
        key_cols = ["cell_id", "rep"] + (["role"] if exp == "D" else [])
        idx = [header.index(c) for c in key_cols]
        keys = [tuple(x[i] for i in idx) for x in body]
        assert len(keys) == len(set(keys)), f"duplicate rows in {exp}.csv"
        want = {(c.cell_id, str(rep)) for c in cells if exp in c.experiments for rep in range(1, plan.repetitions + 1)}
        assert {k[:2] for k in keys} == want
    m = json.loads((run / "manifest.json").read_text())
    assert m["state"] == "complete" and len(m["resumes"]) == 1
    assert m["transport"]["kind"] == "dry" and m["overrides"] == {"kind": "dry"}
    assert grep_secrets(run) == []


def test_ctrl_c_leaves_an_interrupted_run_that_resumes(tmp_path: Path) -> None:
    plan_file = write_plan(tmp_path, DRY_PLAN)
    run = tmp_path / "run"
    p = subprocess.Popen(
        kbench(str(plan_file), "-o", str(run), "--transport", "dry"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_journal(run / store.JOURNAL, 3, p)  # type: ignore[arg-type]
    finally:
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
    assert p.returncode == 130
    assert f"kbench run --resume {run}" in err
    assert json.loads((run / "manifest.json").read_text())["state"] == "interrupted"
    r = subprocess.run(kbench("--resume", str(run)), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    keys = [(x["cell_id"], x["rep"]) for x in store.read_rows(run / "A.csv")]
    assert len(keys) == len(set(keys)) == 12
