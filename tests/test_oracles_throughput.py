"""Oracle for experiment B's throughput: kbench's msg/s and MB/s against the broker's own count.

A saturated ``kbench run`` (B and C, none and zstd:3) against a broker this test started, its
topics configured ``message.timestamp.type = LogAppendTime`` so that every batch carries the
time *the broker* appended it.  After the run (the broker keeps deleted topics' files,
tests/oracles.py) Kafka's DumpLogSegments gives per repetition:

- the records the broker holds (log end offsets, summed over partitions) and their value bytes;
- the broker's append span: first to last batch append time (ms, the broker's clock);

so the broker's rate is (records − the first batch's records) / span: the first batch's records
were appended at its time, not over the span.  kbench's ``achieved_rate_msgs`` and
``payload_mb_per_s`` are at most 2 % below it, and never above what every record over the span
gives: kbench's window (first send → end of flush) holds the broker's span (first append → last
append), so its rate cannot exceed records / (span − 1 ms of the append times' rounding).

The broker's append times are its wall clock, kbench's window is CLOCK_MONOTONIC: the two agree
only while nothing steps or slews the wall clock.  A thread here samples wall − monotonic through
the run, and its range widens the span by that much either way (CI 2026-12-06 read a broker span
of 8.455 s around a 6.6 s kbench window: the wall clock had moved 1.9 s more than the monotonic
one; the sampler makes such a run's bound say so instead of failing on a clock it does not test).  The broker's ``BytesInPerSec`` counter (the Prometheus
JMX exporter the test cluster runs) over the whole kbench run equals the bytes of every batch
stored (C's ``stored_bytes`` summed) within 2 %.  Why 2 %: docs/testing.md, "Oracles".
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kbenv import KBENCH_PATH
from oracles import dump_batches, dump_log_segments, keeping_cluster, partition_dirs, write_corpus

from kbench.kafka import metrics, procstat

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
REL = 0.02  # below the broker's rate: an edge (GC pause, a slow first or last response) of a 6 s run

PLAN = """
name = "oracle-throughput"
repetitions = 2
warmup = false
duration_s = 6
min_window_s = 0
steady_skip_s = 0

[corpora.lines]
source = "file"
path = "{corpus}"
format = "lines"

[[sweep]]
name = "sat"
experiments = ["B", "C"]
codec = ["none", "zstd:3"]
corpus = ["lines"]
batch_size = 65536
linger_ms = 5
partitions = 2
rate = "saturated"
topic_config = {{ "message.timestamp.type" = "LogAppendTime" }}
"""


def _offset() -> float | None:
    """wall − monotonic, from a wall read between two monotonic reads; None when the thread was
    preempted between them (a 47 ms preemption once read as a 47 ms step)."""
    m0 = time.monotonic()
    wall = time.time()
    m1 = time.monotonic()
    return wall - (m0 + m1) / 2 if m1 - m0 < 0.0005 else None


class ClockWander(threading.Thread):
    """Samples wall − monotonic every 5 ms; :meth:`stop` gives the range it covered (s)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self._halt = threading.Event()
        first = None
        while first is None:
            first = _offset()
        self.lo = self.hi = first

    def run(self) -> None:
        while not self._halt.wait(0.005):
            off = _offset()
            if off is not None:
                self.lo, self.hi = min(self.lo, off), max(self.hi, off)

    def stop(self) -> float:
        self._halt.set()
        self.join()
        return self.hi - self.lo


@pytest.fixture(scope="module")
def keeping_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    with keeping_cluster(tmp_path_factory.mktemp("kafka-keep-tp")) as c:
        yield c


@dataclass(frozen=True)
class Rep:
    """One repetition: its B and C rows and what the broker's files say about it."""

    b: dict[str, str]
    c: dict[str, str]
    records: int  # the broker's count (log end offsets summed over partitions)
    first_batch: int  # records of the first batch appended
    span_s: float  # first to last batch append (the broker's clock)
    stored: int  # bytes of every batch the broker holds
    wander_s: float  # how far the wall clock moved against the monotonic one during the run

    @property
    def broker_rate(self) -> float:
        """Records appended after the first batch over the append span (at its longest)."""
        return (self.records - self.first_batch) / (self.span_s + 0.001 + self.wander_s)

    @property
    def window_at_least(self) -> float:
        """kbench's window holds the span: its shortest, the span less the append times' ms
        rounding and the wall clock's wander."""
        return self.span_s - 0.001 - self.wander_s


