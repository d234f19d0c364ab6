"""Drivers on Dask workers: total msg/s with 1, 2 and 3 producer workers against one broker, and
the coordinator's overhead per cell (start skew between producers, collection time).

A Dask ``LocalCluster`` of 3 worker processes on 127.0.0.1 and a kbench ``LocalCluster`` of one
broker; per repetition, P saturated producers (lz4, 3 partitions) run for ``--duration`` seconds
through the same code path as ``kbench run --workers`` (KafkaTransport → DaskPool); then one
fixed-rate cell with P producers + 1 consumer records the start skew and collection time.
Run under ``flock /tmp/kbench-kafka.lock``.  Usage:

    python benchmarks/distributed_scaling.py --reps 3 --duration 3 -o benchmarks/results/distributed_scaling-DATE.json
    python benchmarks/distributed_scaling.py --render benchmarks/results/distributed_scaling-DATE.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _cell(rate: float | str) -> Any:
    from kbench.engine import plan as plan_mod

    exps = ["B"] if rate == "saturated" else ["A"]
    plan = plan_mod.parse(
        {"name": "bench", "sweep": [{"experiments": exps, "codec": "lz4", "partitions": 3, "rate": rate}]},
        source="bench",
        base_dir=ROOT,
    )
    return plan_mod.expand(plan)[0]


def measure(reps: int, duration: float, rate: float) -> dict[str, Any]:
    import distributed

    from kbench.engine.plan import TransportDef
    from kbench.engine.transports.base import RunRequest
    from kbench.engine.transports.kafka import KafkaTransport
    from kbench.model import corpus

    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    c = corpus.generate("json", 1 << 20)
    out: dict[str, Any] = {"machine": platform.machine(), "cpus": os.cpu_count(), "duration_s": duration, "rows": []}
    with distributed.LocalCluster(
        n_workers=3, threads_per_worker=2, processes=True, host="127.0.0.1", dashboard_address=None
    ) as dc:
        for p in (1, 2, 3):
            t = KafkaTransport(TransportDef(kind="local", workers=dc.scheduler_address, producers=p, consumers=1))
            t.open()
            try:
                for rep in range(1, reps + 1):
                    for kind, r in (("saturated", "saturated"), ("fixed", rate)):
                        if kind == "fixed" and p == 3:
                            continue  # 3 producers + 1 consumer need 4 workers
                        req = RunRequest(
                            _cell(r),
                            f"bench-{p}-{rep}-{kind}",
                            c,
                            None if r == "saturated" else float(r),
                            duration,
                            0.0,
                        )
                        res = t.run(req)
                        co = res.coordinator
                        out["rows"].append(
                            {
                                "producers": p,
                                "rep": rep,
                                "kind": kind,
                                "msgs_per_s": res.achieved_rate,
                                "lost": res.lost,
                                "start_skew_ms": co["start_skew_ms"],
                                "start_late_ms": co["start_late_ms"],
                                "collect_ms": co["collect_ms"],
                            }
                        )
                        print(json.dumps(out["rows"][-1]), file=sys.stderr)
            finally:
                t.close()
    return out


def render(r: dict[str, Any]) -> str:
    def med(rows: list[dict[str, Any]], k: str) -> str:
        vals = [x[k] for x in rows if x[k] is not None]
        return f"{statistics.median(vals):,.{0 if k == 'msgs_per_s' else 2}f}" if vals else "NA"

    lines = [
        "| producer workers | saturated total msg/s (median) | range | start skew ms (median) | late vs start instant ms | collection ms |",
        "|---|---|---|---|---|---|",
    ]
    for p in (1, 2, 3):
        sat = [x for x in r["rows"] if x["producers"] == p and x["kind"] == "saturated"]
        allp = [x for x in r["rows"] if x["producers"] == p]
        rng = f"{min(x['msgs_per_s'] for x in sat):,.0f}–{max(x['msgs_per_s'] for x in sat):,.0f}" if sat else "NA"
        lines.append(
            f"| {p} | {med(sat, 'msgs_per_s')} | {rng} | {med(allp, 'start_skew_ms')} | "
            f"{med(allp, 'start_late_ms')} | {med(allp, 'collect_ms')} |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--duration", type=float, default=3.0)
    ap.add_argument("--rate", type=float, default=3000.0, help="total msg/s of the fixed-rate cell")
    ap.add_argument("-o", "--output", type=Path)
    ap.add_argument("--render", type=Path, default=None, help="print the Markdown table of a results JSON and exit")
    args = ap.parse_args()
    if args.render:
        print(render(json.loads(args.render.read_text())))
        return 0
    r = measure(args.reps, args.duration, args.rate)
    text = json.dumps(r, indent=1)
    if args.output:
        args.output.write_text(text + "\n")
    print(render(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
