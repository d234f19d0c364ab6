"""kbench's C producer side by side with Kafka's ProducerPerformance and kcat.

One local cluster (1 node, started here unless --bootstrap is given), one payload file (the
built-in JSON corpus, one record per line), the same record count, codec and batch settings for
every tool, runs alternating tool order per repetition, for none, lz4 and zstd.  Then the
fixed-rate accuracy of kbench (achieved/target over --fixed-seconds at half of kbench's
saturated rate) and the cost of recording one latency sample.

    python benchmarks/producer_vs_peers.py --records 300000 --reps 3 --out runs/peers.json

Throughput is delivered messages per second:
- kbench: delivered / (first send .. last delivery report, flush included);
- ProducerPerformance: its own final "records/sec" (first send .. all acks, JVM start excluded);
- kcat: records / wall time of the process minus the wall time of the same kcat command
  producing one record (process start, metadata, connection) measured right before.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kbench import _native  # noqa: E402
from kbench.kafka import admin, kafka_dist, procstat  # noqa: E402
from kbench.kafka.cluster import LocalCluster  # noqa: E402
from kbench.kafka.drivers import ProducerSpec, produce  # noqa: E402
from kbench.model import corpus  # noqa: E402

CODECS = ("none", "lz4", "zstd")
TOOLS = ("kbench", "kbench-noheader", "ProducerPerformance", "kcat")


def common_props(codec: str, batch_size: int, linger_ms: int) -> dict[str, str]:
    """Settings every tool gets (librdkafka and Java names agree on these)."""
    return {
        "compression.type": codec,
        "linger.ms": str(linger_ms),
        "batch.size": str(batch_size),
        "acks": "1",
        "enable.idempotence": "false",
    }


def run_kbench(
    bs: str, topic: str, records: list[bytes], n: int, props: dict[str, str], headers: bool = True
) -> tuple[float, float]:
    spec = ProducerSpec(
        topic=topic,
        props={"bootstrap.servers": bs, **props},
        mode="saturated",
        count=n,
        flush_timeout=120,
        headers=headers,
    )
    before = procstat.snapshot([os.getpid()])
    r = produce(spec, records)
    cpu = procstat.delta(before, procstat.snapshot([os.getpid()]))[0].total_s
    if r.delivered != n:
        raise RuntimeError(f"kbench delivered {r.delivered}/{n}: {r.delivery_errors}")
    return r.delivered_rate, cpu or 0.0


def run_pp(bs: str, topic: str, payload_file: Path, n: int, props: dict[str, str]) -> tuple[float, float]:
    args = [
        "--topic",
        topic,
        "--num-records",
        str(n),
        "--throughput",
        "-1",
        "--payload-file",
        str(payload_file),
        "--payload-delimiter",
        "\n",
        "--producer-props",
        f"bootstrap.servers={bs}",
        *[f"{k}={v}" for k, v in props.items()],
    ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = kafka_dist.run_tool("org.apache.kafka.tools.ProducerPerformance", args, timeout=600, heap="512m").stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    m = re.findall(r"(\d+) records sent, ([\d.]+) records/sec", out)
    if not m or int(m[-1][0]) != n:
        raise RuntimeError(f"ProducerPerformance output not understood: {out[-300:]}")
    return float(m[-1][1]), cpu


def run_kcat(
    bs: str, topic: str, payload_file: Path, one_file: Path, n: int, props: dict[str, str]
) -> tuple[float, float, float]:
    def cmd(f: Path) -> list[str]:
        return [
            "kcat",
            "-P",
            "-b",
            bs,
            "-t",
            topic,
            "-l",
            *sum((["-X", f"{k}={v}"] for k, v in props.items()), []),
            str(f),
        ]

    t = time.monotonic()
    subprocess.run(cmd(one_file), check=True, timeout=60)
    overhead = time.monotonic() - t
    t = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd(payload_file), check=True, timeout=600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.monotonic() - t
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return n / max(1e-9, wall - overhead), overhead, cpu


def fixed_rate_accuracy(
    bs: str, topic: str, records: list[bytes], rate: float, seconds: float, props: dict[str, str]
) -> dict[str, float]:
    spec = ProducerSpec(
        topic=topic,
        props={"bootstrap.servers": bs, **props},
        mode="fixed-rate",
        rate=rate,
        count=int(rate * seconds),
        flush_timeout=120,
    )
    r = produce(spec, records)
    assert r.delay is not None and r.corrected is not None
    return {
        "target_rate": rate,
        "achieved_rate": r.achieved_rate,
        "deviation_pct": 100 * (r.rate_deviation or 0.0),
        "sent": r.sent,
        "delivered": r.delivered,
        "delay_p50_us": r.delay.percentile(50) / 1e3,
        "delay_p99_us": r.delay.percentile(99) / 1e3,
        "delay_max_us": r.delay.max / 1e3,
        "service_p50_us": r.service.percentile(50) / 1e3,
        "service_p99_us": r.service.percentile(99) / 1e3,
        "corrected_p99_us": r.corrected.percentile(99) / 1e3,
    }


def summarise(runs: list[dict]) -> dict[str, dict[str, float]]:
    """Per codec: each tool's median msg/s and the medians of per-repetition ratios.

    The runs of one repetition are back to back, so their ratio cancels most of the shared
    machine's background load; the median of per-repetition ratios is the verdict.
    """
    summary: dict[str, dict[str, float]] = {}
    for codec in dict.fromkeys(r["codec"] for r in runs):
        mine = [r for r in runs if r["codec"] == codec]
        med = {t: statistics.median([r["msgs_per_s"] for r in mine if r["tool"] == t] or [math.nan]) for t in TOOLS}
        per = {(r["rep"], r["tool"]): r["msgs_per_s"] for r in mine}
        reps = sorted({r["rep"] for r in mine})
        cpu = {
            t: statistics.median(
                [r.get("client_cpu_us_per_msg", math.nan) for r in mine if r["tool"] == t] or [math.nan]
            )
            for t in TOOLS
        }
        summary[codec] = {
            **{f"{t}_median": v for t, v in med.items()},
            **{f"{t}_cpu_us_per_msg": v for t, v in cpu.items()},
            "kbench/ProducerPerformance": statistics.median(
                per[(k, "kbench")] / per[(k, "ProducerPerformance")] for k in reps
            ),
            "kbench/kcat": statistics.median(per[(k, "kbench")] / per[(k, "kcat")] for k in reps),
        }
        if "kbench-noheader" in med and not math.isnan(med["kbench-noheader"]):
            summary[codec]["kbench-noheader/kcat"] = statistics.median(
                per[(k, "kbench-noheader")] / per[(k, "kcat")] for k in reps
            )
    return summary


def markdown(results: dict) -> str:
    """The README tables, generated from the results JSON (no figure typed by hand)."""
    lines = [
        f"Records: {results['records']} per run, {results['reps']} alternating repetitions after one discarded "
        f"warm-up round; batch.size={results['batch.size']}, linger.ms={results['linger.ms']}, acks=1, "
        f"idempotence off; corpus {results['corpus']} (avg {results['avg_record_bytes']:.0f} B/record); "
        f"librdkafka {results['librdkafka']}, Kafka {results['kafka']}.",
        "",
        "Medians of each tool's runs; the ratios are medians of the per-repetition ratios (the runs",
        "of a repetition are back to back, so the ratio cancels most of the shared machine's background load).",
        "",
        "kbench carries a 24-byte `kb` header per message (send time, sequence, run id: 28 bytes on the wire);",
        "the peers send none.  `kbench-noheader` is the same loop without it (saturated only), i.e. the same bytes.",
        "",
        "| codec | kbench msg/s | kbench-noheader msg/s | ProducerPerformance msg/s | kcat msg/s | kbench / PP | kbench / kcat | kbench-noheader / kcat |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for codec, s in summarise(results["runs"]).items():
        nh = s.get("kbench-noheader/kcat", math.nan)
        lines.append(
            f"| {codec} | {s['kbench_median']:,.0f} | {s['kbench-noheader_median']:,.0f} | "
            f"{s['ProducerPerformance_median']:,.0f} | {s['kcat_median']:,.0f} | "
            f"{s['kbench/ProducerPerformance']:.2f} | {s['kbench/kcat']:.2f} | {nh:.2f} |"
        )
    if "client_cpu_us_per_msg" in results["runs"][0]:
        lines += [
            "",
            "Client CPU (user + sys of the producing process, µs per message, median; the JVM's includes",
            "its start-up and JIT, kcat's its one-record start-up run is not included):",
            "",
            "| codec | kbench | kbench-noheader | ProducerPerformance | kcat |",
            "|---|---:|---:|---:|---:|",
        ]
        for codec, s in summarise(results["runs"]).items():
            lines.append(
                f"| {codec} | {s['kbench_cpu_us_per_msg']:.2f} | {s['kbench-noheader_cpu_us_per_msg']:.2f} | "
                f"{s['ProducerPerformance_cpu_us_per_msg']:.2f} | {s['kcat_cpu_us_per_msg']:.2f} |"
            )
    lines += [
        "",
        "Per run (msg/s):",
        "",
        "| codec | rep | kbench | kbench-noheader | ProducerPerformance | kcat | kbench / kcat |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    by: dict[tuple[str, int], dict[str, float]] = {}
    for r in results["runs"]:
        by.setdefault((r["codec"], r["rep"]), {})[r["tool"]] = r["msgs_per_s"]
    for (codec, rep), v in by.items():
        lines.append(
            f"| {codec} | {rep} | {v['kbench']:,.0f} | {v.get('kbench-noheader', math.nan):,.0f} | "
            f"{v['ProducerPerformance']:,.0f} | {v['kcat']:,.0f} | {v['kbench'] / v['kcat']:.2f} |"
        )
    f = results["fixed_rate"]
    lines += [
        "",
        f"Fixed rate ({f['codec']}, {f['seconds']:.0f} s at half of kbench's saturated median): target "
        f"{f['target_rate']:,} msg/s, achieved {f['achieved_rate']:,.1f} msg/s, deviation "
        f"**{f['deviation_pct']:+.4f} %**; {f['sent']:,} sent, {f['delivered']:,} delivered; delay p50/p99/max "
        f"{f['delay_p50_us']:,.2f} / {f['delay_p99_us']:,.0f} / {f['delay_max_us']:,.0f} µs; service p50/p99 "
        f"{f['service_p50_us']:,.0f} / {f['service_p99_us']:,.0f} µs; corrected p99 {f['corrected_p99_us']:,.0f} µs.",
        "",
        f"Cost of one latency sample: **{results['latency_sample_cost_ns']['record']:.1f} ns** to record "
        f"({results['latency_sample_cost_ns']['clock_read_plus_record']:.1f} ns including the clock read).",
    ]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap", help="use this cluster instead of starting a 1-node one")
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--codecs", default=",".join(CODECS))
    ap.add_argument("--batch-size", type=int, default=65536)
    ap.add_argument("--linger-ms", type=int, default=5)
    ap.add_argument("--fixed-seconds", type=float, default=30.0)
    ap.add_argument("--fixed-codec", default="lz4")
    ap.add_argument("--out", type=Path, default=None, help="write all figures as JSON here")
    ap.add_argument("--render", type=Path, default=None, help="print the README tables of a results JSON and exit")
    args = ap.parse_args()
    if args.render:
        print(markdown(json.loads(args.render.read_text())))
        return 0
    if shutil.which("kcat") is None:
        print("kcat not found; install it with: apt-get install -y kcat", file=sys.stderr)
        return 2
    codecs = args.codecs.split(",")
    work = Path(tempfile.mkdtemp(prefix="kbench-peers-"))
    corp = corpus.load("json", size=4 << 20)
    records = list(corp.records)
    payload_file = work / "payload.txt"
    corpus.write_lines(corp, payload_file)
    # kcat sends each line of its file once: give it exactly --records lines cycling the corpus
    kcat_file, one_file = work / "kcat.txt", work / "one.txt"
    with kcat_file.open("wb") as f:
        for i in range(args.records):
            f.write(records[i % len(records)] + b"\n")
    one_file.write_bytes(records[0] + b"\n")

    cluster = None if args.bootstrap else LocalCluster(brokers=1, heap="512m").__enter__()
    bs = args.bootstrap or cluster.bootstrap_servers  # type: ignore[union-attr]
    results: dict[str, object] = {
        "records": args.records,
        "reps": args.reps,
        "batch.size": args.batch_size,
        "linger.ms": args.linger_ms,
        "corpus": corp.source,
        "corpus_sha256": corp.sha256,
        "avg_record_bytes": corp.size / len(records),
        "librdkafka": _native.rdkafka_version,
        "kafka": kafka_dist.KAFKA_VERSION,
        "runs": [],
    }
    runs: list[dict[str, object]] = results["runs"]  # type: ignore[assignment]
    try:
        for codec in codecs:
            props = common_props(codec, args.batch_size, args.linger_ms)
            for rep in range(-1, args.reps):  # rep -1: one discarded warm-up round
                order = TOOLS[rep % len(TOOLS) :] + TOOLS[: rep % len(TOOLS)]
                for tool in order:
                    topic = f"peers-{codec}-{rep}-{tool}".lower()
                    admin.create_topic({"bootstrap.servers": bs}, topic, partitions=3)
                    extra: dict[str, float] = {}
                    if tool.startswith("kbench"):
                        rate, cpu = run_kbench(bs, topic, records, args.records, props, headers=tool == "kbench")
                    elif tool == "ProducerPerformance":
                        rate, cpu = run_pp(bs, topic, payload_file, args.records, props)
                    else:
                        rate, overhead, cpu = run_kcat(bs, topic, kcat_file, one_file, args.records, props)
                        extra["startup_s"] = overhead
                    extra["client_cpu_us_per_msg"] = 1e6 * cpu / args.records
                    admin.delete_topic({"bootstrap.servers": bs}, topic)
                    print(
                        f"{codec:5} rep {rep} {tool:20} {rate:12,.0f} msg/s{' (warm-up, discarded)' if rep < 0 else ''}",
                        flush=True,
                    )
                    if rep >= 0:
                        runs.append({"codec": codec, "rep": rep, "tool": tool, "msgs_per_s": rate, **extra})
        summary = results["summary"] = summarise(runs)

        sat = summary.get(args.fixed_codec, next(iter(summary.values())))["kbench_median"]
        props = common_props(args.fixed_codec, args.batch_size, args.linger_ms)
        admin.create_topic({"bootstrap.servers": bs}, "peers-fixed", partitions=3)
        results["fixed_rate"] = {
            "codec": args.fixed_codec,
            "seconds": args.fixed_seconds,
            **fixed_rate_accuracy(bs, "peers-fixed", records, round(sat / 2), args.fixed_seconds, props),
        }
        results["latency_sample_cost_ns"] = {
            "record": _native.histogram_record_cost(20_000_000),
            "clock_read_plus_record": _native.histogram_record_cost(20_000_000, with_clock=True),
        }
    finally:
        if cluster is not None:
            cluster.__exit__(None, None, None)
        shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(results, indent=2)
    print(json.dumps({k: results[k] for k in ("summary", "fixed_rate", "latency_sample_cost_ns")}, indent=2))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
