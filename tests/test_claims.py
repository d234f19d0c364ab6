"""The seeds' claims: one mapping (kbench/data/claims.toml), every claim judged in docs/claims.md,
and a report naming the claims its experiments bear on."""

from __future__ import annotations

import re
from pathlib import Path

from report_runs import ROOT, zstd_vs_none_run

from kbench.reporting import claims, report

DOC = ROOT / "docs" / "claims.md"
SEEDS = ("000", "001", "002", "003")


def _doc_ids() -> set[str]:
    return set(re.findall(r"^### `([a-z0-9-]+)`", DOC.read_text(), flags=re.M))


def test_every_claim_has_a_verdict_in_docs_and_every_seed_is_covered() -> None:
    cs = claims.load()
    ids = [c.id for c in cs]
    assert len(ids) == len(set(ids))
    assert set(ids) == _doc_ids()
    assert {c.seed for c in cs} == set(SEEDS)
    text = DOC.read_text()
    for cid in ids:
        section = text.split(f"### `{cid}`", 1)[1].split("\n### ", 1)[0]
        assert re.search(r"\*\*Verdict: (true|false|partly true|not testable here)", section), cid
    for c in cs:  # reports print no unmeasured number: topics carry none
        assert not re.search(r"(?<![A-Za-z])\d", c.topic), c.id  # codec names such as lz4 are words


def test_bearing_on_selects_by_experiment() -> None:
    a = {c.id for c in claims.bearing_on(["A"])}
    assert "zstd-no-latency-at-half-saturation" in a
    assert "zstd-cuts-broker-cpu" not in a
    assert "zstd-cuts-broker-cpu" in {c.id for c in claims.bearing_on(["D"])}
    assert claims.bearing_on([]) == []


def test_report_names_the_claims_its_experiments_bear_on(tmp_path: Path) -> None:
    run = zstd_vs_none_run(tmp_path / "runs")
    md = report.write([run], tmp_path / "rep", with_plots=False).markdown.read_text()
    section = md.split("## Claims these experiments bear on", 1)[1].split("\n## ", 1)[0]
    for cid in ("zstd-no-latency-at-half-saturation", "zstd-cuts-broker-cpu", "corpus-decides-ratio"):
        assert cid in section
    assert "recompression-costs-broker-cpu" in section  # D bears on it too
    assert "lz4-frames-big-endian" not in section  # the inspector's claim: no A-D experiment bears on it
