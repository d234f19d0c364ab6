"""The report's answer: first, one row per codec against the baseline with the ratio (C), the
saturated throughput (B), CPU per role (D) and the p99 added (A); a p99 only from unsaturated,
OK repetitions, otherwise the reason: a latency verdict from saturated or queue-dominated
repetitions cannot be printed.  Built over a copy of the committed seed000-testbed run."""

from __future__ import annotations

import csv
import re
import shutil
import statistics
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("pandas")

from kbench.reporting import document as doc  # noqa: E402
from kbench.reporting import provenance, report  # noqa: E402
from kbench.reporting.provenance import fmt  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SEED000 = ROOT / "benchmarks" / "results" / "seed000-testbed-2026-12-01"
#: A verdict by the one rule: its words, then effect [interval], p, n and the seed's rule.
VERDICT = re.compile(
    r": [^:]+ \(-?[\d.,]+ ms \[-?[\d.,]+, -?[\d.,]+\], p = [<\d. ]+, n = \d+/\d+; seed rule: ranges \w+\)$"
)


def _build(run: Path) -> tuple[str, list[str]]:
    """report.md of ``run`` (no plots) and the problems --verify finds in it."""
    blocks, ledger, _, _ = report.build([run], with_plots=False)
    md = doc.to_markdown(blocks)
    prov = ledger.as_dict([str(run)])
    return md, provenance.verify(prov, [run], md) + report.placement_problems([run], md)


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _rewrite(path: Path, edit: Callable[[dict[str, str]], None]) -> None:
    rows = _rows(path)
    for r in rows:
        edit(r)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def _answer(md: str) -> dict[tuple[str, str], dict[str, str]]:
    """The answer table: (codec vs baseline, corpus) → column → cell."""
    section = md.split("## The answer", 1)[1].split("\n## ", 1)[0]
    lines = [x for x in section.splitlines() if x.startswith("| ")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    out = {}
    for line in lines[1:]:
        cells = dict(zip(head, (c.strip() for c in line.strip().strip("|").split("|"))))
        out[(cells["codec"], cells["corpus"])] = cells
    return out


@pytest.fixture
def run(tmp_path: Path) -> Path:
    d = tmp_path / SEED000.name
    shutil.copytree(SEED000, d, ignore=shutil.ignore_patterns("histograms"))
    return d


def _median(rows: list[dict[str, str]], col: str, **where: str) -> float:
    return statistics.median(
        float(r[col]) for r in rows if r["status"] == "OK" and all(r[k] == v for k, v in where.items())
    )


def test_the_report_leads_with_the_answer_then_the_setup_and_the_threats(run: Path) -> None:
    md, problems = _build(run)
    assert problems == []
    h2 = [x for x in md.splitlines() if x.startswith("## ")]
    assert h2[:4] == [
        "## The answer: each codec against the baseline",
        "## Setup: what was measured",
        "## Threats to validity shown by the data",
        "## Experiment A · latency at a common fixed rate (the latency cost of a codec)",
    ]
    ans = _answer(md)
    assert set(ans) == {("zstd:3 vs none", "json"), ("zstd:3 vs none", "random")}
    json_row = ans[("zstd:3 vs none", "json")]
    assert list(json_row)[2:] == [
        "ratio (C, stored bytes)",
        "throughput (B, saturated)",
        "producer CPU (D)",
        "consumer CPU (D)",
        "broker CPU (D)",
        "p99 added (A, fixed rate)",
    ]
    # each cell is its experiment's figure, recomputed here from the CSVs
    c, b, d, a = (_rows(run / f"{e}.csv") for e in "CBDA")
    assert json_row["ratio (C, stored bytes)"].startswith(fmt(_median(c, "ratio", codec="zstd:3", corpus="json"), "x"))
    nb, zb = (_median(b, "achieved_rate_msgs", codec=x, corpus="json") for x in ("none", "zstd:3"))
    assert json_row["throughput (B, saturated)"].startswith(f"{fmt((zb - nb) / nb * 100, 'pct')} msgs/s")
    zp, np_ = (_median(d, "cpu_s_per_gb", codec=x, corpus="json", role="producer") for x in ("zstd:3", "none"))
    assert json_row["producer CPU (D)"].startswith(
        f"{fmt(zp, 'f2')} vs {fmt(np_, 'f2')} CPU-s/GB ({fmt(zp / np_, 'x')})"
    )
    za, na = (_median(a, "corrected_p99_us", codec=x, corpus="json") for x in ("zstd:3", "none"))
    p99 = json_row["p99 added (A, fixed rate)"]
    assert p99.startswith(f"{fmt(za - na, 'ms+')} ms ({fmt(za, 'ms')} vs {fmt(na, 'ms')} ms): ")
    assert VERDICT.search(p99), p99  # every repetition OK and unsaturated: a verdict
    with pytest.raises(AssertionError):  # so the check the tests below make can fail
        _no_latency_verdict(md, "json")
    assert ans[("zstd:3 vs none", "random")]["throughput (B, saturated)"] == "not measured"  # B ran json only
    # the setup names every producer and topic setting
    setup = md.split("## Setup", 1)[1].split("\n## ", 1)[0]
    for title in ("batch.size (bytes)", "linger.ms", "acks", "partitions", "replication factor", "min.insync.replicas"):
        assert title in setup
    assert "| 65,536 | 5 | all | 6 |" in setup and "| testbed | 4.1.2 | 3 | 3 | 2 |" in setup
    assert "broker-3 (CPU 0)" in setup and "mean record bytes" in setup
    # the threats that touch it stand next to it, before the experiments
    threats = md.split("## Threats to validity", 1)[1].split("\n## ", 1)[0]
    assert "raised the CPU steal limit to 10%" in threats and "gate check “load average”" in threats
    # latencies in ms, no µs column anywhere
    assert "p99 ms" in md and "µs" not in md.split("## Claims", 1)[0]


def _no_latency_verdict(md: str, corpus: str) -> None:
    """No p99 verdict for ``corpus``: not in the answer, the headline or A's verdict row."""
    assert not any(line.startswith("- Latency increment") and f", corpus {corpus}:" in line for line in md.splitlines())
    verdict = next(x for x in md.splitlines() if x.startswith(f"| **corpus {corpus} p99 verdict"))
    assert not VERDICT.search(verdict.rstrip("| *")), verdict


def test_no_p99_from_saturated_repetitions(run: Path) -> None:
    def saturate(r: dict[str, str]) -> None:
        if r["codec"] == "zstd:3" and r["corpus"] == "json":
            r["status"], r["reason"] = (
                "SATURATED",
                "saturated: queue wait p50 111.1 ms − linger.ms 5 = 106.1 ms > 20 ms",
            )

    _rewrite(run / "A.csv", saturate)
    md, problems = _build(run)
    assert problems == []
    cell = _answer(md)[("zstd:3 vs none", "json")]["p99 added (A, fixed rate)"]
    assert cell == "no p99: SATURATED (zstd:3 2 of 2 rows): queueing, not the codec"
    _no_latency_verdict(md, "json")
    # the other corpus, unsaturated, keeps its p99 and verdict: the rule is per pair of cells
    assert VERDICT.search(_answer(md)[("zstd:3 vs none", "random")]["p99 added (A, fixed rate)"])


def test_no_p99_from_ok_rows_that_queueing_dominates(run: Path) -> None:
    """A CSV whose status says OK but whose own figures show the producer's queue wait far
    beyond linger.ms (the issue's 111 ms queue against 134 µs of compression) gives no p99."""

    def queue(r: dict[str, str]) -> None:
        if r["codec"] == "none" and r["corpus"] == "json":
            r["phase_queue_p50_us"] = "111103"

    _rewrite(run / "A.csv", queue)
    assert {r["status"] for r in _rows(run / "A.csv")} == {"OK"}
    md, problems = _build(run)
    assert problems == []
    cell = _answer(md)[("zstd:3 vs none", "json")]["p99 added (A, fixed rate)"]
    assert cell.startswith("no p99: OK repetitions of none break the unsaturated premise"), cell
    _no_latency_verdict(md, "json")


def test_no_p99_from_too_few_ok_repetitions(run: Path) -> None:
    seen: list[str] = []

    def reject_one(r: dict[str, str]) -> None:
        if r["codec"] == "zstd:3" and r["corpus"] == "json" and not seen:
            seen.append(r["rep"])
            r["status"], r["reason"] = "REJECTED", "achieved 9000.0 msgs/s, off the target 13264.0 msgs/s"

    _rewrite(run / "A.csv", reject_one)
    md, problems = _build(run)
    assert problems == []
    cell = _answer(md)[("zstd:3 vs none", "json")]["p99 added (A, fixed rate)"]
    assert cell == "no p99: too few OK repetitions (none 2 OK of 2, zstd:3 1 OK of 2; a verdict needs 2 per codec)"
    _no_latency_verdict(md, "json")


def test_a_says_which_messages_its_latencies_cover(run: Path) -> None:
    """A run made before the latency window (no ``rules.latency_window`` in its manifest) is said
    to cover every message; one made with it names the steady window's start, and --verify holds."""
    import json

    md, problems = _build(run)
    assert problems == []
    assert "Latencies cover every message of the repetition, start-up included." in md
    m = json.loads((run / "manifest.json").read_text())
    m["rules"]["latency_window"] = "steady"
    (run / "manifest.json").write_text(json.dumps(m))
    md, problems = _build(run)
    assert problems == []
    skip = m["steady_skip_s"]
    assert f"Latencies cover messages due {skip:g} s or more after the start (the steady window, as for CPU)." in md
