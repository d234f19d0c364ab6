"""Drivers on Dask workers (``kbench run --workers``) against a local Kafka broker.

A Dask ``LocalCluster`` of 3 worker processes on 127.0.0.1; kbench starts its own one-broker
Kafka (run the file under ``flock /tmp/kbench-kafka.lock``).
"""

from __future__ import annotations

import base64
import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from engine_fakes import plan_toml, sweep
from kbenv import KBENCH_PATH

from kbench.kafka.drivers import Histogram

pytestmark = [pytest.mark.kafka, pytest.mark.slow, pytest.mark.dask]
distributed = pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parent.parent


def dask_plan(reps: int, duration: float, producers: int, rate: float) -> str:
    return plan_toml(
        sweep("fixed", ["A", "D"], ["lz4"], partitions=2, rate=rate),
        # the second producer's range starts at 4500, not a multiple of header_sample = 7
        transport={"kind": "local", "producers": producers, "consumers": 1, "header_sample": 7},
        name="dask-cell",
        repetitions=reps,
        warmup=False,
        duration_s=duration,
        min_window_s=0,
        steady_skip_s=0.2,
        corpus_size=300000,
        # the Dask path is the subject, not latency: short repetitions on a loaded host can trip A's
        # 20 ms saturation check (tests/test_knee.py tests the check)
        saturation_bound_ms=5000,
    )


@pytest.fixture(scope="module")
def dask_cluster() -> Iterator[Any]:
    saved = dict(os.environ)  # restored after: the workers' PYTHONPATH and what the Dask nanny sets here
    env = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join([KBENCH_PATH, env]) if env else KBENCH_PATH
    try:
        with distributed.LocalCluster(
            n_workers=3, threads_per_worker=2, processes=True, host="127.0.0.1", dashboard_address=None
        ) as c:
            yield c
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _run(tmp: Path, plan: str, scheduler: str, wait: bool = True) -> subprocess.Popen[str]:
    (tmp / "plan.toml").write_text(plan)
    cmd = [sys.executable, "-m", "kbench", "run", str(tmp / "plan.toml"), "-o", str(tmp / "run")]
    cmd += ["--force", "--gate-sample-s", "0.1", "--workers", scheduler]
    env = dict(os.environ, PYTHONPATH=KBENCH_PATH)
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def _rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.read_text().splitlines()))


def test_two_producers_one_consumer_every_record_once_at_the_total_rate(tmp_path: Path, dask_cluster: Any) -> None:
    rate = 3000.0
    p = _run(tmp_path, dask_plan(reps=1, duration=3, producers=2, rate=rate), dask_cluster.scheduler_address)
    out, _ = p.communicate(timeout=600)
    assert p.returncode == 0, out
    (a,) = _rows(tmp_path / "run" / "A.csv")
    assert a["status"] == "OK", a["reason"]
    assert int(a["messages"]) == int(rate * 3)
    assert (a["lost"], a["duplicated"], a["delivery_errors"]) == ("0", "0", "0")
    # The merged achieved rate is the sum of the producers' rates (an average would read half, one
    # producer's alone half too). Each is (sent - 1) / (last send - first due): the tick rule keeps
    # the due times exact, so it is off only by its last send's lateness, a scheduler wake-up on a
    # host of three JVM brokers, two Dask workers and the run on 2 CPUs (CI: 4.4 ms). Bound: 10 ms
    # over the 3 s window, per producer, below the target only.
    late = 0.010 / 3
    achieved = float(a["achieved_rate_msgs"])
    assert rate * (1 - late) <= achieved <= rate * 1.0001, a["achieved_rate_msgs"]
    assert a["e2e_p99_us"] != "" and a["corrected_p99_us"] != ""
    # CPU rows per host and role; the manifest lists every worker's host.
    roles = {r["role"] for r in _rows(tmp_path / "run" / "D.csv")}
    assert {"producer@127.0.0.1", "consumer@127.0.0.1", "broker-1"} <= roles
    man = json.loads((tmp_path / "run" / "manifest.json").read_text())
    hosts = json.loads(man["transport"]["extra"]["dask"])["hosts"]
    assert len(hosts) == 3
    for h in hosts.values():
        assert {"arch", "cpu_model", "kernel", "clocksource", "boot_id"} <= set(h)
    # The merged histograms hold every producer's samples of the latency window: one per record
    # due from steady_skip_s (0.2 s) on, at each producer's half of the rate (± a rounding of the
    # due time at the window's edge per producer).
    (hist,) = (tmp_path / "run" / "histograms").glob(f"{a['cell_id']}-r1.json")
    encoded = json.loads(hist.read_text())["histograms"]
    in_window = int(a["messages"]) - int(rate * 0.2)
    for name in ("corrected", "service"):
        assert abs(Histogram.decode(base64.b64decode(encoded[name])).count - in_window) <= 2, name
    # e2e: the records whose global sequence number is a multiple of header_sample, sent from the
    # first header's send time + 0.2 s on (the two producers start together: within ~70 ms)
    assert abs(Histogram.decode(base64.b64decode(encoded["e2e"])).count - in_window / 7) <= 30
    # Each driver role's CPU row has the payload of its own window (main's one-window rule).
    for r in _rows(tmp_path / "run" / "D.csv"):
        assert r["payload_gb"] not in ("", "NA") and float(r["payload_gb"]) > 0, r


