"""How a report prints a figure: each format's text of a value (one rule for the report and
for ``--verify``, which reprints every recomputed figure)."""

from __future__ import annotations

import math
from collections.abc import Callable

from kbench.engine import judge
from kbench.reporting.pricing import PRICE_UNITS

__all__ = ["FORMATS", "UNITS", "fmt"]

#: Unit constants the ``scale`` operation may use (named, never typed into a report).
UNITS: dict[str, float] = {
    "B->GiB": 1 / (1 << 30),
    "B->MiB": 1 / (1 << 20),
    "us->ms": 1e-3,
    "frac->pct": 100.0,
    **PRICE_UNITS,  # the priced choice's unit prices and defaults (kbench advise's cost model)
}


def _auto(v: float) -> str:
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 100:
        return f"{v:,.0f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


#: How each format prints a value.
FORMATS: dict[str, Callable[[float], str]] = {
    "auto": _auto,
    "int": lambda v: f"{v:,.0f}",
    "pct": lambda v: f"{v:+.0f}%",
    "pct1": lambda v: f"{v:.1f}%",
    "x": lambda v: f"{_auto(v)}×",
    "f3": lambda v: f"{v:.3f}",
    "f2": lambda v: f"{v:.2f}",
    # bytes per GB of payload printed as GB per GB (a readable ratio, not a 9-digit count)
    "gb/gb": lambda v: f"{v / 1e9:.3f}",
    # a value in µs printed in ms (what Kafka engineers read), three significant digits or more
    "ms": lambda v: _auto(v / 1000),
    "ms+": lambda v: ("+" if v > 0 else "") + _auto(v / 1000),  # a difference in µs, signed, in ms
    "p": judge.p_text,  # a verdict's p value (kbench.engine.judge)
    "g": lambda v: f"{v:g}",  # a setting of the verdict rule (alpha %, n)
}


def fmt(value: float | None, kind: str = "auto") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "NA"
    return FORMATS[kind](float(value))
