"""Verdicts: median and range per cell; pairs judged by the one rule (exact test, Holm, minimum
effect; kbench.engine.judge), the seed's "ranges apart" beside it; A/A controls and DRIFT."""

from __future__ import annotations

import pytest

from kbench.engine import judge, verdict


def rows(cell: str, codec: str, values: list[float], status: str = "OK") -> list[dict[str, str]]:
    return [
        {
            "cell_id": cell,
            "rep": str(i + 1),
            "codec": codec,
            "corpus": "json",
            "batch_size": "16384",
            "linger_ms": "5",
            "partitions": "1",
            "acks": "all",
            "topic_compression": "producer",
            "corrected_p99_us": str(v),
            "status": status,
        }
        for i, v in enumerate(values)
    ]


def test_median_and_range_ignore_excluded_rows() -> None:
    rs = rows("a", "none", [10, 30, 20]) + rows("a", "none", [999], status="REJECTED")
    (s,) = verdict.summarise("A", rs, "corrected_p99_us")
    assert (s.median, s.lo, s.hi, s.n, s.excluded) == (20, 10, 30, 3, 1)


def test_overlapping_samples_are_no_significant_difference() -> None:
    rs = rows("a", "none", [10e3, 20e3, 30e3, 22e3, 18e3]) + rows("b", "zstd:3", [25e3, 35e3, 40e3, 15e3, 21e3])
    (c,) = verdict.compare("A", verdict.summarise("A", rs, "corrected_p99_us"))
    assert c.verdict == "no significant difference"
    assert c.judgement is not None and c.judgement.ranges == "ranges overlap"


def test_separate_samples_at_n5_name_the_better_cell() -> None:
    rs = rows("a", "none", [10e3, 11e3, 12e3, 10.5e3, 11.5e3]) + rows("b", "zstd:3", [20e3, 21e3, 22e3, 20.5e3, 21.5e3])
    (c,) = verdict.compare("A", verdict.summarise("A", rs, "corrected_p99_us"), lower_is_better=True)
    assert c.verdict == "none better"
    (c,) = verdict.compare("A", verdict.summarise("A", rs, "corrected_p99_us"), lower_is_better=False)
    assert c.verdict == "zstd:3 better"


def test_separate_ranges_at_n3_are_too_few_to_tell_though_the_seed_rule_calls_them_apart() -> None:
    rs = rows("a", "none", [10e3, 11e3, 12e3]) + rows("b", "zstd:3", [20e3, 21e3, 22e3])
    (c,) = verdict.compare("A", verdict.summarise("A", rs, "corrected_p99_us"))
    assert c.verdict == "too few repetitions to tell (n = 3: a 5 % test needs ≥ 4 per cell)"
    assert c.judgement is not None and c.judgement.ranges == "ranges apart"


def test_holm_over_the_family_and_the_plans_alpha() -> None:
    """Three comparisons (a–b, a–c, b–c) each at p = 2/252 = 0.0079 (n = 5/5 apart): Holm makes
    every one 3 × 2/252 = 0.024 — still ≤ 0.05, but not ≤ a plan's alpha = 0.01."""
    rs = rows("a", "none", [10e3, 11e3, 12e3, 10.5e3, 11.5e3]) + rows("b", "zstd:3", [20e3, 21e3, 22e3, 20.5e3, 21.5e3])
    rs += rows("c", "lz4", [30e3, 31e3, 32e3, 30.5e3, 31.5e3])
    comps = verdict.compare("A", verdict.summarise("A", rs, "corrected_p99_us"))
    assert [c.judgement.p_adj for c in comps if c.judgement] == pytest.approx([3 * 2 / 252] * 3)
    strict = verdict.compare("A", verdict.summarise("A", rs, "corrected_p99_us"), rule=judge.Rule(alpha=0.01))
    assert {c.verdict for c in strict} == {"no significant difference"}


def _aa(values_base: list[float], values_aa: list[float]) -> list[dict[str, str]]:
    rs = rows("a-001", "none", values_base) + [dict(r, control_of="a-001") for r in rows("a-001-aa", "none", values_aa)]
    return rs + rows("a-002", "zstd:3", [20e3, 21e3, 22e3, 20.5e3, 21.5e3])


