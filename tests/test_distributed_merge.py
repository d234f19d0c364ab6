"""Exact merge of several drivers' results, and the coordinator's pure rules (no Dask, no Kafka)."""

from __future__ import annotations

import base64
import random
from typing import Any

import pytest

from kbench.engine.transports.base import TransportError
from kbench.engine.transports.distributed import CLOCK_LIMIT_S, ClockReading, e2e_invalid_reason, place
from kbench.kafka import merge
from kbench.kafka.drivers import Histogram
from kbench.model.stats import histogram_us


def _enc(h: Histogram) -> str:
    return base64.b64encode(h.encode()).decode()


def test_merged_histogram_equals_the_histogram_of_all_samples() -> None:
    rng = random.Random(16)
    # Three producers' latencies with different shapes, some out of range (negative and > 68.7 s).
    parts = [
        [int(rng.lognormvariate(11, 1.0)) for _ in range(20000)],
        [int(rng.lognormvariate(13, 0.5)) for _ in range(5000)] + [-5, 2**37],
        [rng.randrange(1, 10**9) for _ in range(3000)],
    ]
    hs = []
    for samples in parts:
        h = Histogram()
        for v in samples:
            h.record(v)
        hs.append(h)
    everything = Histogram()
    for v in (v for samples in parts for v in samples):
        everything.record(v)
    merged = merge.merge_histograms(_enc(h) for h in hs)
    assert merged is not None
    assert merged.encode() == everything.encode()
    assert merged.buckets() == everything.buckets()
    assert (merged.count, merged.min, merged.max, merged.underflow, merged.overflow) == (
        everything.count,
        everything.min,
        everything.max,
        everything.underflow,
        everything.overflow,
    )
    for p in (50, 90, 99, 99.9, 100):
        assert merged.percentile(p) == everything.percentile(p)
    # Averaging the parts' p99 is not what merging means: it differs here.
    assert sum(h.percentile(99) for h in hs) / 3 != everything.percentile(99)


def test_merge_producers_sums_counts_and_merges_histograms() -> None:
    def part(seed: int, n: int) -> dict[str, object]:
        h = Histogram()
        for v in random.Random(seed).sample(range(1000, 10**7), n):
            h.record(v)
        return {
            "sent": n,
            "delivered": n - 1,
            "failed": 0,
            "undelivered": 1,
            "bytes": 100 * n,
            "achieved_rate": n / 2.0,
            "delivered_rate": n / 2.1,
            "send_seconds": 2.0 + seed / 10,
            "delivery_errors": {"_MSG_TIMED_OUT": 1},
            "service": {**(histogram_us(h) or {}), "encoded": _enc(h)},
            "delay": None,
            "corrected": {**(histogram_us(h) or {}), "encoded": _enc(h)},
        }

    a, b = part(1, 300), part(2, 500)
    m = merge.merge_producers([a, b])
    assert (m["sent"], m["delivered"], m["bytes"], m["undelivered"]) == (800, 798, 80000, 2)
    assert m["achieved_rate"] == pytest.approx(400.0)
    assert m["send_seconds"] == pytest.approx(2.2)
    assert m["delivery_errors"] == {"_MSG_TIMED_OUT": 2}
    assert m["service"]["count"] == 800 and m["delay"] is None


def test_merge_consumers_counts_loss_across_consumers() -> None:
    m = merge.merge_consumers(
        [
            {"records": 10, "bytes": 5, "unique": 10, "duplicates": 0, "lost": 0, "errors": {}, "e2e": None},
            {"records": 9, "bytes": 4, "unique": 8, "duplicates": 1, "lost": 2, "errors": {"X": 1}, "e2e": None},
        ]
    )
    assert (m["unique"], m["duplicates"], m["lost"], m["errors"]) == (18, 1, 2, {"X": 1})


def test_split_count_gives_disjoint_ranges_covering_all() -> None:
    ranges = merge.split_count(10, 3)
    assert ranges == [(0, 4), (4, 3), (7, 3)]
    seqs = [s for base, n in ranges for s in range(base, base + n)]
    assert seqs == list(range(10))


def test_placement_one_driver_per_worker_and_a_clear_error_when_short() -> None:
    assert place(["tcp://b:1", "tcp://a:1", "tcp://c:1"], 2, 1, 1) == [
        ("consumer", "tcp://a:1"),
        ("producer", "tcp://b:1"),
        ("producer", "tcp://c:1"),
    ]
    with pytest.raises(TransportError, match="needs 2 producer \\+ 1 consumer drivers.*2 worker"):
        place(["tcp://a:1", "tcp://b:1"], 2, 1, 1)


def test_unsynchronised_clock_makes_e2e_na_with_the_worker_named() -> None:
    boots = {"tcp://a:1": "x", "tcp://b:1": "x"}
    roles = {"tcp://a:1": "consumer", "tcp://b:1": "producer"}
    ok = [ClockReading("tcp://a:1", 0.0002, 0.0001), ClockReading("tcp://b:1", -0.0003, 0.0001)]
    assert e2e_invalid_reason(ok, boots, roles) == ""
    bad = [ok[0], ClockReading("tcp://b:1", 0.0050, 0.0001)]
    why = e2e_invalid_reason(bad, boots, roles)
    assert "tcp://b:1" in why and "not synchronised" in why and "tcp://a:1" not in why
    # An offset within the probe's own uncertainty is not evidence of a bad clock.
    assert ClockReading("w", CLOCK_LIMIT_S + 0.0004, 0.0005).synchronised
    # Different boots: CLOCK_MONOTONIC send times are not comparable.
    assert "monotonic" in e2e_invalid_reason(ok, {"tcp://a:1": "x", "tcp://b:1": "y"}, roles)


