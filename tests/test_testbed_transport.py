"""The testbed transport end to end (real Kafka on emulated hosts; needs root, as CI runs):
NIC bytes measured per role and held against the client's own count, a network-bound run where
compression buys throughput, and clean-up after kbench is killed with SIGKILL mid-run."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from kbench.kafka import procstat

pytestmark = []

BASE = """
name = "{name}"
description = "testbed test"
repetitions = {reps}
warmup = false
duration_s = {duration}
warmup_s = 1
steady_skip_s = 1
retries = 2

[transport]
kind = "testbed"
brokers = 1
{shaping}
"""
FIXED = """
[[sweep]]
name = "fixed"
experiments = ["C", "D"]
codec = ["none", "zstd:3"]
corpus = ["json"]
batch_size = 65536
linger_ms = 5
partitions = 2
rate = 2000
"""
SATURATED = """
[[sweep]]
name = "saturated"
experiments = ["B"]
codec = ["none", "lz4"]
corpus = ["json"]
batch_size = 65536
linger_ms = 5
partitions = 2
rate = "saturated"
"""


def _env() -> dict[str, str]:
    """Every steal figure injected as 0 %: the assertions must not depend on this host's hypervisor."""
    return dict(os.environ, **{procstat.INJECT_ENV: "0"})


def _run(
    tmp: Path, text: str, name: str = "run", timeout: float = 600
) -> tuple[subprocess.CompletedProcess[str], Path]:
    plan = tmp / f"{name}.toml"
    plan.write_text(text)
    out = tmp / name
    p = subprocess.run(
        [sys.executable, "-m", "kbench", "run", str(plan), "-o", str(out), "--gate-sample-s", "0"],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_env(),
    )
    return p, out


def _rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.open()))


def _namespaces() -> set[str]:
    return {p.name for p in Path("/run/netns").iterdir()} if Path("/run/netns").is_dir() else set()


def _cgroups() -> set[str]:
    root = Path("/sys/fs/cgroup")
    return {str(p) for p in root.glob("*/kbench-*")} | {str(p) for p in root.glob("kbench-*")}


def test_nic_bytes_per_role_against_the_clients_own_counts(tmp_path: Path) -> None:
    before_ns, before_cg = _namespaces(), _cgroups()
    p, run = _run(tmp_path, BASE.format(name="nic", reps=2, duration=3, shaping="") + FIXED)
    assert p.returncode == 0, p.stderr[-3000:]
    d = [r for r in _rows(run / "D.csv") if r["status"] == "OK"]
    c = {(r["cell_id"], r["rep"], r["attempt"]): r for r in _rows(run / "C.csv")}
    assert {r["role"] for r in d} == {"producer", "consumer", "broker-1"}, d
    for r in d:
        for col in ("nic_tx_bytes", "nic_rx_bytes", "nic_tx_bytes_per_gb", "nic_rx_bytes_per_gb"):
            assert float(r[col]) > 0, (col, r)
    by_run: dict[tuple[str, str, str], dict[str, dict[str, str]]] = {}
    for r in d:
        by_run.setdefault((r["cell_id"], r["rep"], r["attempt"]), {})[r["role"]] = r
    for key, roles in by_run.items():
        prod, cons, brk = roles["producer"], roles["consumer"], roles["broker-1"]
        # One broker, RF 1: what the producer's host sent is what the broker's host received, and
        # what the broker sent is what the consumer received (same window, same counters' kind).
        assert abs(float(brk["nic_rx_bytes"]) / float(prod["nic_tx_bytes"]) - 1) < 0.05, roles
        assert abs(float(cons["nic_rx_bytes"]) / float(brk["nic_tx_bytes"]) - 1) < 0.05, roles
        # Against librdkafka's own count: the producer's bytes out per GB of payload (its
        # statistics, whole run) within 10 % of its host's NIC bytes per GB (the broker window).
        rd_per_gb = float(prod["wire_bytes"]) / (float(c[key]["payload_bytes"]) / 1e9)
        assert abs(float(prod["nic_tx_bytes_per_gb"]) / rd_per_gb - 1) < 0.10, (prod, rd_per_gb)
        # And the stored bytes: the producer cannot send fewer bytes than the broker stored.
        stored_per_gb = float(c[key]["stored_bytes"]) / (float(c[key]["payload_bytes"]) / 1e9)
        assert float(prod["nic_tx_bytes_per_gb"]) >= stored_per_gb * 0.95, (prod, stored_per_gb)
    # zstd sends fewer bytes than none for the same payload.
    per_codec = {r["codec"]: float(r["nic_tx_bytes_per_gb"]) for r in d if r["role"] == "producer"}
    assert per_codec["zstd:3"] < per_codec["none"] / 2, per_codec
    assert _namespaces() == before_ns and _cgroups() == before_cg


def test_network_bound_compression_buys_throughput(tmp_path: Path) -> None:
    # The broker host's NIC at 20 Mbit/s: none is network-bound, lz4 on JSON sends fewer bytes per
    # record and so moves more records per second through the same link.
    p, run = _run(tmp_path, BASE.format(name="net", reps=2, duration=4, shaping="broker_nic_mbit = 20") + SATURATED)
    assert p.returncode == 0, p.stderr[-3000:]
    b = [r for r in _rows(run / "B.csv") if r["status"] == "OK"]
    rate = {c: sorted(float(r["achieved_rate_msgs"]) for r in b if r["codec"] == c) for c in ("none", "lz4")}
    assert len(rate["none"]) >= 2 and len(rate["lz4"]) >= 2, rate
    assert min(rate["lz4"]) > 1.5 * max(rate["none"]), rate
    # none is held by the link: its payload MB/s stays under 20 Mbit/s of wire
    mb = [float(r["payload_mb_per_s"]) for r in b if r["codec"] == "none"]
    assert max(mb) < 20 / 8 * 1.1, mb


def test_sigkill_mid_run_leaves_nothing_after_the_next_run(tmp_path: Path) -> None:
    before_ns, before_cg = _namespaces(), _cgroups()
    plan = tmp_path / "long.toml"
    plan.write_text(BASE.format(name="long", reps=3, duration=20, shaping="") + FIXED)
    p = subprocess.Popen(
        [sys.executable, "-m", "kbench", "run", str(plan), "-o", str(tmp_path / "long"), "--gate-sample-s", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_env(),
    )
    try:
        deadline = time.monotonic() + 180
        # wait until the first repetition is journalled: the run is then under way, with more to come
        journal = tmp_path / "long" / "done.jsonl"
        while not (journal.exists() and journal.stat().st_size > 0):
            assert p.poll() is None, "kbench run ended before it could be killed"
            assert time.monotonic() < deadline, "no repetition started within 180 s"
            time.sleep(0.2)  # polling for the run to reach a repetition
        assert _namespaces() - before_ns, "the testbed's namespaces should exist mid-run"
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert _namespaces() - before_ns, "a SIGKILL leaves the namespaces (the next start removes them)"
    q, _ = _run(tmp_path, BASE.format(name="next", reps=1, duration=2, shaping="") + FIXED, name="next")
    assert q.returncode == 0, q.stderr[-3000:]
    assert _namespaces() == before_ns and _cgroups() == before_cg