def test_aa_control_is_never_a_candidate_and_its_pair_is_reported() -> None:
    rs = _aa([10e3, 11e3, 12e3, 10.5e3, 11.5e3], [10.2e3, 11.2e3, 11.8e3, 10.6e3, 11.4e3])
    comps = verdict.compare("A", verdict.summarise("A", rs, "corrected_p99_us"))
    assert [(c.a.key[0], c.b.key[0], c.verdict) for c in comps] == [
        ("a-001", "a-001-aa", "A/A: no significant difference"),
        ("a-001", "a-002", "none better"),
    ]
    text = verdict.headline("A", rs)
    assert "A/A noise floor" in text and "none better" in text


def test_aa_control_that_differs_withholds_the_familys_verdicts() -> None:
    rs = _aa([10e3, 11e3, 12e3, 10.5e3, 11.5e3], [15e3, 16e3, 17e3, 15.5e3, 16.5e3])
    comps = verdict.compare("A", verdict.summarise("A", rs, "corrected_p99_us"))
    assert comps[0].verdict == "A/A: differs: " + judge.NOISE
    assert comps[1].verdict == judge.NOISE


def test_drifted_repetitions_leave_the_verdict() -> None:
    rs = rows("a", "none", [10e3, 11e3, 12e3, 10.5e3, 11.5e3]) + rows("b", "zstd:3", [20e3, 21e3, 22e3, 20.5e3, 21.5e3])
    rule, drifted = verdict.run_settings({"drift": {"b r1": "DRIFT: rate drifted +52.8 %", "b r2": "x", "b r3": "x"}})
    assert drifted == {("b", "1"), ("b", "2"), ("b", "3")}
    sums = verdict.summarise("A", rs, "corrected_p99_us", drifted)
    assert [(s.n, s.excluded) for s in sums] == [(5, 0), (2, 3)]
    (c,) = verdict.compare("A", sums, rule=rule)
    assert c.verdict == "too few repetitions to tell (n = 5/2: a 5 % test needs ≥ 4 per cell)"


def test_cells_differing_in_more_than_the_axis_are_not_paired() -> None:
    rs = rows("a", "none", [10, 11]) + [dict(r, corpus="random") for r in rows("b", "zstd:3", [20, 21])]
    assert verdict.compare("A", verdict.summarise("A", rs, "corrected_p99_us")) == []


def test_headline_table_mentions_verdict() -> None:
    text = verdict.headline("A", rows("a", "none", [10, 11, 12, 13]) + rows("b", "zstd:3", [11, 12, 13, 10]))
    assert "no significant difference" in text and "11.50 [10.00–13.00]" in text


# ---------------------------------------------------------------- the one verdict rule


def test_range_verdict_overlap_and_touching_ranges_read_no_difference() -> None:
    assert verdict.range_verdict(3, 10, 20, 3, 15, 25).text == verdict.NO_DIFF
    touching = verdict.range_verdict(3, 10, 20, 3, 20, 30)
    assert touching.text == verdict.NO_DIFF and not touching.apart


def test_range_verdict_apart_says_which_side_is_lower() -> None:
    below = verdict.range_verdict(3, 10, 19.9, 3, 20, 30)
    above = verdict.range_verdict(3, 20, 30, 3, 10, 19.9)
    assert below.apart and below.a_lower is True
    assert above.apart and above.a_lower is False


def test_range_verdict_needs_two_ok_repetitions_per_side() -> None:
    for a_n, b_n in ((1, 3), (3, 1), (1, 1)):
        rv = verdict.range_verdict(a_n, 10, 10, b_n, 100, 100)
        assert rv.text == verdict.TOO_FEW and not rv.apart, (a_n, b_n)


def test_range_verdict_without_ok_repetitions_is_not_comparable() -> None:
    assert verdict.range_verdict(0, None, None, 3, 1, 2).text == verdict.NO_OK
    assert verdict.range_verdict(3, 1, 2, 0, None, None).text == verdict.NO_OK


