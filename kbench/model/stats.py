"""Small order statistics shared by the batch reports (nearest-rank percentiles)."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["percentile", "distribution"]


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
