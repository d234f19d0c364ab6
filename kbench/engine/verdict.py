"""Verdicts from CSV rows only: per cell the median and range over repetitions, and pairwise
comparisons where overlapping ranges read "no significant difference".

Only rows with status ``OK`` count.  Two cells are compared when they differ only in the
experiment's compared axis (codec for A–D, batch settings for E, topic compression for F).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kbench.engine.experiments import EXPERIMENTS, LABELS

__all__ = [
    "CellSummary",
    "Comparison",
    "HEADLINE",
    "NO_DIFF",
    "NO_OK",
    "TOO_FEW",
    "RangeVerdict",
    "compare",
    "format_table",
    "range_verdict",
    "summarise",
]

NO_DIFF = "no significant difference"
NO_OK = "not comparable (no OK repetitions)"
TOO_FEW = "not comparable (fewer than 2 OK repetitions)"

#: Per experiment: (metric column, unit, lower is better?) shown in headline tables.
HEADLINE: dict[str, tuple[tuple[str, str, bool], ...]] = {
    k: tuple((m.column, m.unit, m.lower_is_better) for m in e.headline) for k, e in EXPERIMENTS.items() if e.in_run
}


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


@dataclass(frozen=True)
class CellSummary:
    key: tuple[str, ...]  # cell_id (and role for D)
    labels: Mapping[str, str]
    metric: str
    n: int
    excluded: int
    median: float | None
    lo: float | None
    hi: float | None


@dataclass(frozen=True)
class Comparison:
    metric: str
    a: CellSummary
    b: CellSummary
    verdict: str


def _float(v: str | None) -> float | None:
    if v is None or v in ("", "NA"):
        return None
    if v in ("true", "false"):
        return 1.0 if v == "true" else 0.0
    try:
        return float(v)
    except ValueError:
        return None


def summarise(experiment: str, rows: Sequence[Mapping[str, str]], metric: str) -> list[CellSummary]:
    """Median and range of ``metric`` per cell (per cell and role for D), OK rows only."""
    groups: dict[tuple[str, ...], list[Mapping[str, str]]] = {}
    for r in rows:
        key = (r["cell_id"], *(r.get(k, "") for k in EXPERIMENTS[experiment].row_key))
        groups.setdefault(key, []).append(r)
    out = []
    for key in sorted(groups):
        rs = groups[key]
        vals = [x for x in (_float(r.get(metric)) for r in rs if r.get("status") == "OK") if x is not None]
        labels = {c: rs[0].get(c, "") for c in (*LABELS, *EXPERIMENTS[experiment].row_key)}
        out.append(
            CellSummary(
                key=key,
                labels=labels,
                metric=metric,
                n=len(vals),
                excluded=len(rs) - len(vals),
                median=statistics.median(vals) if vals else None,
                lo=min(vals) if vals else None,
                hi=max(vals) if vals else None,
            )
        )
    return out


def compare(experiment: str, summaries: Sequence[CellSummary], lower_is_better: bool = True) -> list[Comparison]:
    """Pairwise verdicts between cells that differ only in the experiment's compared axis."""
    axis = EXPERIMENTS[experiment].compared
    out = []
    for i, a in enumerate(summaries):
        for b in summaries[i + 1 :]:
            same = all(a.labels.get(k) == b.labels.get(k) for k in a.labels if k not in axis)
            if not same or all(a.labels.get(k) == b.labels.get(k) for k in axis):
                continue
            rv = range_verdict(a.n, a.lo, a.hi, b.n, b.lo, b.hi)
            verdict = rv.text
            if rv.apart:
                better = a if (rv.a_lower == lower_is_better) else b
                verdict = f"{_label(better, axis)} better"
            out.append(Comparison(a.metric, a, b, verdict))
    return out


def _label(s: CellSummary, axis: Sequence[str]) -> str:
    parts = [f"{s.labels.get(k)}" for k in axis]
    if s.labels.get("role"):
        parts.append(s.labels["role"])
    return "/".join(parts)


def _fmt(v: float | None) -> str:
    if v is None:
        return "NA"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    sep = "  ".join("-" * w for w in widths)
    body = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join([line, sep, *body])


def headline(experiment: str, rows: Sequence[Mapping[str, str]]) -> str:
    """The experiment's table (median [min–max] per cell) followed by its pairwise verdicts."""
    metrics = HEADLINE[experiment]
    per_metric = {m: summarise(experiment, rows, m) for m, _, _ in metrics}
    first = per_metric[metrics[0][0]]
    label_cols = [c for c in LABELS if len({s.labels.get(c) for s in first}) > 1] or ["codec"]
    label_cols += EXPERIMENTS[experiment].row_key
    headers = ["cell", *label_cols, "n"] + [f"{m} ({u})" if u else m for m, u, _ in metrics]
    table_rows = []
    for i, s in enumerate(first):
        cells = [
            s.key[0],
            *(str(s.labels.get(c, "")) for c in label_cols),
            f"{s.n}" + (f" (+{s.excluded} excl.)" if s.excluded else ""),
        ]
        for m, _, _ in metrics:
            t = per_metric[m][i]
            if m == "recompressed":
                cells.append(
                    "NA"
                    if t.median is None
                    else ("true" if t.median >= 0.5 else "false") + ("" if t.lo == t.hi else " (mixed)")
                )
            else:
                cells.append("NA" if t.median is None else f"{_fmt(t.median)} [{_fmt(t.lo)}–{_fmt(t.hi)}]")
        table_rows.append(cells)
    text = format_table(headers, table_rows)
    vm = EXPERIMENTS[experiment].verdict_metric
    m = vm.column
    comps = compare(experiment, per_metric[m], vm.lower_is_better)
    if comps:
        vrows = [
            [
                c.a.key[0],
                c.b.key[0],
                _label(c.a, EXPERIMENTS[experiment].compared),
                _label(c.b, EXPERIMENTS[experiment].compared),
                c.verdict,
            ]
            for c in comps
        ]
        text += f"\n\nverdicts on {m}:\n" + format_table(["cell", "vs cell", "a", "b", "verdict"], vrows)
    return text
