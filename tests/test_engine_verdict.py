"""Verdicts: median and range per cell; overlapping ranges read "no significant difference"."""

from __future__ import annotations

from kbench.engine import verdict


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


def test_overlapping_ranges_are_no_significant_difference() -> None:
    rs = rows("a", "none", [10, 20, 30]) + rows("b", "zstd:3", [25, 35, 40])
    (c,) = verdict.compare("A", verdict.summarise("A", rs, "corrected_p99_us"))
    assert c.verdict == "no significant difference"


def test_disjoint_ranges_name_the_better_cell() -> None:
    rs = rows("a", "none", [10, 11, 12]) + rows("b", "zstd:3", [20, 21, 22])
    (c,) = verdict.compare("A", verdict.summarise("A", rs, "corrected_p99_us"), lower_is_better=True)
    assert c.verdict == "none better"
    (c,) = verdict.compare("A", verdict.summarise("A", rs, "corrected_p99_us"), lower_is_better=False)
    assert c.verdict == "zstd:3 better"


def test_cells_differing_in_more_than_the_axis_are_not_paired() -> None:
    rs = rows("a", "none", [10, 11]) + [dict(r, corpus="random") for r in rows("b", "zstd:3", [20, 21])]
    assert verdict.compare("A", verdict.summarise("A", rs, "corrected_p99_us")) == []


def test_headline_table_mentions_verdict() -> None:
    text = verdict.headline("A", rows("a", "none", [10, 11, 12]) + rows("b", "zstd:3", [11, 12, 13]))
    assert "no significant difference" in text and "11.00 [10.00–12.00]" in text
