"""CPU of the fixed-rate producer's own loop thread, at given rates, for whichever kbench is on
``PYTHONPATH`` (so the same script measures an older build: put its checkout first).

The loop runs in this script's main thread (``kbench._native.Producer.run()`` directly), and
its CPU is ``time.thread_time()`` around the run: the pacing, the produce() calls and the
delivery reports served on that thread, plus connect and flush (the same for every build).
librdkafka's own threads are not in it.  One local 1-node cluster (started here unless
--bootstrap is given), one-partition topics, the built-in log-lines corpus, codec none.

    flock /tmp/kbench-kafka.lock python benchmarks/pacing_cpu.py --rates 10000,100000 --seconds 10 --reps 3 \
        --label after --out after.jsonl
    python benchmarks/pacing_cpu.py --render before.jsonl after.jsonl   # the README table

Each measured row is one JSON line (printed, and appended to --out).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # a PYTHONPATH given by the caller (an older build) comes first

from kbench import _native  # noqa: E402
from kbench.kafka import admin  # noqa: E402
from kbench.kafka.cluster import LocalCluster  # noqa: E402
from kbench.kafka.drivers import records_buffer  # noqa: E402
from kbench.model import corpus  # noqa: E402


def one_run(bs: str, topic: str, payload: bytes, offsets: object, rate: float, seconds: float) -> dict[str, float]:
    props = {"bootstrap.servers": bs, "linger.ms": "5", "acks": "1", "compression.type": "none"}
    p = _native.Producer(props, topic, payload, offsets, mode="fixed-rate", rate=rate, duration=seconds)
    c0 = time.thread_time()
    r = p.run()
    cpu = time.thread_time() - c0
    span = (r["last_send_ns"] - r["t0_ns"]) / 1e9
    achieved = (r["sent"] - 1) / span
    return {
        "loop_cpu_pct": 100.0 * cpu / span,
        "achieved_rate": achieved,
        "rate_dev_pct": 100.0 * (achieved - rate) / rate,
        "delay_p99_us": r["delay"].percentile(99) / 1e3,
    }


def markdown(rows: list[dict]) -> str:
    """The README table from result rows (no figure typed by hand)."""
    lines = [
        "| rate (msg/s) | build | loop thread CPU, % of one CPU (median, range) | achieved vs target | delay p99 |",
        "|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: (r["rate"], not r["build"].startswith("before"))):
        lo, hi = r["loop_cpu_pct_range"]
        lines.append(
            f"| {r['rate']:,.0f} | {r['build']} | {r['loop_cpu_pct']:.1f} ({lo:.1f}–{hi:.1f}) | "
            f"{r['rate_dev_pct']:+.4f} % | {r['delay_p99_us'] / 1e3:.1f} ms |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="10000,100000")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--bootstrap")
    ap.add_argument("--label", default="", help="a name for this build in the output")
    ap.add_argument("--out", type=Path, help="append each row (a JSON line) to this file")
    ap.add_argument("--render", type=Path, nargs="+", help="print the README table of result files and exit")
    args = ap.parse_args()
    if args.render:
        print(markdown([json.loads(x) for f in args.render for x in f.read_text().splitlines() if x.strip()]))
        return 0
    import kbench

    payload, offsets = records_buffer(corpus.generate("logs", 1 << 20, seed=1).records)
    rates = [float(r) for r in args.rates.split(",")]

    def measure(bs: str) -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        n = 0
        for rate in rates:
            runs = []
            for _ in range(args.reps):
                n += 1
                topic = f"pacing-{int(time.time())}-{n}"
                admin.create_topic({"bootstrap.servers": bs}, topic, partitions=1)
                runs.append(one_run(bs, topic, payload, offsets, rate, args.seconds))
            row = {"rate": rate, "build": args.label or str(Path(kbench.__file__).parent.parent)}
            for k in runs[0]:
                vals = [float(r[k]) for r in runs]
                row[k] = statistics.median(vals)
                row[k + "_range"] = [min(vals), max(vals)]
            print(json.dumps(row), flush=True)
            if args.out:
                with args.out.open("a") as f:
                    f.write(json.dumps(row) + "\n")
            out.append(row)
        return out

    if args.bootstrap:
        measure(args.bootstrap)
    else:
        with LocalCluster(brokers=1, directory=Path(tempfile.mkdtemp(prefix="kbench-pacing-"))) as c:
            measure(c.client_props()["bootstrap.servers"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
