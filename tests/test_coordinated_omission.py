"""Coordinated omission on a real broker: the producer worker is stopped (SIGSTOP) for a few
hundred milliseconds in the middle of a fixed-rate run.

Intended send time of record i is t0 + i/rate; ``delay`` = actual send - intended, ``service`` =
ack - actual send, ``corrected`` = ack - intended.  A stall of the sender therefore shows in
delay and corrected for every record that was due during it, and in service only for the few
records already in flight when it began (their acks are read after the stall).  So:

- delay max and corrected max are at least the pause;
- the corrected tail (p95: the records due during the pause are ~13 % of the run) holds a large
  part of the pause, while the service p95 does not (a "corrected" measured from the actual send
  time, i.e. service, fails this);
- the schedule catches up: the rate over the whole run is still within 2 % of the target.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from kbench.engine.transports.local_pool import spawn
from kbench.kafka import admin
from kbench.kafka.cluster import LocalCluster
from kbench.kafka.drivers import new_run_id
from kbench.model import corpus

RATE = 2000.0
SECONDS = 3.0
PAUSE_S = 0.4


@pytest.mark.kafka
def test_a_stalled_producer_shows_in_delay_and_corrected_not_in_service(kafka1: LocalCluster, tmp_path: Path) -> None:
    topic = "co-stall"
    admin.create_topic(kafka1.client_props(), topic, partitions=1)
    records = corpus.generate("json", 64 * 1024, seed=3).records
    corpus_file = tmp_path / "corpus.bin"
    with corpus_file.open("wb") as f:
        for r in records:
            f.write(len(r).to_bytes(4, "big") + r)
    count = int(RATE * SECONDS)
    worker = spawn(
        "producer",
        {
            "props": kafka1.client_props(**{"linger.ms": "5", "acks": "1"}),
            "topic": topic,
            "run_id": new_run_id(),
            "corpus_file": str(corpus_file),
            "mode": "fixed-rate",
            "rate": RATE,
            "count": count,
            "duration": 0.0,
            "keys": "none",
            "nkeys": 0,
            "skip_s": 0.0,
        },
        tmp_path / "producer.err",
    )
    worker.expect("STARTED", 60)
    # The stall's place in the run is part of the experiment (a schedule, not synchronisation):
    # one second in, so that the run has a steady part on both sides of it.
    time.sleep(1.0)
    t_stop = time.monotonic()
    os.kill(worker.proc.pid, signal.SIGSTOP)
    try:
        time.sleep(PAUSE_S)
    finally:
        t_cont = time.monotonic()
        os.kill(worker.proc.pid, signal.SIGCONT)
    res = worker.result(120)
    pause_us = (t_cont - t_stop) * 1e6
    assert pause_us >= PAUSE_S * 1e6

    assert (res["sent"], res["delivered"], res["failed"], res["undelivered"]) == (count, count, 0, 0)
    delay, corrected, service = res["delay"], res["corrected"], res["service"]
    assert delay["count"] == corrected["count"] == service["count"] == count
    print(
        f"pause {pause_us / 1e3:.0f} ms; max delay {delay['max_us'] / 1e3:.0f} ms, corrected {corrected['max_us'] / 1e3:.0f} ms, "
        f"service {service['max_us'] / 1e3:.0f} ms; p95 corrected {corrected['p95_us'] / 1e3:.1f} ms, "
        f"service {service['p95_us'] / 1e3:.1f} ms; rate {res['achieved_rate']:.1f}/s"
    )
    # Every record due during the stall was sent after it: the largest delay is the stall
    # (less the signal's delivery, well under 5 %).
    assert delay["max_us"] >= 0.95 * pause_us, (delay, pause_us)
    assert corrected["max_us"] >= 0.95 * pause_us, (corrected, pause_us)
    # The records due during the stall (RATE x PAUSE_S of RATE x SECONDS) fill the corrected
    # tail; service does not carry their wait for the send: corrected measured from the actual
    # send time (the coordinated-omission bug) would make the two tails equal.  (With the tick
    # loop the post-stall burst's service tail grows too, to ~half of corrected's p95 here: an
    # open finding, docs/methodology.md; the gap is what this test holds.)
    assert corrected["p95_us"] >= 0.4 * pause_us, (corrected, pause_us)
    assert corrected["p95_us"] - service["p95_us"] >= 0.25 * pause_us, (service, corrected)
    assert service["p50_us"] <= 0.1 * pause_us, service
    # The schedule is kept over the run: the backlog is sent right after the stall.
    assert abs(res["achieved_rate"] - RATE) / RATE <= 0.02, res["achieved_rate"]
