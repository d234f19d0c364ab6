"""One row per (client, codec) from a `kbench run clients` directory: B, A, C and D side by side.

    python benchmarks/clients_summary.py benchmarks/results/clients-2026-12-02

Medians over the OK repetitions of each cell (n = the count of OK repetitions; a cell with none
shows its statuses instead).  Columns: B's saturated msg/s; the common fixed rate's corrected p99
and end-to-end p99 (A, ms); C's stored ratio; D's CPU-s per GB of payload for the producer and
the consumer processes, with the producer's client threads (librdkafka's rdk:*, Java's kafka-*,
the Go clients: NA, Go has no per-thread CPU) apart.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from collections import Counter
from pathlib import Path


def _rows(run: Path, exp: str) -> list[dict[str, str]]:
    path = run / f"{exp}.csv"
    if not path.exists():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _median(rows: list[dict[str, str]], col: str, scale: float = 1.0) -> str:
    vals = [float(r[col]) / scale for r in rows if r.get(col, "") not in ("", "NA")]
    if not vals:
        return "NA"
    m = statistics.median(vals)
    return f"{m:,.0f}" if m >= 1000 else f"{m:.2f}"


def _cell(rows: list[dict[str, str]], client: str, codec: str, role: str | None = None) -> list[dict[str, str]]:
    return [
        r for r in rows if r["client"] == client and r["codec"] == codec and (role is None or r.get("role") == role)
    ]


def _ok(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    return [r for r in rows if r["status"] == "OK"]


def _n(rows: list[dict[str, str]]) -> str:
    ok = len(_ok(rows))
    other = Counter(r["status"] for r in rows if r["status"] != "OK")
    return str(ok) + ("".join(f" +{k} {v}" for k, v in sorted(other.items())) if other else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", type=Path, help="a run directory of the clients plan")
    args = ap.parse_args(argv)
    a, b, c, d = (_rows(args.run, e) for e in "ABCD")
    if not (a or b or c or d):
        print(f"kbench: error: {args.run} holds no A/B/C/D CSV; give a run directory", file=sys.stderr)
        return 2
    keys = sorted({(r["client"], r["codec"]) for r in a + b + c + d})
    rate = sorted({r["target_rate_msgs"] for r in a})
    print(f"fixed rate (A, C, D): {', '.join(f'{float(x):,.0f}' for x in rate)} msg/s")
    print()
    print(
        "| client | codec | B msg/s (n) | A corrected p99 ms | A e2e p99 ms (n) | C ratio |"
        " D producer CPU-s/GB | D producer client threads | D consumer CPU-s/GB (n) |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for client, codec in keys:
        bc, ac, cc = _cell(b, client, codec), _cell(a, client, codec), _cell(c, client, codec)
        dp, dc = _cell(d, client, codec, "producer"), _cell(d, client, codec, "consumer")
        print(
            f"| {client} | {codec} | {_median(_ok(bc), 'achieved_rate_msgs')} ({_n(bc)}) |"
            f" {_median(_ok(ac), 'corrected_p99_us', 1000)} | {_median(_ok(ac), 'e2e_p99_us', 1000)} ({_n(ac)}) |"
            f" {_median(_ok(cc), 'ratio')} | {_median(_ok(dp), 'cpu_s_per_gb')} |"
            f" {_median(_ok(dp), 'client_cpu_s_per_gb')} | {_median(_ok(dc), 'cpu_s_per_gb')} ({_n(dc)}) |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
