"""kbench's Java driver against Kafka's ProducerPerformance, and the C driver against the Java driver.

One local cluster (1 node), the built-in JSON corpus, the same settings for every tool, paired
repetitions in alternating order.

``pp``: saturated, --records per run, the Java driver (a ``kb`` header on the first record
only, so its bytes equal ProducerPerformance's) vs ProducerPerformance on the same JVM with the
same JVM flags (kbench.kafka.java_driver.JVM_FLAGS) and producer properties.  msg/s: the
driver's delivered rate (first send .. end of flush) and ProducerPerformance's final
records/sec (first send .. all acks); both exclude JVM start-up.  CPU per message: the whole
process (getrusage of the child: JVM start-up and JIT included), and the start-up share measured
by the same command sending 1 record.

``codecs``: the C driver (python -m kbench.kafka.worker) vs the Java driver at one fixed rate per
codec; CPU per message over the steady window the drivers report (from --skip seconds after
STARTED to the end), with the Java driver's per-thread split (app / client / runtime).

    python benchmarks/java_driver_vs_peers.py pp --records 2000000 --reps 5 --out r.json
    python benchmarks/java_driver_vs_peers.py codecs --rate 20000 --seconds 12 --skip 4 --reps 5 --out r.json
    python benchmarks/java_driver_vs_peers.py render --out r.json
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kbench.kafka import admin, clients, java_driver, kafka_dist  # noqa: E402
from kbench.kafka.cluster import LocalCluster  # noqa: E402
from kbench.model import corpus  # noqa: E402


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def driver(client: str, job: dict[str, Any]) -> tuple[dict[str, Any], float]:
    """One driver process to completion: its RESULT and its whole-process CPU seconds."""
    before = _children_cpu()
    p = subprocess.run(
        clients.driver_command(client),
        input=json.dumps({"protocol": clients.PROTOCOL, **job}) + "\n",
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    cpu = _children_cpu() - before
    last = p.stdout.strip().splitlines()[-1:] or [""]
    if not last[0].startswith("RESULT "):
        raise RuntimeError(f"{client} driver: {last[0] or p.stderr[-500:]}")
    return dict(json.loads(last[0][7:])), cpu


def pp(bs: str, topic: str, payload: Path, n: int, props: dict[str, str]) -> tuple[float, float]:
    args = ["--topic", topic, "--num-records", str(n), "--throughput", "-1", "--payload-file", str(payload)]
    args += ["--payload-delimiter", "\n", "--producer-props", f"bootstrap.servers={bs}"]
    args += [f"{k}={v}" for k, v in props.items()]
    cmd = [kafka_dist.java(), *java_driver.JVM_FLAGS, "-cp", kafka_dist.classpath()]
    cmd += ["org.apache.kafka.tools.ProducerPerformance", *args]
    before = _children_cpu()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900).stdout
    cpu = _children_cpu() - before
    m = re.findall(r"(\d+) records sent, ([\d.]+) records/sec", out)
    if not m or int(m[-1][0]) != n:
        raise RuntimeError(f"ProducerPerformance output not understood: {out[-300:]}")
    return float(m[-1][1]), cpu


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def bench_pp(bs: str, args: argparse.Namespace, tmp: Path, recs: tuple[bytes, ...]) -> dict[str, Any]:
    payload = tmp / "payload.txt"
    payload.write_bytes(b"\n".join(recs))
    cfile = tmp / "corpus.bin"
    cfile.write_bytes(b"".join(len(r).to_bytes(4, "big") + r for r in recs))
    props = {"compression.type": args.codec, "linger.ms": "5", "batch.size": "65536", "acks": "all"}
    rows: list[dict[str, Any]] = []

    def ours(topic: str, n: int) -> tuple[float, float]:
        res, cpu = driver(
            "java",
            {
                "role": "producer",
                "topic": topic,
                "props": {"bootstrap.servers": bs, **props},
                "corpus_file": str(cfile),
                "corpus_format": "lenprefixed",
                "mode": "saturated",
                "count": n,
                "run_id": 1,
                "header_sample": n + 1,
            },
        )
        if res["delivered"] != n:
            raise RuntimeError(f"driver delivered {res['delivered']}/{n}")
        return float(res["delivered_rate"]), cpu

    k = 0
    for rep in range(args.reps + 1):  # rep 0: warm-up of the broker and page cache, discarded
        order = ("driver", "pp") if rep % 2 else ("pp", "driver")
        row: dict[str, Any] = {"rep": rep}
        for tool in order:
            k += 1
            topic = f"jb-{k}"
            admin.create_topic({"bootstrap.servers": bs}, topic, 1, 1)
            rate, cpu = ours(topic, args.records) if tool == "driver" else pp(bs, topic, payload, args.records, props)
            row[tool] = {"msg_s": rate, "cpu_s": cpu, "cpu_us_per_msg": 1e6 * cpu / args.records}
            admin.delete_topic({"bootstrap.servers": bs}, topic)
        row["ratio_msg_s"] = row["driver"]["msg_s"] / row["pp"]["msg_s"]
        print(json.dumps(row), flush=True)
        if rep:
            rows.append(row)
    # start-up: the same commands sending one record
    admin.create_topic({"bootstrap.servers": bs}, "jb-one", 1, 1)
    one = {"driver": ours("jb-one", 1)[1], "pp": pp(bs, "jb-one", payload, 1, props)[1]}
    return {
        "records": args.records,
        "codec": args.codec,
        "props": props,
        "jvm_flags": list(java_driver.JVM_FLAGS),
        "pairs": rows,
        "startup_cpu_s": one,
        "median": {
            t: {
                "msg_s": med([r[t]["msg_s"] for r in rows]),
                "cpu_us_per_msg": med([r[t]["cpu_us_per_msg"] for r in rows]),
                "seconds": args.records / med([r[t]["msg_s"] for r in rows]),
            }
            for t in ("driver", "pp")
        },
        "ratio_msg_s": {"median": med([r["ratio_msg_s"] for r in rows]), "all": [r["ratio_msg_s"] for r in rows]},
    }


def bench_codecs(bs: str, args: argparse.Namespace, tmp: Path, recs: tuple[bytes, ...]) -> dict[str, Any]:
    cfile = tmp / "corpus.bin"
    cfile.write_bytes(b"".join(len(r).to_bytes(4, "big") + r for r in recs))
    out: dict[str, Any] = {"rate": args.rate, "seconds": args.seconds, "skip_s": args.skip, "codecs": {}}
    k = 0
    for codec in args.codecs.split(","):
        pairs = []
        for rep in range(args.reps):
            order = ("librdkafka", "java") if rep % 2 else ("java", "librdkafka")
            row: dict[str, Any] = {"rep": rep + 1}
            for client in order:
                k += 1
                topic = f"jc-{k}"
                admin.create_topic({"bootstrap.servers": bs}, topic, 1, 1)
                props = clients.producer_props(client, {"bootstrap.servers": bs}, codec, None, 65536, 5.0, "all")
                count = int(args.rate * args.seconds)
                res, _ = driver(
                    client,
                    {
                        "role": "producer",
                        "topic": topic,
                        "props": props,
                        "corpus_file": str(cfile),
                        "corpus_format": "lenprefixed",
                        "mode": "fixed-rate",
                        "rate": args.rate,
                        "count": count,
                        "run_id": k,
                        "skip_s": args.skip,
                    },
                )
                admin.delete_topic({"bootstrap.servers": bs}, topic)
                c = res["cpu"]
                msgs = args.rate * c["wall_s"]
                row[client] = {
                    "cpu_us_per_msg": 1e6 * (c["usr_s"] + c["sys_s"]) / msgs,
                    "achieved_rate": res["achieved_rate"],
                    "delivered": res["delivered"],
                    "threads_us_per_msg": {
                        g: 1e6 * (t["usr_s"] + t["sys_s"]) / msgs for g, t in (c.get("threads") or {}).items()
                    },
                }
            print(codec, json.dumps(row), flush=True)
            pairs.append(row)
        out["codecs"][codec] = {
            "pairs": pairs,
            "median_cpu_us_per_msg": {
                cl: med([p[cl]["cpu_us_per_msg"] for p in pairs]) for cl in ("librdkafka", "java")
            },
            "median_java_threads_us_per_msg": {
                g: med([p["java"]["threads_us_per_msg"][g] for p in pairs])
                for g in pairs[0]["java"]["threads_us_per_msg"]
            },
        }
    return out


def render(path: Path) -> str:
    """Markdown tables of a results JSON (pp or codecs)."""
    r = json.loads(path.read_text())
    out: list[str] = []
    if "pairs" in r:
        m = r["median"]
        out.append(
            f"{r['records']:,} records per run, codec {r['codec']}, {len(r['pairs'])} paired repetitions "
            f"(alternating order) after one discarded pair; properties {r['props']}; JVM flags "
            f"`{' '.join(r['jvm_flags'])}`."
        )
        out.append("")
        out.append(
            "| tool | msg/s (median) | timed part (s) | client CPU µs/msg (whole process) | start-up CPU (s) "
            "| start-up share of the CPU | client CPU µs/msg without start-up |"
        )
        out.append("|---|---:|---:|---:|---:|---:|---:|")
        for t, name in (("driver", "kbench Java driver"), ("pp", "ProducerPerformance")):
            out.append(
                f"| {name} | {m[t]['msg_s']:,.0f} | {m[t]['seconds']:.1f} | {m[t]['cpu_us_per_msg']:.2f} "
                f"| {r['startup_cpu_s'][t]:.2f} "
                f"| {100 * r['startup_cpu_s'][t] / (m[t]['cpu_us_per_msg'] * r['records'] / 1e6):.1f} % "
                f"| {med([1e6 * (p[t]['cpu_s'] - r['startup_cpu_s'][t]) / r['records'] for p in r['pairs']]):.2f} |"
            )
        ratios = ", ".join(f"{x:.3f}" for x in r["ratio_msg_s"]["all"])
        out.append("")
        out.append(
            f"driver / ProducerPerformance msg/s per pair: {ratios}; median **{r['ratio_msg_s']['median']:.3f}**."
        )
    else:
        out.append(
            f"Fixed rate {r['rate']:,.0f} msg/s for {r['seconds']:g} s per run, CPU window from {r['skip_s']:g} s after "
            f"STARTED to the end; {len(next(iter(r['codecs'].values()))['pairs'])} paired repetitions per codec."
        )
        out.append("")
        out.append(
            "| codec | librdkafka µs/msg | Java µs/msg | Java / librdkafka | Java app thread | Java client threads "
            "| Java runtime (JIT, GC) | Java other |"
        )
        out.append("|---|---:|---:|---:|---:|---:|---:|---:|")
        for codec, d in r["codecs"].items():
            c, j = d["median_cpu_us_per_msg"]["librdkafka"], d["median_cpu_us_per_msg"]["java"]
            t = d["median_java_threads_us_per_msg"]
            out.append(
                f"| {codec} | {c:.2f} | {j:.2f} | {j / c:.2f} | {t['app']:.2f} | {t['client']:.2f} "
                f"| {t['runtime']:.2f} | {t['other']:.2f} |"
            )
        rates = [
            p[cl]["achieved_rate"] for d in r["codecs"].values() for p in d["pairs"] for cl in ("librdkafka", "java")
        ]
        dev = max(abs(x - r["rate"]) / r["rate"] for x in rates)
        out.append("")
        out.append(f"Largest deviation of an achieved rate from the target over all runs: {100 * dev:.3f} %.")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("pp", "codecs", "render"))
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--codec", default="lz4")
    ap.add_argument("--codecs", default="none,lz4,zstd")
    ap.add_argument("--rate", type=float, default=20000)
    ap.add_argument("--seconds", type=float, default=12)
    ap.add_argument("--skip", type=float, default=4)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", type=Path, required=True, help="results JSON to write (or to read, with render)")
    args = ap.parse_args()
    if args.what == "render":
        print(render(args.out))
        return 0
    recs = corpus.generate("json", 4 << 20, seed=1).records
    java_driver.build()
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kbench-jb-") as tmp, LocalCluster(brokers=1) as cl:
        bs = cl.bootstrap_servers
        fn = bench_pp if args.what == "pp" else bench_codecs
        res = fn(bs, args, Path(tmp), recs)
    res["wall_s"] = time.monotonic() - t0
    args.out.write_text(json.dumps(res, indent=2))
    print(json.dumps({k: v for k, v in res.items() if k not in ("pairs", "codecs")}, indent=2))
    if "codecs" in res:
        print(json.dumps({c: {k: v for k, v in d.items() if k != "pairs"} for c, d in res["codecs"].items()}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
