"""The C log-linear histogram: accuracy, out-of-range counting, merge, serialisation, cost."""

from __future__ import annotations

import math
import pickle
import random

import pytest

from kbench._native import HISTOGRAM_MAX_NS, Histogram, histogram_record_cost


def exact_percentile(sorted_vals: list[int], p: float) -> int:
    return sorted_vals[max(1, math.ceil(p / 100 * len(sorted_vals))) - 1]


def test_percentiles_have_three_significant_digits() -> None:
    rng = random.Random(1)
    vals = [int(10 ** rng.uniform(3, 10.8)) for _ in range(50_000)]  # 1 µs .. ~63 s
    h = Histogram()
    for v in vals:
        h.record(v)
    vals.sort()
    assert h.count == len(vals) and h.underflow == 0 and h.overflow == 0
    assert h.min == vals[0] and h.max == vals[-1]
    for p in (0.1, 1, 10, 50, 90, 99, 99.9, 99.99, 100):
        got, want = h.percentile(p), exact_percentile(vals, p)
        assert abs(got - want) <= want / 1000, (p, got, want)
    ps = [h.percentile(p) for p in (50, 90, 99, 99.9, 100)]
    assert ps == sorted(ps)
    assert h.mean == pytest.approx(sum(vals) / len(vals), rel=1e-9)


def test_range_covers_one_microsecond_to_sixty_seconds_and_counts_the_rest() -> None:
    h = Histogram()
    assert HISTOGRAM_MAX_NS >= 60 * 10**9
    for v in (1_000, 60 * 10**9, HISTOGRAM_MAX_NS):
        h.record(v)
    h.record(-1)
    h.record(HISTOGRAM_MAX_NS + 1)
    h.record(10**15)
    assert (h.count, h.underflow, h.overflow) == (3, 1, 2)
    assert h.percentile(0) == 1_000
    assert h.max == HISTOGRAM_MAX_NS


def test_empty_histogram() -> None:
    h = Histogram()
    assert h.count == 0 and h.percentile(50) is None and h.min is None and h.mean is None
    with pytest.raises(ValueError, match="percentile"):
        h.percentile(101)


def test_merge_equals_recording_everything_in_one() -> None:
    rng = random.Random(2)
    a, b, both = Histogram(), Histogram(), Histogram()
    for i in range(20_000):
        v = rng.randint(1, 10**9)
        (a if i % 3 else b).record(v)
        both.record(v)
    a.merge(b)
    assert a.count == both.count
    assert a.buckets() == both.buckets()
    assert [a.percentile(p) for p in (50, 99, 100)] == [both.percentile(p) for p in (50, 99, 100)]


def test_encode_decode_and_pickle_roundtrip() -> None:
    h = Histogram()
    for v in (5, 1_000, 1_234_567, 10**10, -3):
        h.record(v)
    for g in (Histogram.decode(h.encode()), pickle.loads(pickle.dumps(h))):
        assert g.buckets() == h.buckets()
        assert (g.count, g.underflow, g.overflow, g.min, g.max) == (h.count, h.underflow, h.overflow, h.min, h.max)
    with pytest.raises(ValueError, match="kbench histogram"):
        Histogram.decode(b"nope" + bytes(60))
    bad = bytearray(h.encode())
    bad[4] ^= 1  # total no longer matches the counters
    with pytest.raises(ValueError, match="add up"):
        Histogram.decode(bytes(bad))


def test_buckets_are_ascending_and_cover_their_values() -> None:
    h = Histogram()
    for v in (7, 2047, 2048, 2049, 123_456_789):
        h.record(v)
    bs = h.buckets()
    assert sum(c for _, _, c in bs) == 5
    assert all(lo <= hi for lo, hi, _ in bs) and [b[0] for b in bs] == sorted(b[0] for b in bs)
    assert any(lo <= 123_456_789 <= hi and (hi - lo) / lo < 1 / 1000 for lo, hi, _ in bs)


def test_recording_is_cheap() -> None:
    # The benchmark figure (benchmarks/README.md) is ~7 ns; this bound only catches regressions
    # by an order of magnitude on a loaded CI machine.
    assert 0 < histogram_record_cost(2_000_000) < 200
