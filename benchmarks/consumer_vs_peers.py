"""kbench's C consumer (a one-member group draining a backlog, as experiment G does) side by side
with Kafka's ConsumerPerformance (the same jars as the broker) and ``kcat -C -e``.

One local 1-node Kafka 4.1.2 cluster; per codec (none, lz4, zstd) one 3-partition topic holding a
backlog of the built-in JSON events produced by kbench (saturated); then ``--reps`` repetitions
of the three tools in a rotating order, each reading the whole backlog from the beginning (a fresh
group each time):

- kbench: records / (last record - first record), the C consumer's own clock (start-up and the
  group's join excluded);
- ConsumerPerformance: its ``fetch.nMsg.sec`` (its rebalance time excluded);
- kcat: records / (its wall time - the wall time of the same command reading one record).

Client CPU per record: the process's CPU (kbench: this process's, by /proc; the others: the child's
rusage) less that of the same tool reading one record, over the backlog's records.

Usage: flock /tmp/kbench-kafka.lock python benchmarks/consumer_vs_peers.py --out results.json
       python benchmarks/consumer_vs_peers.py --render results.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kbench.kafka import admin, drivers, kafka_dist, procstat  # noqa: E402
from kbench.kafka.cluster import LocalCluster  # noqa: E402
from kbench.model import corpus  # noqa: E402

TOOLS = ("kbench", "ConsumerPerformance", "kcat")
CODECS = ("none", "lz4", "zstd")


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_kbench(bs: str, topic: str, n: int, group: str) -> dict[str, float]:
    before = procstat.snapshot([os.getpid()])
    c = drivers.new_consumer(
        {"bootstrap.servers": bs, "group.id": group},
        topic,
        0,
        0,
        120.0,
        max_records=1 if n == 1 else 0,
        group=True,
        from_beginning=True,
    )
    c_out = drivers.Background(c, "kbench").result()
    cpu = procstat.delta(before, procstat.snapshot([os.getpid()]))[0].total_s or 0.0
    if n > 1 and c_out["records"] != n:
        raise RuntimeError(f"kbench read {c_out['records']} of {n}")
    span = (c_out["last_ns"] - c_out["first_ns"]) / 1e9
    return {"records": c_out["records"], "msgs_per_s": (c_out["records"] - 1) / span if span > 0 else 0.0, "cpu_s": cpu}


def run_cp(bs: str, topic: str, n: int, group: str) -> dict[str, float]:
    args = ["--bootstrap-server", bs, "--topic", topic, "--messages", str(n), "--group", group, "--timeout", "60000"]
    cmd = kafka_dist.java_command(
        "org.apache.kafka.tools.ConsumerPerformance", args, heap="512m", jvm_opts=["-Dlog4j2.level=WARN"]
    )
    before = _children_cpu()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    cpu = _children_cpu() - before
    lines = [ln for ln in p.stdout.splitlines() if re.match(r"^\d{4}-\d\d-\d\d", ln)]
    if p.returncode != 0 or not lines:
        raise RuntimeError(f"ConsumerPerformance output not understood: {(p.stdout + p.stderr)[-300:]}")
    f = [x.strip() for x in lines[-1].split(",")]
    # start, end, MB, MB/s, nMsg, nMsg/s, rebalance ms, fetch ms, fetch MB/s, fetch nMsg/s
    return {"records": float(f[4]), "msgs_per_s": float(f[9]), "cpu_s": cpu}


def run_kcat(bs: str, topic: str, n: int, group: str) -> dict[str, float]:
    del group
    cmd = ["kcat", "-C", "-b", bs, "-t", topic, "-o", "beginning", "-q", "-f", "%o\n"]
    cmd += ["-c", "1"] if n == 1 else ["-e"]
    before = _children_cpu()
    t = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=600, check=True)
    wall = time.monotonic() - t
    return {"records": float(p.stdout.count(b"\n")), "wall_s": wall, "cpu_s": _children_cpu() - before}


RUN = {"kbench": run_kbench, "ConsumerPerformance": run_cp, "kcat": run_kcat}


def measure(records: int, reps: int) -> dict[str, Any]:
    recs = corpus.generate("json", 4 << 20, seed=1).records
    out: dict[str, Any] = {"records": records, "reps": reps, "librdkafka": drivers.librdkafka_version(), "codecs": {}}
    with tempfile.TemporaryDirectory() as d, LocalCluster(brokers=1, directory=Path(d)) as cluster:
        bs = cluster.bootstrap_servers
        out["kafka"] = kafka_dist.KAFKA_VERSION
        for codec in CODECS:
            topic = f"backlog-{codec}"
            admin.create_topic({"bootstrap.servers": bs}, topic, partitions=3)
            spec = drivers.ProducerSpec(
                topic=topic,
                props={"bootstrap.servers": bs, "compression.type": codec, "batch.size": "65536", "linger.ms": "5"},
                mode="saturated",
                count=records,
                headers=False,
            )
            assert drivers.produce(spec, recs).delivered == records
            start = {t: RUN[t](bs, topic, 1, f"s-{t}-{codec}") for t in TOOLS}
            runs: list[dict[str, Any]] = []
            for rep in range(reps):
                row: dict[str, Any] = {}
                for i in range(len(TOOLS)):
                    tool = TOOLS[(rep + i) % len(TOOLS)]
                    r = RUN[tool](bs, topic, records, f"g-{tool}-{codec}-{rep}")
                    if r["records"] != records:
                        raise RuntimeError(f"{tool} read {r['records']} of {records}")
                    if tool == "kcat":
                        r["msgs_per_s"] = records / max(1e-9, r["wall_s"] - start[tool]["wall_s"])
                    r["cpu_us_per_record"] = max(0.0, r["cpu_s"] - start[tool]["cpu_s"]) / records * 1e6
                    row[tool] = r
                runs.append(row)
            out["codecs"][codec] = {"startup": start, "runs": runs}
    return out


def markdown(res: dict[str, Any]) -> str:
    lines = [
        f"{res['records']:,} JSON records per backlog, {res['reps']} paired repetitions; librdkafka "
        f"{res['librdkafka']} (kbench, kcat), ConsumerPerformance from the broker's Kafka jars.",
        "",
        "| codec | tool | msgs/s median [min–max] | client CPU µs/record median [min–max] | kbench / tool msgs/s (median of pairs) |",
        "|---|---|---|---|---|",
    ]
    for codec, c in res["codecs"].items():
        for tool in TOOLS:
            rate = [r[tool]["msgs_per_s"] for r in c["runs"]]
            cpu = [r[tool]["cpu_us_per_record"] for r in c["runs"]]
            ratio = (
                ""
                if tool == "kbench"
                else f"{statistics.median(r['kbench']['msgs_per_s'] / r[tool]['msgs_per_s'] for r in c['runs']):.2f}"
            )
            lines.append(
                f"| {codec} | {tool} | {statistics.median(rate):,.0f} [{min(rate):,.0f}–{max(rate):,.0f}] "
                f"| {statistics.median(cpu):.2f} [{min(cpu):.2f}–{max(cpu):.2f}] | {ratio} |"
            )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--render", type=Path)
    a = ap.parse_args()
    if a.render:
        print(markdown(json.loads(a.render.read_text())))
        return 0
    res = measure(a.records, a.reps)
    text = json.dumps(res, indent=1, sort_keys=True)
    if a.out:
        a.out.write_text(text + "\n")
    print(markdown(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
