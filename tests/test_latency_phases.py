"""Where producer latency goes: librdkafka's statistics split into phases, and the phases' sum
checked against the measured service latency on a real cluster."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kbenv import KBENCH_PATH

from kbench.commands.run import EXIT_SHORT
from kbench.engine.status import Status
from kbench.kafka import rdstats as stats

ROOT = Path(__file__).resolve().parent.parent

#: The phases are medians of different distributions (queue wait per message, compression per
#: batch, request per request), and the service latency adds the delivery report's dispatch, so
#: their sum is not the service median; it must agree with it within this share of it, plus
#: this many microseconds of slack for the parts the phases leave out (callback dispatch, polling).
SUM_TOLERANCE = 0.35
SUM_SLACK_US = 2000.0

#: What a loaded host may make of a fixed-rate cell; none of them is about the phases.
LOAD_STATUSES = {Status.SATURATED.value, Status.WARMING.value, Status.REJECTED.value, Status.INVALID.value}


def _window(p50: float, cnt: int) -> dict[str, float]:
    return {"p50": p50, "cnt": cnt, "p99": p50 * 2}


def test_phases_weighted_over_intervals_and_brokers() -> None:
    objs = [
        {
            "brokers": {
                "bootstrap": {"nodeid": -1, "int_latency": _window(99_999, 1000), "rtt": _window(99_999, 1000)},
                "b1": {
                    "nodeid": 1,
                    "int_latency": _window(5000, 300),
                    "outbuf_latency": _window(20, 10),
                    "rtt": _window(1000, 10),
                },
            },
            "topics": {"t": {"batchcnt": _window(30, 10), "batchsize": _window(9000, 10)}},
        },
        {
            "brokers": {
                "b1": {
                    "nodeid": 1,
                    "int_latency": _window(7000, 100),
                    "outbuf_latency": _window(40, 10),
                    "rtt": _window(3000, 30),
                }
            },
            "topics": {"t": {"batchcnt": _window(10, 30), "batchsize": _window(3000, 30)}},
        },
        {"brokers": {"b1": {"nodeid": 1, "int_latency": {"cnt": 0, "p50": 0}}}},  # an idle interval
    ]
    ph = stats.phases_from(objs, "t")
    assert ph is not None and ph.intervals == 3
    assert ph.queue_p50_us == 5000  # 300 of 400 samples at 5000: the placeholder broker is ignored
    assert ph.rtt_p50_us == 3000 and ph.outbuf_p50_us == 20
    assert ph.request_p50_us == 3020
    assert ph.batch_records_p50 == 10 and ph.batch_bytes_p50 == 3000
    assert stats.phases_from([{"brokers": {}}], "t") is None


PLAN = """
name = "phases"
repetitions = 1
warmup = false
duration_s = 4
min_window_s = 0
steady_skip_s = 0.5
corpus_size = 1000000
seed = 7

[transport]
kind = "local"

[[sweep]]
name = "phases"
experiments = ["A"]
codec = ["none", "gzip:9"]
linger_ms = [5, 50]
batch_size = 1048576
rate = 2000
"""


@pytest.mark.kafka
@pytest.mark.slow
def test_phases_in_a_csv_add_up_to_the_service_latency(tmp_path: Path) -> None:
    plan = tmp_path / "phases.toml"
    plan.write_text(PLAN)
    out = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([KBENCH_PATH, os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run(
        [sys.executable, "-m", "kbench", "run", str(plan), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env=env,
    )
    # a loaded host may saturate a cell at its fixed rate (SATURATED and WARMING are not retried:
    # the load caused them; REJECTED and INVALID are retried and may exhaust the budget), and the
    # run then exits EXIT_SHORT; any other status, or another exit status, is a failure
    assert r.returncode in (0, EXIT_SHORT), r.stderr[-2000:]
    rows = list(csv.DictReader((out / "A.csv").open()))
    ok = [x for x in rows if x["status"] == "OK"]
    others = [(x["cell_id"], x["status"], x["reason"]) for x in rows if x["status"] != "OK"]
    assert {status for _, status, _ in others} <= LOAD_STATUSES, others
    short = {x["cell_id"] for x in rows} - {x["cell_id"] for x in ok}
    assert (r.returncode == EXIT_SHORT) == bool(short), (r.returncode, others)
    assert len(ok) >= 3, others
    for x in ok:
        q, c, req = (float(x[f"phase_{k}_p50_us"]) for k in ("queue", "compress", "request"))
        service = float(x["service_p50_us"])
        linger_us = float(x["linger_ms"]) * 1000
        print(x["codec"], x["linger_ms"], f"queue {q:.0f} compress {c:.0f} request {req:.0f} service {service:.0f}")
        assert 0.2 * linger_us <= q <= linger_us + 10_000  # the queue phase is the linger wait
        assert (c == 0) == (x["codec"] == "none")
        assert abs(q + c + req - service) <= SUM_TOLERANCE * service + SUM_SLACK_US