def _has_driver_child(pid: int) -> bool:
    """Whether process ``pid`` (a Dask worker) has a kbench driver child, i.e. a cell is running on it."""
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid == pid and b"kbench.kafka.worker" in (d / "cmdline").read_bytes():
                return True
        except (OSError, IndexError, ValueError):
            continue
    return False


def test_a_worker_killed_mid_cell_fails_that_repetition_and_the_run_goes_on(tmp_path: Path, dask_cluster: Any) -> None:
    with distributed.Client(dask_cluster.scheduler_address) as client:
        pids = client.run(os.getpid)
    # 1 producer + 1 consumer per cell: after a kill, two workers remain for the next repetition.
    plan = dask_plan(reps=2, duration=4, producers=1, rate=1000)
    p = _run(tmp_path, plan, dask_cluster.scheduler_address)
    # Wait until a driver runs on some worker (a cell is under way), then kill that worker.
    deadline = time.monotonic() + 300
    busy: list[str] = []
    while not busy:
        assert p.poll() is None and time.monotonic() < deadline, "no driver process appeared"
        busy = [w for w, pid in sorted(pids.items()) if _has_driver_child(pid)]
        time.sleep(0.02)  # polling /proc for the driver process, not a synchronisation by delay
    victim = busy[0]
    os.kill(pids[victim], signal.SIGKILL)
    out, _ = p.communicate(timeout=600)
    # the run goes on and completes; the killed repetition leaves its cell short of OK ones: exit 4
    assert p.returncode == 4 and "short of OK repetitions" in out, out
    a = sorted(_rows(tmp_path / "run" / "A.csv"), key=lambda r: r["rep"])
    assert [r["rep"] for r in a] == ["1", "2"]
    failed = [r for r in a if r["status"] == "FAILED_RUN"]
    ok = [r for r in a if r["status"] == "OK"]
    assert len(failed) == 1 and len(ok) == 1, a
    assert victim in failed[0]["reason"] and "lost mid-cell" in failed[0]["reason"], failed[0]["reason"]


def test_a_worker_clock_off_by_more_than_the_limit_makes_e2e_na(dask_cluster: Any) -> None:
    from kbench.engine import plan as plan_mod
    from kbench.engine.plan import TransportDef
    from kbench.engine.transports.base import RunRequest
    from kbench.engine.transports.kafka import KafkaTransport
    from kbench.model import corpus

    plan = plan_mod.parse(
        {"name": "clock", "sweep": [{"experiments": ["A"], "codec": "lz4", "rate": 1000}]}, source="t", base_dir=ROOT
    )
    cell = plan_mod.expand(plan)[0]
    t = KafkaTransport(TransportDef(kind="local", workers=dask_cluster.scheduler_address))
    t.open()
    try:
        assert t.dask is not None
        # The injected noise: every worker's clock reads 50 ms ahead of the coordinator's. 50 ms, not 5:
        # a worker is judged unsynchronised only when the offset exceeds the limit by more than the
        # probe's own uncertainty (half its round trip), and on a loaded 2-CPU machine even the best
        # of the probes' round trips can reach several ms.
        t.dask.clock_bias_s = {w: 0.050 for w in t.dask.workers()}
        res = t.run(RunRequest(cell, "kbench-clock", corpus.generate("json", 100_000), 1000.0, 1.0, 0.0))
    finally:
        t.close()
    assert res.lost == 0 and res.duplicated == 0
    assert res.latency_e2e is None and "e2e" not in res.histograms
    assert "not synchronised" in res.latency_e2e_na
    # Each worker's estimate must hold the injected 5 ms within the error bound it reports itself
    # (half the round trip of its best probe), not merely exceed the limit.
    estimates = re.findall(r"off the coordinator's by ([+-][0-9.]+) ms \(±([0-9.]+) ms", res.latency_e2e_na)
    assert len(estimates) == 2, res.latency_e2e_na
    for offset_ms, bound_ms in estimates:
        assert abs(float(offset_ms) - 50.0) <= float(bound_ms) + 0.05, res.latency_e2e_na
    assert res.latency_corrected is not None and res.latency_corrected.count == 1000
