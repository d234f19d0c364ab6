"""The verdict statistic (kbench.engine.stats, kbench.engine.judge) against an independent
implementation (scipy.stats) and by simulation: its false-verdict rate is the one stated."""

from __future__ import annotations

import math
import random

import pytest

from kbench.engine import judge, stats

scipy_stats = pytest.importorskip("scipy.stats")


@pytest.mark.parametrize("na,nb", [(2, 2), (3, 3), (3, 5), (5, 5), (4, 7), (8, 8)])
def test_exact_p_equals_scipy_mannwhitneyu(na: int, nb: int) -> None:
    rng = random.Random(na * 100 + nb)
    for trial in range(25):
        shift = rng.choice([0.0, 0.5, 2.0])
        a = [rng.gauss(0, 1) for _ in range(na)]
        b = [rng.gauss(shift, 1) for _ in range(nb)]
        want = scipy_stats.mannwhitneyu(a, b, alternative="two-sided", method="exact").pvalue
        assert stats.mann_whitney_p(a, b) == pytest.approx(want, rel=1e-12), (trial, a, b)


def _rank_sum(x, y, axis=-1):  # type: ignore[no-untyped-def]
    import numpy as np

    pooled = np.concatenate([x, y], axis=axis)
    return scipy_stats.rankdata(pooled, axis=axis)[..., : x.shape[axis]].sum(axis=axis)


@pytest.mark.parametrize("na,nb", [(3, 3), (4, 5), (5, 5), (6, 4)])
def test_exact_p_with_ties_equals_scipy_permutation_test(na: int, nb: int) -> None:
    """Ties (a latency rounded to the histogram's bucket, equal ratios) take mid-ranks: the
    p is that of the complete permutation distribution, as scipy enumerates it."""
    rng = random.Random(7 * na + nb)
    for trial in range(10):
        a = [float(rng.randint(0, 4)) for _ in range(na)]
        b = [float(rng.randint(1, 5)) for _ in range(nb)]
        res = scipy_stats.permutation_test(
            (a, b), _rank_sum, permutation_type="independent", n_resamples=math.inf, vectorized=True
        )
        assert stats.mann_whitney_p(a, b) == pytest.approx(res.pvalue, rel=1e-9), (trial, a, b)


def test_min_p_and_needed_n_are_the_issue_figures() -> None:
    assert stats.min_p(2, 2) == pytest.approx(1 / 3)
    assert stats.min_p(3, 3) == pytest.approx(1 / 10)
    assert stats.min_p(4, 4) == pytest.approx(2 / 70)
    assert stats.min_p(5, 5) == pytest.approx(2 / 252)
    assert stats.needed_n(0.05) == 4
    assert stats.needed_n(0.01) == 5


def test_hodges_lehmann_shift_and_interval() -> None:
    a = [10.0, 11, 12, 13, 14]
    b = [20.0, 22, 21, 25, 23]
    shift, lo, hi, conf = stats.hodges_lehmann(a, b, 0.95)
    diffs = sorted(y - x for x in a for y in b)
    assert shift == diffs[12]  # the median of the 25 differences
    # n = 5/5: P(U <= 2) = 4/252 <= 0.025 < P(U <= 3) = 7/252, so the interval is [d_(3), d_(23)]
    assert (lo, hi) == (diffs[2], diffs[22])
    assert conf == pytest.approx(1 - 8 / 252)
    # too few for 95 %: the whole range, and its coverage says so
    shift, lo, hi, conf = stats.hodges_lehmann([1.0, 2.0], [5.0, 7.0], 0.95)
    assert (lo, hi) == (3.0, 6.0) and conf == pytest.approx(2 / 3)


def test_interval_inverts_the_test() -> None:
    """The interval is the set of shifts the exact test does not reject (at the interval's level):
    just inside its ends the shifted sample is not significantly different, just outside it is."""
    rng = random.Random(3)
    a = [rng.gauss(0, 1) for _ in range(6)]
    b = [rng.gauss(1, 1) for _ in range(6)]
    _, lo, hi, conf = stats.hodges_lehmann(a, b, 0.95)
    level = 1 - conf
    eps = 1e-9
    assert stats.mann_whitney_p([x + lo + eps for x in a], b) > level
    assert stats.mann_whitney_p([x + hi - eps for x in a], b) > level
    assert stats.mann_whitney_p([x + lo - 1e-6 for x in a], b) <= level + 1e-12
    assert stats.mann_whitney_p([x + hi + 1e-6 for x in a], b) <= level + 1e-12


