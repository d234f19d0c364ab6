"""Reports that say what was run (issue 30): the one verdict rule in the report, the A/A control's
noise floor and withholding, the rates a pooled report lists, G's codec comparison, DRIFT
repetitions excluded, and legends never dropped.  Every report here passes ``--verify``."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

from kbench.engine import judge  # noqa: E402
from kbench.reporting import document as doc  # noqa: E402
from kbench.reporting import plots, provenance, report  # noqa: E402

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"


def _build(*runs: Path) -> str:
    blocks, ledger, _, _ = report.build(list(runs), with_plots=False)
    md = doc.to_markdown(blocks)
    assert provenance.verify(ledger.as_dict([str(r) for r in runs]), list(runs), md) == []
    return md


def _section(md: str, title: str) -> str:
    return md.split(title, 1)[1].split("\n## ", 1)[0]


def _aa_run(tmp: Path, control_p99: list[float]) -> Path:
    """A copy of the committed seed000 run whose A.csv holds none/json (fixed-000) and zstd:3/json
    (fixed-002) at 5 repetitions each, and fixed-000's A/A control (fixed-000-aa) with ``control_p99``."""
    run = tmp / "aa-run"
    shutil.copytree(RESULTS / "seed000-testbed-2026-12-01", run)
    with (run / "A.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    by = {r["cell_id"]: r for r in rows}
    out = []
    for cell, base, vals, control_of in (
        ("fixed-000", "fixed-000", [40e3, 41e3, 42e3, 40.5e3, 41.5e3], ""),
        ("fixed-000-aa", "fixed-000", control_p99, "fixed-000"),
        ("fixed-002", "fixed-002", [20e3, 21e3, 22e3, 20.5e3, 21.5e3], ""),
    ):
        for i, v in enumerate(vals):
            out.append(
                {**by[base], "cell_id": cell, "rep": str(i + 1), "corrected_p99_us": str(v), "control_of": control_of}
            )
    cols = [*rows[0].keys(), "control_of"]
    with (run / "A.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, cols, lineterminator="\n")
        w.writeheader()
        w.writerows(out)
    return run


def test_aa_control_reads_no_difference_and_its_spread_is_the_noise_floor(tmp_path: Path) -> None:
    md = _build(_aa_run(tmp_path, [40.2e3, 41.2e3, 41.8e3, 40.6e3, 41.4e3]))
    a = _section(md, "## Experiment A")
    assert "A/A control p99 (ms)** | **A/A: no significant difference (" in a
    verdict = next(x for x in a.splitlines() if "corpus json p99 verdict" in x or "p99 verdict" in x)
    assert "→ zstd:3 better (" in verdict and "n = 5/5" in verdict and "seed rule: ranges apart" in verdict
    assert "A/A noise floor" in verdict
    # the control is never a candidate: no verdict pairs it with zstd:3 or names it better
    assert "fixed-000-aa" not in verdict


def test_aa_control_that_differs_withholds_every_verdict_of_the_metric(tmp_path: Path) -> None:
    md = _build(_aa_run(tmp_path, [60e3, 61e3, 62e3, 60.5e3, 61.5e3]))
    a = _section(md, "## Experiment A")
    assert f"A/A differs: {judge.NOISE}" in a
    verdict = next(x for x in a.splitlines() if "p99 verdict" in x)
    assert judge.NOISE in verdict and "better" not in verdict


def test_pooled_report_lists_the_rates_that_ran() -> None:
    md = _build(RESULTS / "seed000-testbed-2026-12-01", RESULTS / "seed000-testbed-2026-12-02")
    a = _section(md, "## Experiment A")
    assert "| 8,797 / 13,264 |" in a
    assert "11,030" not in md  # the median of the two rates: no repetition ran it


def test_g_compares_its_codecs() -> None:
    md = _build(RESULTS / "catch-up-2026-12-02")
    assert "No codec can be compared" not in md
    g = _section(md, "## Experiment G")
    for codec in ("lz4", "zstd:3"):
        assert f"| {codec} vs none | consumers 1 |" in g and f"| {codec} vs none | consumers 2 |" in g
    assert "too few repetitions to tell (n = 2/2: a 5 % test needs ≥ 4 per cell)" in g
    assert "catch-up drain (G)" in _section(md, "## The answer")


def test_drifting_repetitions_are_excluded_and_listed_with_the_drift() -> None:
    md = _build(RESULTS / "clients-2026-12-02")
    excluded = _section(md, "## Excluded data points")
    assert "| DRIFT | DRIFT: rate drifted +52.8 % (bound ±10 %) over 6 in-window seconds |" in excluded
    assert "None: every row" not in excluded


def test_a_legend_of_many_series_is_never_dropped() -> None:
    fig = plots.figure()
    ax = fig.add_subplot()
    for i in range(plots.MAX_LEGEND + 5):
        ax.plot([0, 1], [i, i], label=f"series {i}")
    plots.legend(ax)
    texts = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
    assert texts == [f"series {i}" for i in range(plots.MAX_LEGEND + 5)]
    few = plots.figure()
    ax = few.add_subplot()
    ax.plot([0, 1], [0, 1], label="one")
    plots.legend(ax)
    assert ax.get_legend() is not None and not few.legends


def test_d_answer_prints_each_roles_aa_noise_floor(tmp_path: Path) -> None:
    """D's A/A control (a copy of fixed-000's rows as fixed-000-aa): the answer's CPU verdicts
    carry the control's spread per role, and the control is no candidate (no qualifier names it)."""
    run = tmp_path / "aa-d"
    shutil.copytree(RESULTS / "seed000-testbed-2026-12-01", run)
    with (run / "D.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    out = []
    for r in rows:
        out.append({**r, "control_of": ""})
        if r["cell_id"] == "fixed-000":
            out.append({**r, "cell_id": "fixed-000-aa", "control_of": "fixed-000"})
    with (run / "D.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, list(out[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(out)
    answer = _section(_build(run), "## The answer")
    row = next(x for x in answer.splitlines() if x.startswith("| zstd:3 vs none | json |"))
    assert row.count("A/A noise floor 0 [") == 2  # producer and consumer: the copy's shift is 0
    assert "control_of" not in row
