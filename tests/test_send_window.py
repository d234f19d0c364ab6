"""The producer's steady window (kbench.kafka.sendwindow): the messages delivered after the CPU
window opened, over that window's wall time and CPU; ``kbench produce`` reports it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from kbenv import KBENCH_PATH
from test_consume import MockCluster

from kbench._native import Histogram
from kbench.kafka.drivers import ProducerResult, ProducerSpec, produce
from kbench.kafka.sendwindow import STEADY_SKIP_S, send_window


def _result(delivered: int, cpu: dict[str, float] | None) -> ProducerResult:
    return ProducerResult(
        mode="saturated", sent=delivered, delivered=delivered, failed=0, undelivered=0, bytes=0, queue_full=0,
        stats_count=0, t0_ns=0, first_send_ns=0, last_send_ns=0, last_due_ns=0, end_ns=0, stopped=False,
        delivery_errors={}, client_errors={}, service=Histogram(), delay=None, corrected=None, cpu=cpu,
    )  # fmt: skip


def _cpu(**kw: float) -> dict[str, float]:
    base = dict(
        usr_s=0.3, sys_s=0.1, wall_s=2.0, client_usr_s=0.15, client_sys_s=0.05, loop_usr_s=0.1, loop_sys_s=0.05,
        loadgen_usr_s=0.0, loadgen_sys_s=0.0, client_threads=4, start_ns=0, delivered_at_start=1000,
    )  # fmt: skip
    base.update(kw)
    return base


def test_the_window_holds_only_what_was_delivered_after_it_opened() -> None:
    w = send_window(_result(5000, _cpu()))
    assert w is not None
    assert w.delivered == 4000 and w.delivered_per_s == pytest.approx(2000.0)
    assert w.cpu_us_per_msg == pytest.approx(0.4 / 4000 * 1e6)
    assert w.loop_us_per_msg == pytest.approx(0.15 / 4000 * 1e6)
    assert w.client_us_per_msg == pytest.approx(0.2 / 4000 * 1e6)
    assert w.cpu_pct == pytest.approx(20.0)
    assert send_window(_result(5000, None)) is None  # the window never opened (a run shorter than the skip)
    assert send_window(_result(1000, _cpu())) is None  # nothing delivered within it
    assert send_window(_result(5000, _cpu(delivered_at_start=0) | {"wall_s": 0.0})) is None


def test_a_fixed_rate_runs_window_counts_the_messages_due_after_the_skip() -> None:
    """librdkafka's mock cluster (no broker): 2,000 msg/s for 2 s, the window opening 1 s after the
    first due time: about the second second's 2,000 messages, delivered at 2,000 msg/s (a whole
    run's count, 4,000, would double it)."""
    mock = MockCluster({"sw": 1})
    try:
        spec = ProducerSpec(
            topic="sw",
            props={"bootstrap.servers": mock.bootstrap_servers, "linger.ms": "5"},
            mode="fixed-rate",
            rate=2000,
            duration=2.0,
            cpu_skip=STEADY_SKIP_S,
        )
        r = produce(spec, [b"x" * 100])
        assert r.delivered == 4000
        w = send_window(r)
        assert w is not None
        assert 1900 <= w.delivered <= 2100, w
        assert 0.95 <= w.window_s <= 1.3, w
        assert w.delivered_per_s == pytest.approx(2000, rel=0.15)
        assert w.cpu_us_per_msg > 0
        out = _produce_json(mock, "--topic", "sw", "--rate", "2000", "--duration", "2")
        s = out["producer"]["steady"]
        assert 1900 <= s["delivered"] <= 2100 and s["cpu_us_per_msg"] > 0, s
        assert _produce_json(mock, "--topic", "sw", "--rate", "2000", "--count", "100")["producer"]["steady"] is None
    finally:
        mock.close()


def _produce_json(mock: MockCluster, *argv: str) -> dict[str, Any]:
    p = subprocess.run(
        [sys.executable, "-m", "kbench", "produce", "--bootstrap", mock.bootstrap_servers, "--json", *argv],
        env={**os.environ, "PYTHONPATH": KBENCH_PATH},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    return dict(json.loads(p.stdout))
