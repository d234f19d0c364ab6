"""Median and range per group of rows, as ledger figures: the arithmetic behind a report.

Only rows with ``status == "OK"`` and a value in the metric column count (the method's rule:
excluded rows never enter a figure).  Each group's figures reference exactly the rows they
were computed from (see :mod:`kbench.provenance`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from kbench.provenance import Fig, Ledger

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["NO_DIFF", "Stat", "label_text", "overlap_verdict", "stats", "varying"]

NO_DIFF = "no significant difference"


@dataclass(frozen=True)
class Stat:
    """Median, range and number of OK repetitions of one metric in one group."""

    median: Fig
    lo: Fig
    hi: Fig
    n: Fig

    @property
    def ok(self) -> bool:
        return self.median.ok

    def cell(self) -> str:
        """``median [lo–hi]`` (or ``NA``)."""
        if not self.ok:
            return "NA"
        if self.lo.text == self.hi.text:
            return f"{self.median} [{self.lo}]"
        return f"{self.median} [{self.lo}–{self.hi}]"

    def range(self) -> str:
        return "NA" if not self.ok else f"{self.lo}–{self.hi}"


def label_text(v: Any) -> str:
    """A label value as the CSV wrote it (integers without ``.0``)."""
    if v is None:
        return "NA"
    if isinstance(v, float):
        if v != v:
            return "NA"
        if v.is_integer():
            return str(int(v))
    return str(v)


def varying(df: "pd.DataFrame", cols: Sequence[str]) -> list[str]:
    """The columns of ``cols`` present in ``df`` that hold more than one value."""
    return [c for c in cols if c in df.columns and df[c].astype(str).nunique() > 1]


def stats(
    ledger: Ledger,
    df: "pd.DataFrame",
    exp: str,
    metric: str,
    keys: Sequence[str],
    kind: str = "auto",
    only_ok: bool = True,
) -> dict[tuple[str, ...], Stat]:
    """Per group of ``keys``: median, min, max and count of ``metric`` over OK rows (over
    every row with ``only_ok=False``, for settings such as the target rate)."""
    out: dict[tuple[str, ...], Stat] = {}
    if metric not in df.columns or df.empty:
        return out
    ok = df[((df["status"] == "OK") | (not only_ok)) & df[metric].notna()]
    try:
        values = ok[metric].astype(float).to_numpy()
    except (TypeError, ValueError):
        return out
    runs = ok["_run"].to_numpy()
    rows = ok["_row"].to_numpy()
    if ok.empty:
        return out
    groups = ok.groupby(list(keys), sort=False, dropna=False).indices if keys else {(): range(len(ok))}
    for key, idx in groups.items():
        k = key if isinstance(key, tuple) else (key,)
        ktext = tuple(label_text(x) for x in k)
        vals = [float(values[i]) for i in idx]
        sid = ledger.row_set((int(runs[i]), exp, int(rows[i])) for i in idx)
        out[ktext] = Stat(
            median=ledger.agg("median", vals, sid, metric, kind),
            lo=ledger.agg("min", vals, sid, metric, kind),
            hi=ledger.agg("max", vals, sid, metric, kind),
            n=ledger.agg("count", vals, sid, metric, "int"),
        )
    return out


def overlap_verdict(a: Stat, b: Stat, lower: str = "lower", higher: str = "higher") -> str:
    """``no significant difference`` when the ranges overlap, else which side is higher."""
    if not (a.ok and b.ok):
        return "not comparable (no OK repetitions)"
    assert a.lo.value is not None and a.hi.value is not None and b.lo.value is not None and b.hi.value is not None
    if a.lo.value <= b.hi.value and b.lo.value <= a.hi.value:
        return NO_DIFF
    return higher if b.lo.value > a.hi.value else lower