@dataclass(frozen=True)
class Measured:
    reps: list[Rep]
    bytes_in: float  # the broker's BytesInPerSec counter over the whole kbench run


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory, keeping_broker: object) -> Measured:
    tmp = tmp_path_factory.mktemp("oracle-throughput")
    write_corpus(tmp / "corpus.txt", seed=21)
    plan = tmp / "plan.toml"
    plan.write_text(PLAN.format(corpus=tmp / "corpus.txt"))
    run = tmp / "run"
    k = keeping_broker
    url = k.brokers[0].metrics_url  # type: ignore[attr-defined]
    assert url, "the test cluster runs the JMX exporter"
    before = metrics.scrape(url)
    wander = ClockWander()
    wander.start()
    p = subprocess.run(
        [sys.executable, "-m", "kbench", "run", str(plan), "-o", str(run), "--gate-sample-s", "0.1"]
        + ["--bootstrap", k.bootstrap_servers, "--broker-pid", str(k.pids[0]), "--force"],  # type: ignore[attr-defined]
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, procstat.INJECT_ENV: "0", "PYTHONPATH": KBENCH_PATH},
        cwd=ROOT,
    )
    wander_s = wander.stop()
    print(f"wall clock against monotonic over the run: {wander_s * 1e3:.1f} ms")
    assert p.returncode == 0, p.stderr[-3000:]
    after = metrics.scrape(url)
    assert before.bytes_in is not None and after.bytes_in is not None
    run_id = json.loads((run / "manifest.json").read_text())["run_id"]
    rows = {}
    for exp in "BC":
        with (run / f"{exp}.csv").open() as f:
            rows[exp] = {(r["cell_id"], r["rep"], r["attempt"]): r for r in csv.DictReader(f)}
    assert rows["B"].keys() == rows["C"].keys() and len(rows["B"]) == 4
    log_dir = Path(k.log_dirs[0])  # type: ignore[attr-defined]
    reps = []
    for key, b in rows["B"].items():
        cell, rep, attempt = key
        topic = f"kbench-{run_id}-{cell}-r{rep}" + ("" if attempt == "1" else f"a{attempt}")
        logs = sorted(f for d in partition_dirs(log_dir, topic, 2) for f in d.glob("*.log"))
        batches = dump_batches(dump_log_segments(logs))
        assert batches and all(x["LogAppendTime"].isdigit() for x in batches), batches[:1]
        first = min(batches, key=lambda x: int(x["LogAppendTime"]))
        span_s = (max(int(x["LogAppendTime"]) for x in batches) - int(first["LogAppendTime"])) / 1e3
        reps.append(
            Rep(
                b,
                rows["C"][key],
                sum(int(x["count"]) for x in batches),
                int(first["count"]),
                span_s,
                sum(int(x["size"]) for x in batches),
                wander_s,
            )
        )
    return Measured(reps, after.bytes_in - before.bytes_in)


def test_b_msgs_per_s_against_the_brokers_count_over_its_append_span(measured: Measured) -> None:
    for r in measured.reps:
        assert r.b["status"] == "OK", r.b
        assert r.records == int(r.b["messages"]), r  # the broker holds every acknowledged record
        assert r.span_s > 5.0, r  # of a 6 s run: the run, not a burst
        rate = float(r.b["achieved_rate_msgs"])
        assert rate >= r.broker_rate * (1 - REL), r
        assert rate <= r.records / r.window_at_least, r


def test_b_mb_per_s_against_the_brokers_bytes_over_its_append_span(measured: Measured) -> None:
    for r in measured.reps:
        # the values the broker holds are C's payload bytes (tests/test_oracles_bytes.py)
        payload = int(r.c["payload_bytes"])
        broker_mb = payload * (r.records - r.first_batch) / r.records / (r.span_s + 0.001 + r.wander_s) / 1e6
        mb = float(r.b["payload_mb_per_s"])
        assert mb >= broker_mb * (1 - REL), (r, broker_mb)
        assert mb <= payload / r.window_at_least / 1e6, (r, broker_mb)


def test_bytes_in_per_sec_counter_against_the_stored_batches(measured: Measured) -> None:
    stored = sum(r.stored for r in measured.reps)
    assert measured.bytes_in == pytest.approx(stored, rel=REL), (measured.bytes_in, stored)
    for r in measured.reps:
        assert int(r.c["stored_bytes"]) == pytest.approx(r.stored, rel=1e-3), r