def test_one_repetition_per_side_is_not_comparable_in_tables() -> None:
    rs = rows("a", "none", [10]) + rows("b", "zstd:3", [100])
    (c,) = verdict.compare("A", verdict.summarise("A", rs, "corrected_p99_us"))
    assert c.verdict == verdict.TOO_FEW


def test_cells_at_two_rates_are_not_paired() -> None:
    rs = [dict(r, rate="100") for r in rows("a", "zstd:3", [10, 11])]
    rs += [dict(r, rate="100000") for r in rows("b", "zstd:3", [20, 21])]
    rs += [dict(r, rate="100") for r in rows("c", "none", [30, 31])]
    comps = verdict.compare("A", verdict.summarise("A", rs, "corrected_p99_us"))
    assert [(c.a.key[0], c.b.key[0]) for c in comps] == [("a", "c")]


def test_report_verdicts_use_the_same_rule() -> None:
    """The report's family (kbench.reporting.verdicts) says what the console's does, from the same
    values, and prints every number of it as a ledger figure."""
    pytest.importorskip("numpy")
    from types import SimpleNamespace

    from kbench.reporting.provenance import Ledger
    from kbench.reporting.summary import Stat, empty_stat
    from kbench.reporting.verdicts import family

    ledger = Ledger()
    ctx = SimpleNamespace(ledger=ledger, runs=[SimpleNamespace(index=0, manifest={"plan": {}})])

    def stat(vals: list[float]) -> Stat:
        sid = ledger.row_set("A", list(range(len(vals))), {})
        return Stat(ledger, sid, "m", "auto", sorted(vals)[len(vals) // 2], min(vals), max(vals), len(vals), vals)

    base = [10e3, 11e3, 12e3, 10.5e3, 11.5e3]
    pairs = [
        (stat(base), stat([20e3, 21e3, 22e3, 20.5e3, 21.5e3]), "none", "zstd:3"),
        (stat([10e3, 11e3]), stat([20e3, 21e3]), "none", "lz4"),
        (empty_stat(ledger, "m"), stat(base), "none", "gzip"),
    ]
    got, _ = family(ctx, "corrected_p99_us", True, pairs)  # type: ignore[arg-type]
    console = judge.judge(
        [(judge.Sample(la, a.values), judge.Sample(lb, b.values)) for a, b, la, lb in pairs],
        "corrected_p99_us",
        True,
        judge.Rule(),
    )
    assert [g.text.split(" (n = ")[0] for g in got] == [c.text.split(" (n = ")[0] for c in console]
    assert got[0].text == "none better" and got[0].decided
    assert got[0].detail == "10.00 ms [8.50, 11.50], p = 0.016, n = 5/5; seed rule: ranges apart"
    assert got[1].text == "too few repetitions to tell (n = 2/2: a 5 % test needs ≥ 4 per cell)"
    assert str(got[2]) == verdict.NO_OK
    # an A/A pair that differs withholds the family, and its spread is printed beside each effect
    aa = [(stat(base), stat([15e3, 16e3, 17e3, 15.5e3, 16.5e3]))]
    got, aa_v = family(ctx, "corrected_p99_us", True, pairs[:1], aa)  # type: ignore[arg-type]
    assert aa_v[0].text == "A/A differs: " + judge.NOISE
    assert got[0].text == judge.NOISE and "A/A noise floor 5.00 ms [3.50, 6.50]" in got[0].detail


def test_headline_prints_every_metric_in_its_column_and_only_the_pairs_differing_in_codec() -> None:
    """The whole console table, checked by hand: medians and ranges per metric (p50 = p99 / 2,
    p99.9 = 2 x p99 here), the label columns that vary (codec, corpus), n, and one verdict: a vs
    b differ in the codec only; c differs from a in the corpus and from b in both, so is not paired."""

    def full(cell: str, codec: str, vals: list[float], corpus: str = "json") -> list[dict[str, str]]:
        return [
            dict(r, corpus=corpus, corrected_p50_us=str(v / 2), corrected_p999_us=str(v * 2))
            for r, v in zip(rows(cell, codec, vals), vals)
        ]

    text = verdict.headline(
        "A",
        full("a", "none", [10, 11, 12]) + full("b", "zstd:3", [20, 21, 23]) + full("c", "none", [5, 6, 7], "random"),
    )
    assert text.splitlines() == [
        "cell  codec   corpus  n  corrected_p50_us (µs)  corrected_p99_us (µs)  corrected_p999_us (µs)",
        "----  ------  ------  -  ---------------------  ---------------------  ----------------------",
        "a     none    json    3  5.50 [5.00–6.00]       11.00 [10.00–12.00]    22.00 [20.00–24.00]   ",
        "b     zstd:3  json    3  10.50 [10.00–11.50]    21.00 [20.00–23.00]    42.00 [40.00–46.00]   ",
        "c     none    random  3  3.00 [2.50–3.50]       6.00 [5.00–7.00]       12.00 [10.00–14.00]   ",
        "",
        "verdicts on corrected_p99_us (effect: b − a, Hodges–Lehmann shift [95 % interval], exact test, Holm-corrected p):",
        "cell  vs cell  a     b       verdict                                                             effect, p, n                               seed rule   ",
        "----  -------  ----  ------  ------------------------------------------------------------------  -----------------------------------------  ------------",
        "a     b        none  zstd:3  too few repetitions to tell (n = 3: a 5 % test needs ≥ 4 per cell)  0.01 ms [0.008, 0.013], p = 0.10, n = 3/3  ranges apart",
    ]


@pytest.mark.parametrize("side", range(6))
def test_range_verdict_one_missing_bound_or_no_ok_repetition_is_not_comparable(side: int) -> None:
    args: list[float | int | None] = [3, 10.0, 20.0, 3, 30.0, 40.0]
    args[side] = 0 if side in (0, 3) else None
    assert verdict.range_verdict(*args).text == verdict.NO_OK  # type: ignore[arg-type]


def test_range_verdict_two_repetitions_are_enough_one_is_too_few() -> None:
    assert verdict.range_verdict(2, 10, 20, 2, 30, 40) == verdict.RangeVerdict("apart", True)
    assert verdict.range_verdict(1, 10, 20, 2, 30, 40).text == verdict.TOO_FEW
    assert verdict.range_verdict(2, 10, 20, 1, 30, 40).text == verdict.TOO_FEW


def test_range_verdict_touching_from_either_side_is_no_difference() -> None:
    assert verdict.range_verdict(3, 20, 30, 3, 10, 20).text == verdict.NO_DIFF  # a_lo == b_hi
    assert verdict.range_verdict(3, 20, 30, 3, 10, 19.99) == verdict.RangeVerdict("apart", False)


def test_booleans_and_na_in_a_metric_column() -> None:
    rs = [
        {"cell_id": "f", "rep": str(i), "status": "OK", "recompressed": v}
        for i, v in enumerate(["true", "false", "true", "NA", "", "x"])
    ]
    (s,) = verdict.summarise("F", rs, "recompressed")
    assert (s.n, s.excluded, s.median, s.lo, s.hi) == (3, 3, 1.0, 0.0, 1.0)
    (s,) = verdict.summarise("F", [dict(r, recompressed="false") for r in rs[:2]], "recompressed")
    assert (s.median, s.lo, s.hi) == (0.0, 0.0, 0.0)


def test_d_is_summarised_per_cell_and_role_and_keeps_the_metric_and_labels() -> None:
    rs = [
        {"cell_id": "d", "rep": str(i), "status": "OK", "role": role, "codec": "lz4", "cpu_s_per_gb": str(v)}
        for i, (role, v) in enumerate([("producer", 1), ("producer", 3), ("broker-1", 10), ("broker-1", 12)])
    ]
    got = verdict.summarise("D", rs, "cpu_s_per_gb")
    assert [(s.key, s.median, s.metric) for s in got] == [
        (("d", "broker-1"), 11.0, "cpu_s_per_gb"),
        (("d", "producer"), 2.0, "cpu_s_per_gb"),
    ]
    assert got[0].labels["codec"] == "lz4" and got[0].labels["corpus"] == ""  # a label the rows lack is ""
    without_role = verdict.summarise("D", [{k: v for k, v in r.items() if k != "role"} for r in rs], "cpu_s_per_gb")
    assert [s.key for s in without_role] == [("d", "")]
