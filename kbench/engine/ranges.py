"""The one verdict rule (docs/methodology.md): two cells' ranges over OK repetitions, compared.

Ranges that overlap or touch read "no significant difference"; fewer than 2 OK repetitions on a
side is not comparable.  A leaf: the engine's console tables and the report's figures both use it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NO_DIFF", "NO_OK", "TOO_FEW", "RangeVerdict", "range_verdict"]

NO_DIFF = "no significant difference"


NO_OK = "not comparable (no OK repetitions)"


TOO_FEW = "not comparable (fewer than 2 OK repetitions)"


@dataclass(frozen=True)
class RangeVerdict:
    """The overlap rule's outcome: ``text`` is :data:`NO_DIFF`, a not-comparable reason, or
    ``apart``; when apart, ``a_lower`` says which side's range lies below the other's."""

    text: str
    a_lower: bool | None = None

    @property
    def apart(self) -> bool:
        return self.a_lower is not None


def range_verdict(
    a_n: int,
    a_lo: float | None,
    a_hi: float | None,
    b_n: int,
    b_lo: float | None,
    b_hi: float | None,
) -> RangeVerdict:
    """The one verdict rule (docs/methodology.md): no OK repetition on a side, or fewer than
    2, → not comparable (with that reason); ranges [lo, hi] that overlap or touch → no
    significant difference; otherwise the ranges are apart and ``a_lower`` tells the order."""
    if a_n < 1 or b_n < 1 or a_lo is None or a_hi is None or b_lo is None or b_hi is None:
        return RangeVerdict(NO_OK)
    if a_n < 2 or b_n < 2:
        return RangeVerdict(TOO_FEW)
    if a_lo <= b_hi and b_lo <= a_hi:
        return RangeVerdict(NO_DIFF)
    return RangeVerdict("apart", a_hi < b_lo)
