"""Verdicts from CSV rows only: per cell the median and range over repetitions, and pairwise
comparisons where overlapping ranges read "no significant difference".

Only rows with status ``OK`` count.  Two cells are compared when they differ only in the
experiment's compared axis (codec for A–D, batch settings for E, topic compression for F).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kbench.engine.ranges import NO_DIFF, NO_OK, TOO_FEW, RangeVerdict, range_verdict
from kbench.experiments import registry
from kbench.experiments.spec import LABELS

__all__ = [
    "CellSummary",
    "Comparison",
    "NO_DIFF",
    "NO_OK",
    "TOO_FEW",
    "RangeVerdict",
    "compare",
    "format_table",
    "range_verdict",
    "summarise",
]


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
        key = (r["cell_id"], *(r.get(k, "") for k in registry.get(experiment).row_key))
        groups.setdefault(key, []).append(r)
    out = []
    for key in sorted(groups):
        rs = groups[key]
        vals = [x for x in (_float(r.get(metric)) for r in rs if r.get("status") == "OK") if x is not None]
        labels = {c: rs[0].get(c, "") for c in (*LABELS, *registry.get(experiment).row_key)}
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
    axis = registry.get(experiment).compared
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
    metrics = [(m.column, m.unit, m.lower_is_better) for m in registry.get(experiment).headline]
    per_metric = {m: summarise(experiment, rows, m) for m, _, _ in metrics}
    first = per_metric[metrics[0][0]]
    label_cols = [c for c in LABELS if len({s.labels.get(c) for s in first}) > 1] or ["codec"]
    label_cols += registry.get(experiment).row_key
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
    vm = registry.get(experiment).verdict_metric
    m = vm.column
    comps = compare(experiment, per_metric[m], vm.lower_is_better)
    if comps:
        vrows = [
            [
                c.a.key[0],
                c.b.key[0],
                _label(c.a, registry.get(experiment).compared),
                _label(c.b, registry.get(experiment).compared),
                c.verdict,
            ]
            for c in comps
        ]
        text += f"\n\nverdicts on {m}:\n" + format_table(["cell", "vs cell", "a", "b", "verdict"], vrows)
    return text
