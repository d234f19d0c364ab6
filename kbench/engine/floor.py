"""The pipeline's latency floor, and a latency that has settled (docs/methodology.md §2).

The floor is the corrected p99 of short probe repetitions at a low rate, producer and consumer
running as A runs them.  It becomes a bound (A's p99 must stay within ``knee_factor`` × floor)
only once it is sane: probes are repeated until two successive ones agree within
:data:`AGREE_FACTOR` and the floor is below the plan's ``floor_max_ms`` (a floor of seconds means
a cluster still warming — three broker JVMs compiling, replicas settling — not a floor).  The same
rule, at a fixed low rate before anything is measured, is the cluster's warm-up
(kbench.engine.warmup): probe until the pipeline's latency is steady, not for a fixed time.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kbench.engine.transports.base import RunResult, TransportError

__all__ = ["AGREE_FACTOR", "FLOOR_PROBES", "MAX_PROBES", "Settled", "agree", "settle"]

#: Two successive probe p99s within this factor of each other: the latency has settled.
AGREE_FACTOR = 1.5
#: Probes at most, before the cluster's warm-up is given up as unsettled (and says so).
MAX_PROBES = 8
#: Probes at most of one pipeline's floor (the cluster is warm by then: a floor that needs more is
#: recorded as not settled, the median of its probes standing for it).
FLOOR_PROBES = 4


@dataclass
class Settled:
    """The probes of one settle loop: each p99 (µs, None when the probe measured none), and the
    floor: the lower of the two agreeing p99s (when none agreed, the median of those measured:
    neither a lucky probe nor a cold one stands for it)."""

    p99s_us: list[float | None] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    settled: bool = False

    @property
    def floor_us(self) -> float | None:
        got = [p for p in self.p99s_us if p is not None]
        if not got:
            return None
        if self.settled:
            return min(got[-2:])
        return float(statistics.median(got))

    def describe(self) -> str:
        ms = ", ".join("NA" if p is None else f"{p / 1000:.2f}" for p in self.p99s_us)
        if self.settled:
            return f"settled after {len(self.p99s_us)} probes (p99 ms: {ms})"
        return f"NOT settled after {len(self.p99s_us)} probes (p99 ms: {ms}): {'; '.join(self.reasons)}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "p99s_us": list(self.p99s_us),
            "settled": self.settled,
            "floor_us": self.floor_us,
            "summary": self.describe(),
        }


def agree(a: float, b: float, factor: float = AGREE_FACTOR) -> bool:
    """Whether two p99s agree within ``factor`` of each other (both > 0)."""
    lo, hi = sorted((a, b))
    return lo > 0 and hi <= lo * factor


def settle(
    probe: Callable[[int], RunResult],
    max_ms: float,
    max_probes: int = MAX_PROBES,
    log: Callable[[str], None] = lambda _: None,
    what: str = "floor",
) -> Settled:
    """Probe (``probe(n)``, n = 1, 2, ...) until two successive corrected p99s agree within
    :data:`AGREE_FACTOR` and the later one is at most ``max_ms``; at most ``max_probes`` probes."""
    out = Settled()
    for n in range(1, max_probes + 1):
        try:
            lat = probe(n).latency_corrected
            p99 = None if lat is None else float(lat.p99_us)
        except TransportError as e:
            p99 = None
            out.reasons.append(f"probe {n} failed: {e}")
        out.p99s_us.append(p99)
        log(f"{what} probe {n}: corrected p99 {'NA' if p99 is None else f'{p99 / 1000:.2f} ms'}")
        if p99 is None or n < 2:
            continue
        prev = out.p99s_us[-2]
        if prev is None or not agree(prev, p99):
            continue
        if p99 > max_ms * 1000:
            out.reasons.append(f"p99 {p99 / 1000:.1f} ms above floor_max_ms {max_ms:g}: the cluster is not warm")
            continue
        out.settled = True
        return out
    if not out.reasons:
        out.reasons.append(f"no two successive probes agreed within x{AGREE_FACTOR:g} and below {max_ms:g} ms")
    return out
