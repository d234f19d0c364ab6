"""The verdict statistic (docs/methodology.md §5): an exact two-sample test with a known false-verdict rate.

- :func:`mann_whitney_p`: the exact two-sided p of the Wilcoxon–Mann–Whitney rank-sum test, from
  the complete permutation distribution of the first sample's rank sum (every one of the
  C(na + nb, na) splits of the pooled values, counted, not sampled); ties take mid-ranks and the
  distribution is that of the tied ranks, so ties are exact too.  Two-sided p is twice the smaller
  tail, at most 1 (as ``scipy.stats.permutation_test``).
- :func:`hodges_lehmann`: the shift ``b − a`` (the median of all na × nb differences) and its
  distribution-free confidence interval (order statistics of the differences picked from the
  same exact distribution; Lehmann 1975).  With too few repetitions for the level asked the
  interval is the whole range of the differences, and :attr:`Shift.conf` says what it covers.
- :func:`holm`: Holm's step-down adjustment of a family of p values.
- :func:`min_p`, :func:`needed_n`: the smallest p complete separation can give (2 / C(na + nb, na))
  and the repetitions per cell a test at ``alpha`` needs.

Pure Python, exact integer counting: no numpy in the engine.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "TWO_SAMPLE_OPS",
    "Shift",
    "two_sample",
    "compare_samples",
    "hodges_lehmann",
    "holm",
    "mann_whitney_p",
    "min_p",
    "needed_n",
    "spearman",
]


def min_p(na: int, nb: int) -> float:
    """The smallest two-sided p the exact test can give: the samples completely apart, no ties."""
    return min(1.0, 2 / math.comb(na + nb, na))


def needed_n(alpha: float) -> int:
    """The repetitions per cell (equal on both sides) with which complete separation reaches ``alpha``."""
    n = 1
    while min_p(n, n) > alpha:
        n += 1
    return n


@lru_cache(maxsize=256)
def _sum_counts(values2: tuple[int, ...], k: int) -> tuple[int, ...]:
    """counts[s]: how many k-subsets of the multiset ``values2`` (doubled mid-ranks) sum to s."""
    total = sum(values2)
    rows = [[0] * (total + 1) for _ in range(k + 1)]
    rows[0][0] = 1
    for i, v in enumerate(values2):
        for j in range(min(i + 1, k), 0, -1):
            src, dst = rows[j - 1], rows[j]
            for s in range(total - v, -1, -1):
                c = src[s]
                if c:
                    dst[s + v] += c
    return tuple(rows[k])


def _midranks2(pooled: Sequence[float]) -> list[int]:
    """Twice the mid-rank of each value (integers: a tie group's mid-rank is a multiple of 1/2)."""
    order = sorted(range(len(pooled)), key=lambda i: pooled[i])
    out = [0] * len(pooled)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and pooled[order[j + 1]] == pooled[order[i]]:
            j += 1
        for t in range(i, j + 1):
            out[order[t]] = i + j + 2  # 2 × mean of ranks i+1 … j+1
        i = j + 1
    return out


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation of paired samples (mid-ranks for ties); at least 2 pairs, and
    neither sample constant."""
    if len(x) != len(y):
        raise ValueError(f"spearman: {len(x)} and {len(y)} values; the samples must be paired")
    return statistics.correlation(_midranks2(x), _midranks2(y))


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Exact two-sided p of the rank-sum test of ``a`` against ``b`` (ties: their exact distribution)."""
    na, nb = len(a), len(b)
    if na == 0 or nb == 0:
        return 1.0
    r2 = _midranks2([*a, *b])
    t = sum(r2[:na])
    counts = _sum_counts(tuple(sorted(r2)), na)
    total = math.comb(na + nb, na)
    low = sum(counts[: t + 1])
    high = sum(counts[t:])
    return min(1.0, 2 * min(low, high) / total)


def _u_cdf(na: int, nb: int) -> list[float]:
    """P(U ≤ u) for u = 0 … na·nb, U the Mann–Whitney count under no ties."""
    counts = _sum_counts(tuple(range(2, 2 * (na + nb) + 1, 2)), na)
    base = na * (na + 1)  # doubled rank sum of the smallest possible ranks
    total = math.comb(na + nb, na)
    acc, out = 0, []
    for u in range(na * nb + 1):
        acc += counts[base + 2 * u]
        out.append(acc / total)
    return out


@dataclass(frozen=True)
class Shift:
    """Two cells compared: the Hodges–Lehmann shift ``b − a``, its interval [lo, hi] covering with
    probability ``conf``, the exact two-sided p and the repetitions of each side."""

    shift: float
    lo: float
    hi: float
    conf: float
    p: float
    na: int
    nb: int


def hodges_lehmann(a: Sequence[float], b: Sequence[float], conf: float = 0.95) -> tuple[float, float, float, float]:
    """(shift, lo, hi, achieved coverage): the median of the differences ``b_j − a_i`` and the
    distribution-free interval of at least ``conf`` (or, with too few repetitions, all differences)."""
    na, nb = len(a), len(b)
    d = sorted(y - x for x in a for y in b)
    m = len(d)
    mid = m // 2
    shift = d[mid] if m % 2 else (d[mid - 1] + d[mid]) / 2
    cdf = _u_cdf(na, nb)
    tail = (1 - conf) / 2
    # the interval [d_(k), d_(m+1-k)] (1-based) covers with probability 1 − 2·P(U ≤ k−1): the
    # largest k whose tail P(U ≤ k−1) stays within (1 − conf) / 2; none (k = 0): the whole range
    k = 0
    while k + 1 <= m // 2 and cdf[k] <= tail + 1e-12:
        k += 1
    if k == 0:
        return shift, d[0], d[-1], 1 - 2 * cdf[0]
    return shift, d[k - 1], d[m - k], 1 - 2 * cdf[k - 1]


def compare_samples(a: Sequence[float], b: Sequence[float], conf: float = 0.95) -> Shift:
    """The exact test and the shift of ``b`` against ``a`` (both need at least one value)."""
    shift, lo, hi, achieved = hodges_lehmann(a, b, conf)
    return Shift(shift, lo, hi, achieved, mann_whitney_p(a, b), len(a), len(b))


def holm(ps: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p values, in the order given (each ≤ 1, monotone in the raw order)."""
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        out[i] = running
    return out


#: The figures a report prints of a comparison (kbench.reporting.provenance recomputes them).
TWO_SAMPLE_OPS = ("hl_shift", "hl_lo", "hl_hi", "mw_p")


def two_sample(op: str, a: Sequence[float], b: Sequence[float], conf: float) -> float:
    """One figure of ``b`` against ``a``: the shift, its interval's ends, or the exact p."""
    if op == "mw_p":
        return mann_whitney_p(a, b)
    shift, lo, hi, _ = hodges_lehmann(a, b, conf)
    return {"hl_shift": shift, "hl_lo": lo, "hl_hi": hi}[op]
