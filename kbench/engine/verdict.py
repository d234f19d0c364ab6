"""Verdicts from CSV rows only: per cell the median and range over repetitions, and pairwise
comparisons by the one verdict rule (:mod:`kbench.engine.judge`: the exact test, Holm-corrected,
with a minimum effect), the seed's "ranges apart" beside it.

Only rows with status ``OK`` count (and no repetition the run flagged ``DRIFT``).  Two cells are
compared when they differ only in the experiment's compared axis (codec for A–D, batch settings
for E, topic compression for F); an A/A control (``control_of``) is compared with its baseline
only, as the family's noise floor.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kbench.engine import judge
from kbench.engine.csvio import drifted
from kbench.engine.ranges import NO_DIFF, NO_OK, TOO_FEW, RangeVerdict, range_verdict
from kbench.experiments import registry
from kbench.experiments.spec import CONTROL_COLUMN, LABELS

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
    values: tuple[float, ...] = ()

    @property
    def control_of(self) -> str:
        """The baseline cell an A/A control repeats ("" for every other cell)."""
        v = self.labels.get(CONTROL_COLUMN, "")
        return "" if v in ("", "NA") else v


@dataclass(frozen=True)
class Comparison:
    metric: str
    a: CellSummary
    b: CellSummary
    verdict: str
    judgement: judge.Judgement | None = None


def _float(v: str | None) -> float | None:
    if v is None or v in ("", "NA"):
        return None
    if v in ("true", "false"):
        return 1.0 if v == "true" else 0.0
    try:
        return float(v)
    except ValueError:
        return None


def summarise(
    experiment: str, rows: Sequence[Mapping[str, str]], metric: str, drifted: frozenset[tuple[str, str]] = frozenset()
) -> list[CellSummary]:
    """Median and range of ``metric`` per cell (per cell and role for D), OK rows only; rows of a
    repetition in ``drifted`` ((cell_id, rep), flagged DRIFT by the run) count as excluded."""
    groups: dict[tuple[str, ...], list[Mapping[str, str]]] = {}
    for r in rows:
        if (r.get("cell_id", ""), r.get("rep", "")) in drifted:
            r = {**r, "status": "DRIFT"}
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
                values=tuple(vals),
            )
        )
    return out


def run_settings(man: Mapping[str, object]) -> tuple[judge.Rule, frozenset[tuple[str, str]]]:
    """A run's verdict rule (its plan's ``alpha`` and ``[min_effect]``) and the repetitions it
    flagged ``DRIFT`` (manifest ``drift``: ``"<cell> r<rep>"``) as (cell_id, rep)."""
    plan = man.get("plan")
    try:
        rule = judge.rule_from_plan(plan) if isinstance(plan, Mapping) else judge.Rule()
    except ValueError:
        rule = judge.Rule()  # a plan load refuses such a plan: only a hand-edited manifest gets here
    return rule, frozenset(drifted(man))


def _pairs(experiment: str, summaries: Sequence[CellSummary]) -> list[tuple[CellSummary, CellSummary]]:
    """Pairs of cells that differ only in the experiment's compared axis (a control in none)."""
    axis = registry.get(experiment).compared
    out = []
    for i, a in enumerate(summaries):
        for b in summaries[i + 1 :]:
            same = all(a.labels.get(k) == b.labels.get(k) for k in a.labels if k not in axis)
            if not same or all(a.labels.get(k) == b.labels.get(k) for k in axis):
                continue
            out.append((a, b))
    return out


def _aa_pairs(summaries: Sequence[CellSummary]) -> list[tuple[CellSummary, CellSummary]]:
    """(baseline, its A/A control) pairs: the control's labels but ``control_of``, its baseline's cell id."""
    out = []
    for c in summaries:
        if not c.control_of:
            continue
        for s in summaries:
            if s.key[0] == c.control_of and s.key[1:] == c.key[1:]:
                out.append((s, c))
    return out


