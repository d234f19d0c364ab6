"""Median and range per group of rows, as ledger figures: the arithmetic behind a report.

Only rows with ``status == "OK"`` and a value in the metric column count (the method's rule:
excluded rows never enter a figure).  Each group's figures reference exactly the rows they
were computed from (see :mod:`kbench.reporting.provenance`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kbench.reporting.provenance import Fig, Ledger

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Stat", "empty_stat", "stats_many", "label_text", "stats", "varying"]


class Stat:
    """Median, range and number of OK repetitions of one metric in one group.

    The figures are entered in the ledger when first used, so a number that a report does
    not print costs nothing."""

    __slots__ = (
        "_ledger",
        "_set",
        "_metric",
        "_kind",
        "_med",
        "_lo",
        "_hi",
        "_n",
        "_fmed",
        "_flo",
        "_fhi",
        "_fn",
        "values",
    )

    def __init__(
        self,
        ledger: Ledger,
        set_id: int,
        metric: str,
        kind: str,
        med: float | None,
        lo: float | None,
        hi: float | None,
        n: int,
        values: Sequence[float] = (),
    ) -> None:
        self._ledger, self._set, self._metric, self._kind = ledger, set_id, metric, kind
        self.values = tuple(values)  # the OK repetitions' values (the verdict's test reads them)
        self._med, self._lo, self._hi, self._n = med, lo, hi, float(n)
        self._fmed: Fig | None = None
        self._flo: Fig | None = None
        self._fhi: Fig | None = None
        self._fn: Fig | None = None

    def _fig(self, op: str) -> Fig:
        if op == "median":
            return self.median
        if op == "min":
            return self.lo
        if op == "max":
            return self.hi
        if op == "count":
            return self.n
        raise KeyError(op)

    @property
    def median(self) -> Fig:
        f = self._fmed
        if f is None:
            f = self._fmed = self._ledger._add(self._med, self._kind, "median", self._set, self._metric)
        return f

    @property
    def lo(self) -> Fig:
        f = self._flo
        if f is None:
            f = self._flo = self._ledger._add(self._lo, self._kind, "min", self._set, self._metric)
        return f

    @property
    def hi(self) -> Fig:
        f = self._fhi
        if f is None:
            f = self._fhi = self._ledger._add(self._hi, self._kind, "max", self._set, self._metric)
        return f

    @property
    def n(self) -> Fig:
        f = self._fn
        if f is None:
            f = self._fn = self._ledger._add(self._n, "int", "count", self._set, self._metric)
        return f

    @property
    def set_id(self) -> int:
        return self._set

    @property
    def ok(self) -> bool:
        return self._med is not None

    def value(self, op: str) -> float | None:
        """A value without entering it in the ledger (for comparisons)."""
        if op == "median":
            return self._med
        if op == "min":
            return self._lo
        if op == "max":
            return self._hi
        if op == "count":
            return self._n
        raise KeyError(op)

    def cell(self) -> str:
        """``median [lo–hi]`` (or ``NA``)."""
        if self._med is None:
            return "NA"
        lo, hi = self.lo.text, self.hi.text  # the ledger order: min, max, then median
        med = self.median.text
        if lo == hi:
            return f"{med} [{lo}]"
        return f"{med} [{lo}–{hi}]"

    def range(self) -> str:
        return "NA" if self._med is None else f"{self.lo.text}–{self.hi.text}"


def empty_stat(ledger: Ledger, metric: str) -> Stat:
    """A group with no OK row: NA, n = 0."""
    return Stat(ledger, ledger.row_set("", [], {}), metric, "auto", None, None, None, 0)


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


def varying(df: pd.DataFrame, cols: Sequence[str]) -> list[str]:
    """The columns of ``cols`` present in ``df`` that hold more than one value."""
    return [c for c in cols if c in df.columns and df[c].astype(str).nunique() > 1]


def stats(
    ledger: Ledger,
    df: pd.DataFrame,
    exp: str,
    metric: str,
    keys: Sequence[str],
    kind: str = "auto",
    only_ok: bool = True,
) -> dict[tuple[str, ...], Stat]:
    """Per group of ``keys``: median, min, max and count of ``metric`` over OK rows (over
    every row with ``only_ok=False``, for settings such as the target rate)."""
    return stats_many(ledger, df, exp, {metric: kind}, keys, only_ok).get(metric, {})


def stats_many(
    ledger: Ledger,
    df: pd.DataFrame,
    exp: str,
    metrics: Mapping[str, str],
    keys: Sequence[str],
    only_ok: bool = True,
) -> dict[str, dict[tuple[str, ...], Stat]]:
    """:func:`stats` for several metrics (name → format) with one group-by."""
    import pandas as pd

    cols = [m for m in metrics if m in df.columns and pd.api.types.is_numeric_dtype(df[m])]
    out: dict[str, dict[tuple[str, ...], Stat]] = {m: {} for m in metrics}
    if df.empty or not cols:
        return out
    base = df[df["status"] == "OK"] if only_ok else df
    base = base.loc[base[cols].notna().any(axis=1), [*keys, *cols, "_gid"]]
    if base.empty:
        return out
    gids = base["_gid"].to_numpy()
    texts = not any(pd.api.types.is_numeric_dtype(base[k]) for k in keys)
    if keys:
        g = base.groupby(list(keys), sort=False)
        agg = g[cols].agg(["median", "min", "max", "count"])
        indices = g.indices
    else:
        agg = base[cols].agg(["median", "min", "max", "count"]).unstack().to_frame().T
        agg.index = pd.Index([()], tupleize_cols=False)
        indices = {(): range(len(base))}
    shared: dict[object, int] = {}
    for m in cols:
        complete = bool(base[m].notna().all())
        notna = base[m].notna().to_numpy()
        col = base[m].to_numpy()
        med, lo, hi, n = (agg[(m, a)].to_numpy() for a in ("median", "min", "max", "count"))
        kind = metrics[m]
        res = out[m]
        for i, key in enumerate(agg.index):
            if n[i] == 0:
                continue
            idx = indices[key]
            k = key if isinstance(key, tuple) else (key,)
            label = k if texts else tuple(label_text(x) for x in k)
            if complete:
                sid = shared.get(key)
                if sid is None:
                    sid = shared[key] = ledger.row_set(exp, gids[idx], _where(keys, label, only_ok))
            else:
                sid = ledger.row_set(exp, gids[idx][notna[idx]], _where(keys, label, only_ok))
            vals = [float(x) for x in col[idx][notna[idx]]]
            res[label] = Stat(ledger, sid, m, kind, float(med[i]), float(lo[i]), float(hi[i]), int(n[i]), vals)
    return out


def _where(keys: Sequence[str], label: Sequence[Any], only_ok: bool) -> dict[str, str]:
    """The selection of one group: its labels, and ``status = OK`` for a measurement."""
    where = {k: label_text(v) for k, v in zip(keys, label)}
    if only_ok:
        where["status"] = "OK"
    return where


def values_that_ran(
    ledger: Ledger, df: pd.DataFrame, exp: str, column: str, keys: Sequence[str], kind: str = "int"
) -> dict[tuple[str, ...], str]:
    """Per group of ``keys``: the values of the setting ``column`` its rows ran at (all rows, OK or
    not): the one value, or the two (``a / b``), or the lowest and highest of more (``a … b``):
    a pooled report lists rates that ran, never a median of them that no repetition ran."""
    out = {}
    for k, s in stats(ledger, df, exp, column, keys, kind, only_ok=False).items():
        lo, hi = s.value("min"), s.value("max")
        if lo == hi:
            out[k] = s.median.text
            continue
        sel = df
        for c, v in zip(keys, k):
            sel = sel[sel[c].map(label_text) == v]
        many = sel[column].nunique() > 2
        out[k] = f"{s.lo} … {s.hi}" if many else f"{s.lo} / {s.hi}"
    return out