def test_a_row_keeps_producer_latency_and_says_why_e2e_is_na() -> None:
    from engine_fakes import lat

    from kbench.engine import rules
    from kbench.engine.plan import Cell
    from kbench.engine.transports.base import RunResult
    from kbench.model import corpus

    c = corpus.generate("json", 5000)
    cell = Cell("x-000", "x", ("A",), "lz4", "json", 16384, 5.0, 1, "all", 1000.0, "producer")
    res = RunResult(
        messages_sent=1000,
        messages_acked=1000,
        payload_bytes=10**6,
        elapsed_s=1.0,
        target_rate=1000.0,
        achieved_rate=1000.0,
        latency_service=lat(10),
        latency_delay=lat(1),
        latency_corrected=lat(12),
        latency_e2e=None,
        latency_e2e_na="worker tcp://127.0.0.1:1 clock off the coordinator's by +5.000 ms: not synchronised",
        consumed=1000,
        lost=0,
        duplicated=0,
        steal_pct=0.0,  # main's rule: a run without measured steal is NA
    )
    (row,) = rules.rows_for(cell, 1, res, c, c.entropy, 1)["A"]
    assert row["status"] == "OK"
    assert row["corrected_p99_us"] is not None and row["e2e_p99_us"] is None
    assert "e2e latency NA: worker tcp://127.0.0.1:1 clock off" in row["reason"]


def _driver(role: str, boot: str, result: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "worker": f"tcp://{boot}:1", "host": {"boot_id": boot}, "result": result}


def test_window_payloads_per_producer_schedule_and_consumer_clock() -> None:
    from kbench.engine.transports.distributed import window_payloads

    sizes = [10, 30]  # cycled: 10, 30, 10, 30, ...
    rate = 1000.0  # per producer: one message per ms
    prod = {"sent": 100, "delivered": 100, "t0_ns": 0, "first_send_ns": 0, "last_send_ns": 99_000_000}
    outs = [
        _driver("producer", "a", {**prod, "cpu": {"window_start_ns": 50_000_000}}),  # messages 50..99
        _driver("producer", "a", {**prod, "cpu": {"window_start_ns": 0}}),  # all 100
        _driver("consumer", "a", {"e2e": {"count": 5, "p50_us": 10_000.0}, "cpu": {"window_start_ns": 60_000_000}}),
        _driver("producer", "a", {**prod, "cpu": {}}),  # no window start: unknown
    ]
    got = window_payloads(outs, sizes, rate)
    assert got[0] == 25 * 40 and got[1] == 50 * 40 and got[3] is None
    # consumer: its window start less its median e2e (10 ms) = 50 ms on each producer's schedule
    assert got[2] == 3 * 25 * 40
    # a consumer on another boot than the producers cannot place its window on their clocks
    outs[2] = _driver("consumer", "b", outs[2]["result"])
    assert window_payloads(outs, sizes, rate)[2] is None


def test_merge_consumers_keeps_every_e2e_sample_and_any_timeout() -> None:
    """Two consumers' e2e histograms merge into one holding every sample (the row's e2e
    percentiles come from it), re-encoded so that a report can merge repetitions again."""
    hs, parts = [], []
    for seed, n, timed_out in ((1, 200, False), (2, 300, True)):
        h = Histogram()
        for v in random.Random(seed).sample(range(10_000, 10**8), n):
            h.record(v)
        hs.append(h)
        enc = {**(histogram_us(h) or {}), "encoded": _enc(h)}
        parts.append({"records": n, "unique": n, "lost": 0, "duplicates": 0, "timed_out": timed_out, "e2e": enc})
    m = merge.merge_consumers(parts)
    assert m["timed_out"] is True
    assert not merge.merge_consumers([dict(p, timed_out=False) for p in parts])["timed_out"]
    both = Histogram()
    for h in hs:
        both.merge(h)
    assert m["e2e"] is not None and m["e2e"]["count"] == 500
    assert m["e2e"] == {**(histogram_us(both) or {}), "encoded": _enc(both)}
    again = Histogram.decode(base64.b64decode(m["e2e"]["encoded"]))
    assert again.count == 500 and again.percentile(99.0) == both.percentile(99.0)
    # a consumer without e2e samples contributes none; none at all is None, not an empty histogram
    assert merge.merge_consumers([dict(parts[0], e2e=None), parts[1]])["e2e"]["count"] == 300
    assert merge.merge_consumers([dict(p, e2e=None) for p in parts])["e2e"] is None
    with pytest.raises(ValueError, match="no consumer results to merge"):
        merge.merge_consumers([])
    with pytest.raises(ValueError, match="no producer results to merge"):
        merge.merge_producers([])