def compare(
    experiment: str,
    summaries: Sequence[CellSummary],
    lower_is_better: bool = True,
    rule: judge.Rule | None = None,
) -> list[Comparison]:
    """Pairwise verdicts between cells that differ only in the experiment's compared axis, by the
    one rule (one family: these summaries' metric), after the A/A pairs (``aa`` in the text's
    place: their own judgement), which withhold every verdict when one of them differs."""
    rule = rule or judge.Rule()
    axis = registry.get(experiment).compared
    metric = summaries[0].metric if summaries else ""
    aa = _aa_pairs(summaries)
    aa_j = judge.judge([(_sample(a, axis), _sample(b, axis)) for a, b in aa], metric, lower_is_better, rule)
    noise = any(judge.aa_differs(j) for j in aa_j)
    pairs = _pairs(experiment, summaries)
    js = judge.judge([(_sample(a, axis), _sample(b, axis)) for a, b in pairs], metric, lower_is_better, rule, noise)
    out = [
        Comparison(metric, a, b, "A/A: " + ("differs: " + judge.NOISE if judge.aa_differs(j) else j.text), j)
        for (a, b), j in zip(aa, aa_j)
    ]
    return out + [Comparison(metric, a, b, j.text, j) for (a, b), j in zip(pairs, js)]


def _sample(s: CellSummary, axis: Sequence[str]) -> judge.Sample:
    return judge.Sample(_label(s, axis), s.values)


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


def headline(
    experiment: str,
    rows: Sequence[Mapping[str, str]],
    rule: judge.Rule | None = None,
    drifted: frozenset[tuple[str, str]] = frozenset(),
) -> str:
    """The experiment's table (median [min–max] per cell) followed by its pairwise verdicts."""
    metrics = registry.get(experiment).headline
    per_metric = {m.column: summarise(experiment, rows, m.column, drifted) for m in metrics}
    first = per_metric[metrics[0].column]
    label_cols = [c for c in LABELS if len({s.labels.get(c) for s in first}) > 1] or ["codec"]
    label_cols += registry.get(experiment).row_key
    headers = ["cell", *label_cols, "n"] + [f"{m.column} ({m.unit})" if m.unit else m.column for m in metrics]
    table_rows = []
    for i, s in enumerate(first):
        cells = [
            s.key[0],
            *(str(s.labels.get(c, "")) for c in label_cols),
            f"{s.n}" + (f" (+{s.excluded} excl.)" if s.excluded else ""),
        ]
        for m in metrics:
            t = per_metric[m.column][i]
            if t.median is None:
                cells.append("NA")
            elif m.shown is not None:
                cells.append(m.shown(t.median, t.lo, t.hi))
            else:
                cells.append(f"{_fmt(t.median)} [{_fmt(t.lo)}–{_fmt(t.hi)}]")
        table_rows.append(cells)
    text = format_table(headers, table_rows)
    vm = registry.get(experiment).verdict_metric
    comps = compare(experiment, per_metric[vm.column], vm.lower_is_better, rule)
    if comps:
        axis = registry.get(experiment).compared
        floor = next((c for c in comps if c.verdict.startswith("A/A")), None)
        floor_text = _effect(floor, vm.unit) if floor is not None else ""
        vrows = [
            [
                c.a.key[0],
                c.b.key[0],
                _label(c.a, axis),
                _label(c.b, axis),
                c.verdict,
                _effect(c, vm.unit),
                c.judgement.ranges if c.judgement else "",
                *([floor_text] if floor is not None else []),
            ]
            for c in comps
        ]
        text += f"\n\nverdicts on {vm.column} (effect: b − a, Hodges–Lehmann shift [{100 * (1 - (rule or judge.Rule()).alpha):g} % interval], exact test, Holm-corrected p):\n"
        text += format_table(
            ["cell", "vs cell", "a", "b", "verdict", "effect, p, n", "seed rule"]
            + (["A/A noise floor"] if floor is not None else []),
            vrows,
        )
    return text


def _effect(c: Comparison, unit: str) -> str:
    j = c.judgement
    if j is None or j.test is None or j.p_adj is None:
        return "—"
    return judge.effect_text(j.test, j.p_adj, c.metric, unit)