def test_holm_on_a_known_family() -> None:
    # sorted 0.005 (×4), 0.01 (×3), 0.03 (×2), 0.04 (×1, held up to 0.06 by monotonicity)
    assert stats.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert stats.holm([0.5]) == [0.5]
    assert stats.holm([0.02, 0.9]) == pytest.approx([0.04, 0.9])


def _judge_one(a: list[float], b: list[float], column: str = "corrected_p99_us") -> judge.Judgement:
    return judge.judge([(judge.Sample("none", a), judge.Sample("zstd:3", b))], column, True, judge.Rule())[0]


@pytest.mark.parametrize("n", [2, 3])
def test_n2_and_n3_are_too_few_even_completely_apart(n: int) -> None:
    j = _judge_one([30_000.0 + i for i in range(n)], [10_000.0 + i for i in range(n)])
    assert j.text == f"too few repetitions to tell (n = {n}: a 5 % test needs ≥ 4 per cell)"
    assert not j.decided
    assert j.ranges == "ranges apart"  # the seed's rule would have called it


def test_a_real_difference_at_n5_is_named_with_effect_interval_p_and_n() -> None:
    j = _judge_one([34_000.0, 35_000, 34_500, 34_800, 35_500], [19_800.0, 18_300, 21_300, 20_000, 19_000])
    assert j.decided and j.text == "zstd:3 better"
    assert j.test is not None and j.p_adj is not None
    line = judge.effect_text(j.test, j.p_adj, "corrected_p99_us", "µs")
    assert line == "−15 ms [−16.5, −13.5], p = 0.0079, n = 5/5"


def test_a_difference_below_the_minimum_effect_names_no_cell() -> None:
    # apart at n = 5 (p = 0.008) but 0.5 ms: below 1 ms
    j = _judge_one([5_000.0, 5_010, 5_020, 5_030, 5_040], [4_500.0, 4_510, 4_520, 4_530, 4_540])
    assert not j.decided and "below the minimum effect 1 ms and 10 %" in j.text


def test_cpu_direction_is_a_cost() -> None:
    j = _judge_one([1.0, 1.1, 1.05, 1.02, 1.08], [2.0, 2.1, 2.05, 2.02, 2.08], "cpu_s_per_gb")
    assert j.text == "zstd:3 costs more CPU"


def test_noise_withholds() -> None:
    j = judge.judge(
        [(judge.Sample("none", [1.0, 1.1, 1.05, 1.02, 1.08]), judge.Sample("lz4", [2.0, 2.1, 2.05, 2.02, 2.08]))],
        "achieved_rate_msgs",
        False,
        judge.Rule(),
        noise=True,
    )[0]
    assert j.text == judge.NOISE and not j.decided


def test_aa_simulation_false_verdict_rate_is_within_alpha() -> None:
    """2,000 A/A pairs at n = 5 drawn from one distribution: the fraction the rule calls different
    is at most alpha (+ 3 binomial standard deviations).  The minimum effect is set to 0 so the
    test alone is judged; the seed's rule is counted beside it (2 / C(10, 5) = 0.8 %)."""
    rng = random.Random(20261203)
    rule = judge.Rule(0.05, {k: judge.MinEffect(0.0) for k in judge.DEFAULT_MIN_EFFECT})
    pairs = 2000
    false = apart = 0
    for _ in range(pairs):
        a = [rng.lognormvariate(3, 0.5) for _ in range(5)]
        b = [rng.lognormvariate(3, 0.5) for _ in range(5)]
        j = judge.judge([(judge.Sample("a", a), judge.Sample("b", b))], "corrected_p99_us", True, rule)[0]
        false += j.decided
        apart += j.ranges == "ranges apart"
    tol = 3 * math.sqrt(0.05 * 0.95 / pairs)
    assert false / pairs <= 0.05 + tol
    assert false / pairs == pytest.approx(8 / 252, abs=tol)  # the exact rate at n = 5: P(U <= 2 or >= 23)
    assert apart / pairs == pytest.approx(2 / 252, abs=3 * math.sqrt(2 / 252 / pairs))


def test_spearman_equals_scipy_with_ties_and_refuses_unpaired_samples() -> None:
    x = [2.9, -8.3, 6.1, 2.9, 0.4, -1.0, 5.5]
    y = [1.0, 3.0, -2.0, 4.0, 4.0, -7.5, 0.0]
    assert stats.spearman(x, y) == pytest.approx(scipy_stats.spearmanr(x, y).statistic, abs=1e-12)
    assert stats.spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="paired"):
        stats.spearman([1, 2, 3], [1, 2])
