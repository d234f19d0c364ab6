"""The report's verdicts: the one rule (:mod:`kbench.engine.judge`) on a report's groups, every
number a ledger figure (the shift, its interval, the exact p and its Holm adjustment, n, the
rule's alpha and minimum effects), the seed's "ranges apart" and the A/A noise floor beside it.

A family is one experiment's comparisons on one metric as a section draws them; an A/A pair
(the baseline cell and its control, ``control_of``) is judged first, and when it comes out
different every verdict of the family is withheld.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kbench.engine import judge
from kbench.engine.ranges import NO_DIFF
from kbench.experiments.spec import CONTROL_COLUMN
from kbench.reporting.provenance import Fig
from kbench.reporting.summary import Stat

if TYPE_CHECKING:
    from kbench.reporting.context import ReportContext

__all__ = ["Judged", "aa_pairs", "family", "rule_of"]

Key = tuple[str, ...]


@dataclass(frozen=True)
class Judged:
    """``text``: the verdict (quality words, or why there is none); ``detail``: effect, interval,
    p, n, the seed's rule and the noise floor; ``decided``: it names a better cell."""

    text: str
    detail: str = ""
    decided: bool = False

    def __str__(self) -> str:
        return f"{self.text} ({self.detail})" if self.detail else self.text


def rule_of(ctx: ReportContext) -> tuple[judge.Rule, int]:
    """The verdict rule of the report's first run (its plan's ``alpha`` and ``[min_effect]``)."""
    run = ctx.runs[0]
    plan = run.manifest.get("plan")
    try:
        return (judge.rule_from_plan(plan) if isinstance(plan, Mapping) else judge.Rule()), run.index
    except ValueError:
        return judge.Rule(), run.index


def aa_pairs(st: Mapping[Key, Stat], keys: Sequence[str]) -> list[tuple[Key, Key]]:
    """(baseline key, control key) of every A/A control among the groups (``control_of`` a key column)."""
    if CONTROL_COLUMN not in keys:
        return []
    pos = list(keys).index(CONTROL_COLUMN)
    out = []
    for k in st:
        if k[pos] not in ("", "NA"):
            b = k[:pos] + ("NA",) + k[pos + 1 :]
            if b in st:
                out.append((b, k))
    return out


class _Figs:
    """The figures of one comparison, entered in the ledger."""

    def __init__(self, ctx: ReportContext, a: Stat, b: Stat, column: str, conf: float, kind: str) -> None:
        L = ctx.ledger
        sets, vals = (a.set_id, b.set_id), (a.values, b.values)
        self.shift, self.lo, self.hi = (
            L.two_sample(op, sets, column, vals, conf, kind) for op in ("hl_shift", "hl_lo", "hl_hi")
        )
        self.p_raw = L.two_sample("mw_p", sets, column, vals, conf, "p")
        self.na, self.nb = a.n, b.n


def family(
    ctx: ReportContext,
    column: str,
    lower_is_better: bool,
    pairs: Sequence[tuple[Stat, Stat, str, str]],
    aa: Sequence[tuple[Stat, Stat]] = (),
) -> tuple[list[Judged], list[Judged]]:
    """The verdicts of ``pairs`` ((a, b, a's label, b's label): b against a) and of the A/A pairs
    ``aa`` (baseline, control), by the one rule; Holm over each list."""
    rule, run = rule_of(ctx)
    kind = judge.metric_kind(column)
    fmt_kind = "ms" if kind == "latency" else "auto"
    unit = " ms" if kind == "latency" else ""
    conf = 1 - rule.alpha

    def judged(items: Sequence[tuple[Stat, Stat, str, str]], noise: bool) -> tuple[list[Judged], list[_Figs | None]]:
        samples = [(judge.Sample(la, a.values), judge.Sample(lb, b.values)) for a, b, la, lb in items]
        js = judge.judge(samples, column, lower_is_better, rule, noise)
        figs = [
            _Figs(ctx, a, b, column, conf, fmt_kind) if j.test is not None else None
            for (a, b, _, _), j in zip(items, js)
        ]
        tested = [f for f in figs if f is not None]
        adj = {id(f): ctx.ledger.derive("holm", [g.p_raw for g in tested], "p", str(i)) for i, f in enumerate(tested)}
        out = []
        for j, f in zip(js, figs):
            if f is None:
                out.append(Judged(j.text))
                continue
            detail = f"{f.shift}{unit} [{f.lo}, {f.hi}], p = {adj[id(f)]}, n = {f.na}/{f.nb}; seed rule: {j.ranges}"
            out.append(Judged(_text(ctx, j, f, rule, run, kind), detail, j.decided))
        return out, figs

    aa_v, aa_f = judged([(a, b, "baseline", "A/A control") for a, b in aa], False)
    noise = any(v.decided for v in aa_v)
    aa_v = [Judged("A/A differs: " + judge.NOISE if v.decided else "A/A: " + v.text, v.detail) for v in aa_v]
    floor = next((f for f in aa_f if f is not None), None)
    main, _ = judged(pairs, noise)
    if floor is not None:
        main = [
            Judged(v.text, v.detail + f"; A/A noise floor {floor.shift}{unit} [{floor.lo}, {floor.hi}]", v.decided)
            if v.detail
            else v
            for v in main
        ]
    return main, aa_v


def _text(ctx: ReportContext, j: judge.Judgement, f: _Figs, rule: judge.Rule, run: int, kind: str) -> str:
    """The verdict's words, every number in them a figure (n, the rule's alpha and minimum effect)."""
    L = ctx.ledger
    if j.text.startswith("too few repetitions"):
        alpha = L.rule(judge.rule_value(rule, "alpha_pct"), run, "alpha_pct")
        need = L.rule(judge.rule_value(rule, "needed_n"), run, "needed_n")
        return f"too few repetitions to tell (n = {f.na}/{f.nb}: a {alpha} % test needs ≥ {need} per cell)"
    if j.text.startswith("no difference that matters"):
        pct: Fig = L.rule(judge.rule_value(rule, f"min_{kind}_pct"), run, f"min_{kind}_pct")
        if kind == "latency":
            ms = L.rule(judge.rule_value(rule, "min_latency_ms"), run, "min_latency_ms")
            return f"no difference that matters (below the minimum effect {ms} ms and {pct} %)"
        return f"no difference that matters (below the minimum effect {pct} %)"
    return j.text if j.text != NO_DIFF else NO_DIFF
