"""The one verdict rule (docs/methodology.md §5): which of two cells is better, with a known false-verdict rate.

A comparison tests the two cells' OK repetition values with the exact rank-sum test
(:mod:`kbench.engine.stats`); the p values of one experiment's comparisons on one metric (a
family) are Holm-adjusted.  A verdict names a better cell only when the adjusted p ≤ the plan's
``alpha`` (default 0.05) *and* the Hodges–Lehmann shift reaches the plan's minimum effect for the
metric's kind (``[min_effect]``; defaults: latency 1 ms and 10 %, throughput and CPU 5 %, ratio 1 %).
Where even complete separation could not reach ``alpha`` the verdict says there are too few
repetitions to tell.  Every verdict carries the shift, its interval, p and n.  Where the family's
A/A control (the baseline run again, ``control_of``) itself comes out different, every verdict of
the family is withheld: this host's noise exceeds the test.  The seed's rule ("ranges apart",
:mod:`kbench.engine.ranges`) is kept beside it as a column.  A leaf: the console tables and the
report both use it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kbench.engine import stats
from kbench.engine.ranges import NO_DIFF, NO_OK, TOO_FEW, range_verdict

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_MIN_EFFECT",
    "MIN_EFFECT_KEYS",
    "NOISE",
    "Judgement",
    "MinEffect",
    "Rule",
    "Sample",
    "aa_differs",
    "effect_text",
    "judge",
    "metric_kind",
    "rule_from_plan",
    "p_text",
    "rule_value",
    "too_few_text",
]

DEFAULT_ALPHA = 0.05

#: Why a family's verdicts are withheld: its A/A pair came out different.
NOISE = "withheld: this host's noise exceeds the test"


@dataclass(frozen=True)
class MinEffect:
    """The smallest shift a verdict names: ``pct`` % of the baseline's median, and at least
    ``abs`` in the column's unit (latency columns are µs)."""

    pct: float
    abs: float = 0.0

    def reached(self, shift: float, base_median: float) -> bool:
        return abs(shift) >= self.abs and abs(shift) >= self.pct / 100 * abs(base_median)

    def text(self, kind: str) -> str:
        return f"{self.abs / 1000:g} ms and {self.pct:g} %" if kind == "latency" else f"{self.pct:g} %"


DEFAULT_MIN_EFFECT: Mapping[str, MinEffect] = {
    "latency": MinEffect(10.0, 1000.0),
    "throughput": MinEffect(5.0),
    "cpu": MinEffect(5.0),
    "ratio": MinEffect(1.0),
}
#: The plan's ``[min_effect]`` keys and what they set.
MIN_EFFECT_KEYS = {
    "latency_ms": "latency: the smallest shift a verdict names, in ms (default 1)",
    "latency_pct": "latency: ... and in % of the baseline's median (default 10)",
    "throughput_pct": "throughput: the smallest shift a verdict names, in % (default 5)",
    "cpu_pct": "CPU: the smallest shift a verdict names, in % (default 5)",
    "ratio_pct": "compression ratio: the smallest shift a verdict names, in % (default 1)",
}


def metric_kind(column: str) -> str:
    """The kind of a verdict metric: ``latency`` (µs columns), ``cpu``, ``ratio`` or ``throughput``."""
    if column.endswith("_us"):
        return "latency"
    if "cpu" in column:
        return "cpu"
    if "ratio" in column:
        return "ratio"
    return "throughput"


@dataclass(frozen=True)
class Rule:
    """The plan's verdict settings."""

    alpha: float = DEFAULT_ALPHA
    min_effect: Mapping[str, MinEffect] = field(default_factory=lambda: dict(DEFAULT_MIN_EFFECT))


def _num(where: str, v: Any, lo: float, hi: float) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= float(v) <= hi:
        raise ValueError(f"{where}: {v!r} must be a number from {lo:g} to {hi:g}")
    return float(v)


def rule_from_plan(raw: Mapping[str, Any]) -> Rule:
    """The rule of a plan's (or a manifest's ``plan``) TOML data; ValueError names a bad key."""
    alpha = _num("alpha", raw.get("alpha", DEFAULT_ALPHA), 1e-6, 0.5)
    me = raw.get("min_effect", {})
    if not isinstance(me, Mapping):
        raise ValueError("min_effect: must be a table, e.g. [min_effect] latency_ms = 1")
    unknown = sorted(set(me) - set(MIN_EFFECT_KEYS))
    if unknown:
        raise ValueError(f"min_effect.{unknown[0]}: unknown key; one of {', '.join(MIN_EFFECT_KEYS)}")
    d = DEFAULT_MIN_EFFECT
    lat = d["latency"]
    out = {
        "latency": MinEffect(
            _num("min_effect.latency_pct", me.get("latency_pct", lat.pct), 0, 1000),
            _num("min_effect.latency_ms", me.get("latency_ms", lat.abs / 1000), 0, 1e6) * 1000,
        ),
        **{
            k: MinEffect(_num(f"min_effect.{k}_pct", me.get(f"{k}_pct", d[k].pct), 0, 1000))
            for k in ("throughput", "cpu", "ratio")
        },
    }
    return Rule(alpha, out)


