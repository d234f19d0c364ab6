"""CPU of the fixed-rate producer (its own loop thread, and the whole process) at given rates
and ticks, for whichever kbench is on ``PYTHONPATH`` (so the same script measures an older
build: put its checkout first).

The loop runs in this script's main thread (``kbench._native.Producer.run()`` directly).  Its CPU
is read by the loop itself from ``/proc/self/task/<tid>/stat`` over the steady window
(``cpu_skip`` = 1 s after the first due time to the end of the flush: no connect, no start-up),
as is the whole process's (``/proc/self/stat``: the loop, librdkafka's ``rdk:*`` threads and the
idle interpreter).  One local 1-node cluster (started here unless --bootstrap is given),
one-partition topics, the built-in log-lines corpus, codec none, ``linger.ms=5``, ``acks=1``.
With several ``--ticks`` each repetition runs every tick back to back, the order alternating
between repetitions, so that the machine's load falls on all of them alike.

    flock /tmp/kbench-kafka.lock python benchmarks/pacing_cpu.py --rates 10000 --seconds 20 --reps 5 \
        --ticks 0.0005,0.002 --out after.jsonl
    python benchmarks/pacing_cpu.py --render after.jsonl   # the README table

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


def one_run(
    bs: str, topic: str, payload: bytes, offsets: object, rate: float, seconds: float, tick: float | None
) -> dict[str, float]:
    props = {"bootstrap.servers": bs, "linger.ms": "5", "acks": "1", "compression.type": "none"}
    kw = {} if tick is None else {"tick": tick}  # None: the build's own default
    p = _native.Producer(
        props, topic, payload, offsets, mode="fixed-rate", rate=rate, duration=seconds, cpu_skip=1.0, **kw
    )
    r = p.run()
    c = r["cpu"]
    wall = c["wall_s"]
    span = (r["last_send_ns"] - r["t0_ns"]) / 1e9
    achieved = (r["sent"] - 1) / span
    return {
        "loop_cpu_pct": 100.0 * (c["loop_usr_s"] + c["loop_sys_s"]) / wall,
        "process_cpu_pct": 100.0 * (c["usr_s"] + c["sys_s"]) / wall,
        "wakes_per_s": r["wakes"] / span,
        "achieved_rate": achieved,
        "rate_dev_pct": 100.0 * (achieved - rate) / rate,
        "delay_p50_us": r["delay"].percentile(50) / 1e3,
        "delay_p99_us": r["delay"].percentile(99) / 1e3,
    }


def markdown(rows: list[dict]) -> str:
    """The README table from result rows (no figure typed by hand)."""
    lines = [
        "| rate (msg/s) | build | loop thread, % of one CPU (median, range) | process, % of one CPU "
        "(median, range) | wakes/s | achieved vs target (median, worst) | delay p50 / p99 |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: (r["rate"], r["build"])):
        lo, hi = r["loop_cpu_pct_range"]
        plo, phi = r["process_cpu_pct_range"]
        worst = max(r["rate_dev_pct_range"], key=abs)
        lines.append(
            f"| {r['rate']:,.0f} | {r['build']} | {r['loop_cpu_pct']:.1f} ({lo:.1f}–{hi:.1f}) | "
            f"{r['process_cpu_pct']:.1f} ({plo:.1f}–{phi:.1f}) | {r['wakes_per_s']:,.0f} | "
            f"{r['rate_dev_pct']:+.4f} % ({worst:+.4f} %) | "
            f"{r['delay_p50_us'] / 1e3:.2f} / {r['delay_p99_us'] / 1e3:.2f} ms |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="10000,100000")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--bootstrap")
    ap.add_argument("--ticks", default="", help="comma-separated ticks (s) to alternate; default: the build's own")
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
    ticks: list[float | None] = [float(t) for t in args.ticks.split(",")] if args.ticks else [None]
    build = args.label or str(Path(kbench.__file__).parent.parent)

    def name(tick: float | None) -> str:
        return build if tick is None else f"{build} tick {tick * 1e3:g} ms".strip()

    def measure(bs: str) -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        n = 0
        for rate in rates:
            runs: dict[float | None, list[dict[str, float]]] = {t: [] for t in ticks}
            for rep in range(args.reps):
                for tick in ticks if rep % 2 == 0 else ticks[::-1]:
                    n += 1
                    topic = f"pacing-{int(time.time())}-{n}"
                    admin.create_topic({"bootstrap.servers": bs}, topic, partitions=1)
                    runs[tick].append(one_run(bs, topic, payload, offsets, rate, args.seconds, tick))
                    admin.delete_topic({"bootstrap.servers": bs}, topic)
            for tick, rs in runs.items():
                row: dict[str, object] = {"rate": rate, "build": name(tick), "seconds": args.seconds, "reps": len(rs)}
                for k in rs[0]:
                    vals = [float(r[k]) for r in rs]
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
