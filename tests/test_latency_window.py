"""The latency window (docs/drivers.md job field ``latency_skip_s``), on every driver: a start-up
backlog (a cold JVM, a connection being set up) must stay out of A's latency figures the way
``skip_s`` keeps it out of the CPU window, while the per-second series keeps every message.

At 2,000 msg/s message *i* is due at t0 + i × 500 µs, so with a 1 s skip exactly the messages
from sequence 2,000 on are due inside the window: the producer's service, delay and corrected
histograms must count exactly ``count − 2000``, and so must the consumer's e2e, which the runner
gives the same window by sequence number (``latency_from_seq``: one producer at a fixed rate).
Without it (several producers on Dask) the consumer opens its window at the first ``kb`` header's
send time + 1 s: the C producer sends on schedule within a few ms, so its e2e count is
``count − 2000`` give or take a few ms of sends (tolerance 100 records = 50 ms), never every record.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from kbench.engine.transports.local_pool import spawn
from kbench.kafka import admin, clients
from kbench.kafka.drivers import first_seq_due_after
from kbench.model.corpus import write_lenprefixed

pytestmark = pytest.mark.kafka

RATE, COUNT, SKIP_S = 2000.0, 6000, 1.0
IN_WINDOW = COUNT - int(RATE * SKIP_S)


def _corpus_file(tmp: Path, records: tuple[bytes, ...]) -> Path:
    return write_lenprefixed(records, tmp / "corpus.bin")


@pytest.mark.parametrize(
    ("client", "group", "by_seq", "e2e_tolerance"),
    [
        ("librdkafka", False, True, 0),
        ("librdkafka", True, True, 0),
        ("java", False, True, 0),
        ("java", True, True, 0),
        ("kafka-go", False, True, 0),
        ("sarama", False, True, 0),
        ("librdkafka", False, False, 100),  # the send-time rule
    ],
)
def test_latency_histograms_leave_out_the_skip_and_the_series_keeps_it(
    kafka1: Any,
    tmp_path: Path,
    json_records: tuple[bytes, ...],
    client: str,
    group: bool,
    by_seq: bool,
    e2e_tolerance: int,
) -> None:
    bs = kafka1.bootstrap_servers
    topic = f"latwin-{client}-{int(group)}-{int(by_seq)}"
    admin.create_topic({"bootstrap.servers": bs}, topic, 2, 1)
    run_id = random.getrandbits(62) + 1
    common = {"topic": topic, "run_id": run_id, "header_sample": 1, "latency_skip_s": SKIP_S, "interval_s": 1.0}
    cons = spawn(
        "consumer",
        common
        | {"props": {"bootstrap.servers": bs}, "expected": COUNT, "timeout": 60.0, "group": group}
        | {"latency_from_seq": first_seq_due_after(RATE, SKIP_S) if by_seq else 0},
        tmp_path / "c.err",
        client,
    )
    cons.expect("READY", 60)
    props = clients.producer_props(client, {"bootstrap.servers": bs}, "lz4", None, 16384, 5.0, "all")
    prod = spawn(
        "producer",
        common
        | {"props": props, "corpus_file": str(_corpus_file(tmp_path, json_records)), "corpus_format": "lenprefixed"}
        | {"mode": "fixed-rate", "rate": RATE, "count": COUNT, "tick_s": 0.0005},
        tmp_path / "p.err",
        client,
    )
    prod.expect("STARTED", 60)
    pres, cres = prod.result(120), cons.result(120)
    assert (pres["sent"], pres["delivered"], cres["unique"], cres["lost"]) == (COUNT, COUNT, COUNT, 0)
    for name in ("service", "delay", "corrected"):
        assert pres[name]["count"] == IN_WINDOW, (name, pres[name]["count"])
    assert cres["sampled"] == COUNT
    assert abs(cres["e2e"]["count"] - IN_WINDOW) <= e2e_tolerance, cres["e2e"]["count"]
    # the series keeps every message: the skip is a window on the run's histograms only
    assert sum(int(iv["latency"]["count"]) for iv in pres["intervals"] if iv.get("latency")) == COUNT
    assert sum(int(iv["latency"]["count"]) for iv in cres["intervals"] if iv.get("latency")) == COUNT
