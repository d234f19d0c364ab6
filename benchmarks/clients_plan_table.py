"""Producer CPU-s per GB per client and thread group from a `kbench run clients` directory (D.csv).

    python benchmarks/clients_plan_table.py benchmarks/results/clients-short-2026-11-30b

Medians over the OK repetitions of each cell; the count of OK repetitions is shown when it is not
the plan's number.  `producer` is the whole driver process, then its thread groups from D's
loadgen/client columns (librdkafka: the loop thread, librdkafka's rdk:* threads; Java: the
application thread, the kafka-* client threads, and the rest of the process: JIT, GC, other).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from pathlib import Path

#: (client, label, column of the producer row); "rest" = the process total minus the two groups
COLUMNS = (
    ("librdkafka", "producer", "cpu_s_per_gb"),
    ("librdkafka", "loop thread", "loadgen_cpu_s_per_gb"),
    ("librdkafka", "rdk:* threads", "client_cpu_s_per_gb"),
    ("java", "producer", "cpu_s_per_gb"),
    ("java", "app thread", "loadgen_cpu_s_per_gb"),
    ("java", "kafka-* threads", "client_cpu_s_per_gb"),
    ("java", "rest (JIT, GC, other)", "rest"),
)


def _value(r: dict[str, str], col: str) -> float | None:
    def num(c: str) -> float | None:
        v = r.get(c, "")
        return None if v in ("", "NA") else float(v)

    if col != "rest":
        return num(col)
    parts = [num("cpu_s_per_gb"), num("loadgen_cpu_s_per_gb"), num("client_cpu_s_per_gb")]
    return None if None in parts else parts[0] - parts[1] - parts[2]  # type: ignore[operator]


def table(run: Path) -> str:
    with (run / "D.csv").open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["sweep"] == "fixed" and r["status"] == "OK"]
    reps = max((int(r["rep"]) for r in rows), default=0)
    codecs = list(dict.fromkeys(r["codec"] for r in rows))
    rate = rows[0]["target_rate_msgs"] if rows else "NA"
    out = [
        f"Fixed rate {float(rate):,.0f} msg/s; producer CPU-s per GB of payload (D), median of the OK repetitions:",
        "",
    ]
    head = [f"{client} {label}" for client, label, _ in COLUMNS]
    out += ["| codec | " + " | ".join(head) + " |", "|---|" + "---:|" * len(head)]
    for codec in codecs:
        vals = []
        for client, _, col in COLUMNS:
            got = [_value(r, col) for r in rows if (r["client"], r["codec"], r["role"]) == (client, codec, "producer")]
            xs = [v for v in got if v is not None]
            v = f"{statistics.median(xs):.2f}" if xs else "NA"
            vals.append(v + (f" ({len(xs)} runs)" if xs and len(xs) != reps else ""))
        out.append(f"| {codec} | " + " | ".join(vals) + " |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", type=Path, help="a run directory of the clients plan")
    args = ap.parse_args()
    if not (args.run / "D.csv").is_file():
        print(f"{args.run}/D.csv not found; give the -o directory of a `kbench run clients` run", file=sys.stderr)
        return 2
    print(table(args.run))
    return 0


if __name__ == "__main__":
    sys.exit(main())
