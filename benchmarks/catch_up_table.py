"""The catch-up table of benchmarks/README.md from a run's G.csv (``kbench run catch-up``).

Usage: python benchmarks/catch_up_table.py RUN_DIR/G.csv

Per codec, group size and fetch size (``fetch.max.bytes``), over the OK repetitions: median [min-max]
of the drain rate and its spread around the median (the issue's +-15 %), payload MB/s, the members'
CPU-s per GB (summed), medians of its split (loop thread / librdkafka's threads), the busiest
member's CPU % over the drain, the brokers' CPU-s per GB and the drain's length (median [min-max]:
every repetition's drain >= 5 s), and the host-speed probes' drift over the repetitions (median
[min-max] %, docs/methodology.md §4).  Below the table: the attempts the host-speed rule
invalidated, and Spearman's rank correlation between each OK repetition's host drift and its
distance from its cell's median rate (does the drain follow the host?).
"""

from __future__ import annotations

import csv
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from kbench.engine import stats

ORDER = ("none", "lz4", "zstd:3")


def _vals(rows: Sequence[dict[str, str]], col: str) -> list[float]:
    return [float(r[col]) for r in rows if r.get(col) not in (None, "", "NA")]


def _range(vals: list[float], fmt: Callable[[float], str]) -> str:
    if not vals:
        return "NA"
    return f"{fmt(statistics.median(vals))} [{fmt(min(vals))}–{fmt(max(vals))}]"


def _med(vals: list[float], fmt: Callable[[float], str]) -> str:
    return fmt(statistics.median(vals)) if vals else "NA"


def _spread(vals: list[float]) -> str:
    """The range around the median, in per cent of it: -a % / +b %."""
    if not vals:
        return "NA"
    m = statistics.median(vals)
    return f"{(min(vals) / m - 1) * 100:+.0f} % / {(max(vals) / m - 1) * 100:+.0f} %"


def table(path: Path) -> str:
    rows = [r for r in csv.DictReader(path.open()) if r["status"] == "OK"]
    keys = sorted(
        {(r["codec"], r["consumers"], r["fetch_max_bytes"]) for r in rows},
        key=lambda k: (ORDER.index(k[0]) if k[0] in ORDER else len(ORDER), k[0], int(k[1]), -int(k[2])),
    )
    whole = lambda v: f"{v:,.0f}".replace(",", " ")  # noqa: E731
    f1 = lambda v: f"{v:.1f}"  # noqa: E731
    f2 = lambda v: f"{v:.2f}"  # noqa: E731
    out = [
        "| codec | consumers | fetch.max.bytes | records/s | spread vs median | payload MB/s "
        "| consumer CPU-s/GB (sum) | of it loop / librdkafka "
        "| busiest member CPU % | broker CPU-s/GB | drain s | host drift % | n |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for codec, k, fetch in keys:
        rs = [r for r in rows if (r["codec"], r["consumers"], r["fetch_max_bytes"]) == (codec, k, fetch)]
        out.append(
            f"| {codec} | {k} | {int(fetch):,} | {_range(_vals(rs, 'drain_records_per_s'), whole)} "
            f"| {_spread(_vals(rs, 'drain_records_per_s'))} "
            f"| {_range(_vals(rs, 'drain_mb_per_s'), f1)} | {_range(_vals(rs, 'consumer_cpu_s_per_gb'), f2)} "
            f"| {_med(_vals(rs, 'consumer_app_s_per_gb'), f2)} / {_med(_vals(rs, 'consumer_client_s_per_gb'), f2)} "
            f"| {_med(_vals(rs, 'member_cpu_pct_max'), f1)} | {_range(_vals(rs, 'broker_cpu_s_per_gb'), f2)} "
            f"| {_range(_vals(rs, 'drain_s'), f1)} | {_range(_vals(rs, 'host_drift_pct'), f1)} | {len(rs)} |"
        )
    every = list(csv.DictReader(path.open()))
    invalid = [r for r in every if r["status"] == "INVALID" and "host speed" in r.get("reason", "")]
    out.append("")
    out.append(
        f"host-speed INVALID attempts: {len(invalid)}"
        + "".join(f"\n- {r['cell_id']} rep {r['rep']} attempt {r.get('attempt', '1')}: {r['reason']}" for r in invalid)
    )
    pairs = _drift_pairs(rows)
    if len(pairs) >= 3:
        rho = stats.spearman([x for x, _ in pairs], [y for _, y in pairs])
        out.append(f"Spearman(host drift, rate vs its cell median) over {len(pairs)} OK repetitions: {rho:+.2f}")
    return "\n".join(out)


def _drift_pairs(rows: Sequence[dict[str, str]]) -> list[tuple[float, float]]:
    """(host drift %, the repetition's rate against its cell's median %) of every OK repetition probed."""
    out = []
    for cid in sorted({r["cell_id"] for r in rows}):
        rs = [r for r in rows if r["cell_id"] == cid and r.get("host_drift_pct") not in (None, "", "NA")]
        if not rs:
            continue
        m = statistics.median(float(r["drain_records_per_s"]) for r in rs)
        out += [(float(r["host_drift_pct"]), (float(r["drain_records_per_s"]) / m - 1) * 100) for r in rs]
    return out


if __name__ == "__main__":
    print(table(Path(sys.argv[1])))
