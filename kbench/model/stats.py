"""Small order statistics: nearest-rank percentiles (batch reports) and a latency histogram's figures."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "LATENCY_PERCENTILES",
    "SATURATED_FLAG",
    "counted_distribution",
    "distribution",
    "histogram_us",
    "percentile",
]

#: The flag carried by every saturated (B) latency: queueing, not service.
SATURATED_FLAG = "latency-NOT-comparable-saturated"


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of values; NaN when empty."""
    if not values:
        return math.nan
    s = sorted(values)
    k = max(1, math.ceil(q / 100 * len(s)))
    return float(s[min(k, len(s)) - 1])


def distribution(values: Sequence[float]) -> dict[str, float]:
    """p50, p90, p99 and max of values (NaN when empty)."""
    s = sorted(values)
    return {
        "p50": percentile(s, 50),
        "p90": percentile(s, 90),
        "p99": percentile(s, 99),
        "max": float(s[-1]) if s else math.nan,
    }


def counted_distribution(counts: Mapping[int, int]) -> dict[str, float]:
    """:func:`distribution` of values given as ``value -> how many times`` (nearest rank, the same figures)."""
    n = sum(counts.values())
    if n == 0:
        return {"p50": math.nan, "p90": math.nan, "p99": math.nan, "max": math.nan}
    ranks = {k: min(n, max(1, math.ceil(q / 100 * n))) for k, q in (("p50", 50), ("p90", 90), ("p99", 99))}
    out: dict[str, float] = {}
    seen = 0
    for v in sorted(counts):
        seen += counts[v]
        for k, rank in ranks.items():
            if k not in out and seen >= rank:
                out[k] = float(v)
    out["max"] = float(max(counts))
    return {k: out[k] for k in ("p50", "p90", "p99", "max")}


#: The latency percentiles every report gives: (key, percentile).
LATENCY_PERCENTILES: tuple[tuple[str, float], ...] = (
    ("p50_us", 50.0),
    ("p95_us", 95.0),
    ("p99_us", 99.0),
    ("p999_us", 99.9),
)


def histogram_us(h: Any) -> dict[str, Any] | None:
    """A latency histogram (values in ns, ``kbench._native.Histogram``) as µs figures: count,
    out_of_range, p50/p95/p99/p99.9 and max; None without a histogram."""
    if h is None:
        return None
    out: dict[str, Any] = {"count": h.count, "out_of_range": h.underflow + h.overflow}
    for name, p in LATENCY_PERCENTILES:
        v = h.percentile(p)
        out[name] = None if v is None else v / 1000.0
    out["max_us"] = None if h.max is None else h.max / 1000.0
    return out
