"""Producer CPU-s per GB per client and thread group from a `kbench run clients` directory (D.csv).

    python benchmarks/clients_plan_table.py benchmarks/results/clients-short-2026-11-30b

Medians over the OK repetitions of each cell; the count of OK repetitions is shown when it is not
the plan's number.  `producer` is the whole driver process, then its thread groups (librdkafka:
the loop thread and librdkafka's rdk:* threads, D's loadgen/client columns; Java: the rows
producer.app, producer.client = kafka-producer-network-thread, producer.runtime = JIT and GC).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from pathlib import Path

#: (client, label, D.csv role, column): the process total, then its thread groups
COLUMNS = (
    ("librdkafka", "producer", "producer", "cpu_s_per_gb"),
    ("librdkafka", "loop thread", "producer", "loadgen_cpu_s_per_gb"),
    ("librdkafka", "rdk:* threads", "producer", "client_cpu_s_per_gb"),
    ("java", "producer", "producer", "cpu_s_per_gb"),
    ("java", "app thread", "producer.app", "cpu_s_per_gb"),
    ("java", "kafka-producer-network-thread", "producer.client", "cpu_s_per_gb"),
    ("java", "JIT + GC", "producer.runtime", "cpu_s_per_gb"),
)


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
    head = [f"{client} {label}" for client, label, _, _ in COLUMNS]
    out += ["| codec | " + " | ".join(head) + " |", "|---|" + "---:|" * len(head)]
    for codec in codecs:
        vals = []
        for client, _, role, col in COLUMNS:
            got = [r.get(col, "") for r in rows if (r["client"], r["codec"], r["role"]) == (client, codec, role)]
            xs = [float(v) for v in got if v not in ("", "NA", None)]
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