@dataclass(frozen=True)
class Sample:
    """One side of a comparison: its label (e.g. ``zstd:3``) and its OK repetition values."""

    label: str
    values: Sequence[float]


@dataclass(frozen=True)
class Judgement:
    """A comparison of ``b`` against ``a``: the verdict text, the test (None when not comparable),
    its Holm-adjusted p, whether it names a better cell, and the seed's rule ("ranges apart")."""

    text: str
    test: stats.Shift | None
    p_adj: float | None
    decided: bool
    ranges: str


def too_few_text(na: int, nb: int, alpha: float) -> str:
    n = f"{na}" if na == nb else f"{na}/{nb}"
    return f"too few repetitions to tell (n = {n}: a {alpha * 100:g} % test needs ≥ {stats.needed_n(alpha)} per cell)"


def _ranges(a: Sequence[float], b: Sequence[float]) -> str:
    rv = range_verdict(
        len(a), min(a, default=None), max(a, default=None), len(b), min(b, default=None), max(b, default=None)
    )
    return "ranges apart" if rv.apart else ("ranges overlap" if rv.text == NO_DIFF else "—")


def _direction(kind: str, better: str, worse: str) -> str:
    return f"{worse} costs more CPU" if kind == "cpu" else f"{better} better"


def judge(
    pairs: Sequence[tuple[Sample, Sample]],
    column: str,
    lower_is_better: bool,
    rule: Rule,
    noise: bool = False,
) -> list[Judgement]:
    """The verdicts of one family (one experiment, one metric): each ``b`` against its ``a``.
    ``noise``: the family's A/A pair came out different, so no verdict names a better cell."""
    kind = metric_kind(column)
    tests = [
        stats.compare_samples(a.values, b.values, 1 - rule.alpha) if len(a.values) >= 2 and len(b.values) >= 2 else None
        for a, b in pairs
    ]
    tested = [i for i, t in enumerate(tests) if t is not None]
    adj = dict(zip(tested, stats.holm([tests[i].p for i in tested])))  # type: ignore[union-attr]
    out = []
    me = rule.min_effect[kind]
    for i, ((a, b), t) in enumerate(zip(pairs, tests)):
        ranges = _ranges(a.values, b.values)
        if t is None:
            text = NO_OK if not a.values or not b.values else TOO_FEW
            out.append(Judgement(text, None, None, False, ranges))
            continue
        p = adj[i]
        base = _median(a.values)
        decided = False
        if stats.min_p(t.na, t.nb) > rule.alpha:
            text = too_few_text(t.na, t.nb, rule.alpha)
        elif p > rule.alpha:
            text = NO_DIFF
        elif not me.reached(t.shift, base):
            text = f"no difference that matters (below the minimum effect {me.text(kind)})"
        elif noise:
            text = NOISE
        else:
            b_lower = t.shift < 0
            better, worse = (b.label, a.label) if b_lower == lower_is_better else (a.label, b.label)
            text, decided = _direction(kind, better, worse), True
        out.append(Judgement(text, t, p, decided, ranges))
    return out


def _median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    m = len(s) // 2
    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2


def aa_differs(j: Judgement) -> bool:
    """Whether an A/A pair's comparison came out different (p ≤ alpha and the minimum effect)."""
    return j.decided


def _num_text(v: float) -> str:
    a = abs(v)
    t = f"{a:,.0f}" if a >= 1000 else f"{a:.3g}" if a >= 1 or a == 0 else f"{a:.2g}"
    return ("−" if v < 0 else "") + t


def effect_text(t: stats.Shift, p_adj: float, column: str, unit: str) -> str:
    """``−12.1 ms [−19.8, −4.0], p = 0.008, n = 5/5``: the shift b − a with its interval (latency in ms)."""
    scale, u = (1e-3, "ms") if metric_kind(column) == "latency" else (1.0, unit)
    ci = f"[{_num_text(t.lo * scale)}, {_num_text(t.hi * scale)}]"
    return f"{_num_text(t.shift * scale)}{' ' + u if u else ''} {ci}, p = {p_text(p_adj)}, n = {t.na}/{t.nb}"


def p_text(p: float) -> str:
    """A p value as printed: two significant digits below 0.01, "< 0.0001" below that."""
    if p < 0.0001:
        return "< 0.0001"
    return f"{p:.2g}" if p < 0.01 else f"{p:.3f}" if p < 0.1 else f"{p:.2f}"


def rule_value(rule: Rule, key: str) -> float:
    """A number of the rule a report prints: ``alpha_pct``, ``conf_pct`` (the interval's level),
    ``needed_n`` (per cell, for a test at alpha), or ``min_<kind>_pct`` / ``min_latency_ms``."""
    if key == "alpha_pct":
        return rule.alpha * 100
    if key == "conf_pct":
        return (1 - rule.alpha) * 100
    if key == "needed_n":
        return float(stats.needed_n(rule.alpha))
    if key == "min_latency_ms":
        return rule.min_effect["latency"].abs / 1000
    if key.startswith("min_") and key.endswith("_pct"):
        return rule.min_effect[key[4:-4]].pct
    raise KeyError(key)
