"""kbench's C producer side by side with Kafka's ProducerPerformance and kcat, at steady state.

One local cluster (1 node, started here unless --bootstrap is given), two corpora (the built-in
JSON events, and real log lines gathered on this machine at benchmark time: its package-manager
logs and the benchmark broker's own log4j output, never committed), the same record count, codec
and batch settings for every tool, for none, lz4 and zstd.

Per corpus and codec: a warm-up round of every tool (discarded; it also sizes the runs: N records =
the fastest warm-up rate x --seconds, so every timed part lasts at least about --seconds), each
tool's start-up measured by the same command sending one record, then --reps repetitions of the
three tools back to back in a rotating order, each into a fresh 3-partition topic.

Throughput is delivered messages per second over each tool's timed part, which never includes
process start-up:
- kbench: delivered / (first send .. last delivery report, flush included), the C loop with its
  default header sampling (one record in 1000 carries the 24-byte kb header);
- ProducerPerformance: its own final "records/sec" (its loop start .. all acks; the JVM's start is
  outside, its JIT warm-up inside); its 5-second windows after the first give the steady rate
  with the JIT warm-up excluded too, and their ratio the warm-up's share of the timed part;
- kcat: records / (wall time of the process - wall time of the same command sending one record).

Client CPU per message: user + sys of the producing process over the run, minus the same tool's
CPU for one record (process start, connect, metadata; for the JVM its start-up and class loading).

    python benchmarks/producer_vs_peers.py --seconds 12 --reps 5 --out runs/peers.json
    python benchmarks/producer_vs_peers.py --render runs/peers.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kbench import _native  # noqa: E402
from kbench.kafka import admin, kafka_dist, procstat  # noqa: E402
from kbench.kafka.cluster import LocalCluster  # noqa: E402
from kbench.kafka.drivers import DEFAULT_HEADER_SAMPLE, ProducerSpec, produce  # noqa: E402
from kbench.model import corpus  # noqa: E402

CODECS = ("none", "lz4", "zstd")
CORPORA = ("json", "real-logs")
TOOLS = ("kbench", "ProducerPerformance", "kcat")
#: System logs read for the real-logs corpus (those that exist; the broker's own logs are added).
SYSTEM_LOGS = ("/var/log/dpkg.log", "/var/log/apt/term.log", "/var/log/apt/history.log", "/var/log/alternatives.log")
MIN_REAL_LINES = 2000


def common_props(codec: str, batch_size: int, linger_ms: int) -> dict[str, str]:
    """Settings every tool gets (librdkafka and Java names agree on these)."""
    return {
        "compression.type": codec,
        "linger.ms": str(linger_ms),
        "batch.size": str(batch_size),
        "acks": "1",
        "enable.idempotence": "false",
    }


def real_log_lines(broker_log_dirs: list[Path]) -> tuple[list[bytes], list[str]]:
    """Real log lines of this machine: system logs plus the broker's own logs, shuffled once (seed 1).

    Shuffled because ProducerPerformance picks a random record of its payload file per message:
    with a shuffled file every tool's batches hold the same mix of lines.
    """
    files = [Path(p) for p in SYSTEM_LOGS if Path(p).is_file()]
    for d in broker_log_dirs:
        files += sorted(d.glob("*.log"))
    lines: list[bytes] = []
    used: list[str] = []
    for f in files:
        try:
            got = [ln.rstrip(b"\r") for ln in f.read_bytes().split(b"\n")]
        except OSError:
            continue
        got = [ln for ln in got if 0 < len(ln) <= 2000 and not any(c < 9 for c in ln)]
        if got:
            lines += got
            used.append(f"{f.name} ({len(got)} lines)")
    if len(lines) < MIN_REAL_LINES:
        raise SystemExit(
            f"only {len(lines)} real log lines found in {', '.join(SYSTEM_LOGS)} and the broker's logs "
            f"(need {MIN_REAL_LINES}); run it on a machine with package-manager logs or use --corpora json"
        )
    random.Random(1).shuffle(lines)
    return lines, used


class KcatFiles:
    """kcat sends each line of its file once: files of exactly n lines cycling the corpus, as kbench sends."""

    def __init__(self, work: Path, name: str, records: list[bytes]) -> None:
        self.work, self.name, self.records = work, name, records
        self.files: dict[int, Path] = {}

    def get(self, n: int) -> Path:
        if n not in self.files:
            f = self.work / f"{self.name}-{n}.txt"
            cycle = b"".join(r + b"\n" for r in self.records)
            full, rest = divmod(n, len(self.records))
            with f.open("wb") as out:
                for _ in range(full):
                    out.write(cycle)
                out.write(b"".join(r + b"\n" for r in self.records[:rest]))
            self.files[n] = f
        return self.files[n]

    def keep(self, n: int) -> None:
        """Delete every file but the n-line one (they can be GBs)."""
        for stale in set(self.files) - {n}:
            self.files.pop(stale).unlink(missing_ok=True)


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_kbench(bs: str, topic: str, records: list[bytes], n: int, props: dict[str, str]) -> dict[str, float]:
    spec = ProducerSpec(
        topic=topic,
        props={"bootstrap.servers": bs, **props},
        mode="saturated",
        count=n,
        flush_timeout=120,
    )
    before = procstat.snapshot([os.getpid()])
    t = time.monotonic()
    r = produce(spec, records)
    wall = time.monotonic() - t
    cpu = procstat.delta(before, procstat.snapshot([os.getpid()]))[0].total_s or 0.0
    if r.delivered != n:
        raise RuntimeError(f"kbench delivered {r.delivered}/{n}: {r.delivery_errors}")
    return {"msgs_per_s": r.delivered_rate, "cpu_s": cpu, "wall_s": wall}


def run_pp(bs: str, topic: str, payload_file: Path, n: int, props: dict[str, str]) -> dict[str, float]:
    args = ["--topic", topic, "--num-records", str(n), "--throughput", "-1", "--payload-file", str(payload_file)]
    args += ["--payload-delimiter", "\n", "--producer-props", f"bootstrap.servers={bs}"]
    args += [f"{k}={v}" for k, v in props.items()]
    cmd = kafka_dist.java_command(
        "org.apache.kafka.tools.ProducerPerformance", args, heap="512m", jvm_opts=["-Dlog4j2.level=WARN"]
    )
    before = _children_cpu()
    t = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    wall = time.monotonic() - t
    cpu = _children_cpu() - before
    m = re.findall(r"(\d+) records sent, ([\d.]+) records/sec", p.stdout)
    if p.returncode != 0 or not m or int(m[-1][0]) != n:
        raise RuntimeError(f"ProducerPerformance output not understood: {(p.stdout + p.stderr)[-300:]}")
    out = {"msgs_per_s": float(m[-1][1]), "cpu_s": cpu, "wall_s": wall}
    # its 5 s windows (every line but the final one): the rate after the first window excludes the JIT's warm-up
    windows = [(int(a), float(b)) for a, b in m[:-1]]
    later = windows[1:]
    if later and all(rate > 0 for _, rate in later):
        out["steady_msgs_per_s"] = sum(c for c, _ in later) / sum(c / rate for c, rate in later)
    return out


def run_kcat(bs: str, topic: str, payload_file: Path, n: int, props: dict[str, str]) -> dict[str, float]:
    cmd = ["kcat", "-P", "-b", bs, "-t", topic, "-l"]
    cmd += sum((["-X", f"{k}={v}"] for k, v in props.items()), [])
    before = _children_cpu()
    t = time.monotonic()
    subprocess.run([*cmd, str(payload_file)], check=True, timeout=900)
    wall = time.monotonic() - t
    return {"msgs_per_s": n / wall, "cpu_s": _children_cpu() - before, "wall_s": wall}


def run_tool(tool: str, bs: str, topic: str, files: dict[str, Any], n: int, props: dict[str, str]) -> dict[str, float]:
    """One run of one tool: msg/s over its timed part, whole-process CPU and wall seconds."""
    admin.create_topic({"bootstrap.servers": bs}, topic, partitions=3)
    try:
        if tool == "kbench":
            return run_kbench(bs, topic, files["records"], n, props)
        if tool == "ProducerPerformance":
            return run_pp(bs, topic, files["pp"], n, props)
        return run_kcat(bs, topic, files["kcat"](n), n, props)
    finally:
        admin.delete_topic({"bootstrap.servers": bs}, topic)


def summarise(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Per corpus and codec: medians per tool and medians of the per-repetition ratios."""
    out = []
    for cell in results["cells"]:
        reps = cell["reps"]
        row: dict[str, Any] = {"corpus": cell["corpus"], "codec": cell["codec"], "records": cell["records"]}
        for t in TOOLS:
            rs = [r[t] for r in reps]
            row[t] = {
                "msgs_per_s": statistics.median(r["msgs_per_s"] for r in rs),
                "cpu_us_per_msg": statistics.median(r["cpu_us_per_msg"] for r in rs),
                "timed_s": statistics.median(cell["records"] / r["msgs_per_s"] for r in rs),
                "startup_cpu_share": statistics.median(r["startup_cpu_share"] for r in rs),
            }
        steady = [r["ProducerPerformance"].get("steady_msgs_per_s") for r in reps]
        if all(steady):
            row["ProducerPerformance"]["steady_msgs_per_s"] = statistics.median(steady)  # type: ignore[type-var]
            row["pp_warmup_share"] = statistics.median(
                1 - r["ProducerPerformance"]["msgs_per_s"] / r["ProducerPerformance"]["steady_msgs_per_s"] for r in reps
            )
        for peer in ("ProducerPerformance", "kcat"):
            ratios = [r["kbench"]["msgs_per_s"] / r[peer]["msgs_per_s"] for r in reps]
            row[f"kbench/{peer}"] = {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)}
        if all(steady):
            ratios = [r["kbench"]["msgs_per_s"] / r["ProducerPerformance"]["steady_msgs_per_s"] for r in reps]
            row["kbench/ProducerPerformance steady"] = {
                "median": statistics.median(ratios),
                "min": min(ratios),
                "max": max(ratios),
            }
        for peer in ("ProducerPerformance", "kcat"):
            cpu = [r["kbench"]["cpu_us_per_msg"] / r[peer]["cpu_us_per_msg"] for r in reps]
            row[f"kbench/{peer} cpu"] = statistics.median(cpu)
        out.append(row)
    return out


def markdown(results: dict[str, Any]) -> str:
    """The README tables, generated from the results JSON (no figure typed by hand)."""
    lines = [
        f"{results['reps']} repetitions per cell (tools back to back, rotating order) after a discarded warm-up "
        f"round; runs sized to ≥ {results['seconds']:g} s of the fastest tool; batch.size={results['batch.size']}, "
        f"linger.ms={results['linger.ms']}, acks=1, idempotence off, 3 partitions; kbench's header on 1 record "
        f"in {results['header_sample']}; librdkafka {results['librdkafka']} (kbench and kcat), Kafka "
        f"{results['kafka']} (broker and ProducerPerformance).",
        "",
    ]
    for name, c in results["corpora"].items():
        lines.append(
            f"- **{name}**: {c['records']:,} records, {c['avg_bytes']:.0f} B/record on average; {c['source']}."
        )
    lines += [
        "",
        "msg/s: medians over the repetitions; kbench / peer: median of the per-repetition ratios (min–max).",
        "",
        "| corpus | codec | records/run | kbench msg/s | ProducerPerformance msg/s (steady) | kcat msg/s "
        "| kbench / PP | kbench / PP steady | kbench / kcat |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    rows = summarise(results)
    for s in rows:
        pp = s["ProducerPerformance"]
        steady = f" ({pp['steady_msgs_per_s']:,.0f})" if "steady_msgs_per_s" in pp else ""
        a, b = s["kbench/ProducerPerformance"], s["kbench/kcat"]
        st = s.get("kbench/ProducerPerformance steady")
        steady_ratio = f"{st['median']:.2f} ({st['min']:.2f}–{st['max']:.2f})" if st else "n/a"
        lines.append(
            f"| {s['corpus']} | {s['codec']} | {s['records']:,} | {s['kbench']['msgs_per_s']:,.0f} | "
            f"{pp['msgs_per_s']:,.0f}{steady} | {s['kcat']['msgs_per_s']:,.0f} | "
            f"{a['median']:.2f} ({a['min']:.2f}–{a['max']:.2f}) | {steady_ratio} | "
            f"{b['median']:.2f} ({b['min']:.2f}–{b['max']:.2f}) |"
        )
    lines += [
        "",
        "Client CPU, µs per message (user + sys of the producing process minus the same tool's one-record run;",
        "medians), the timed part's length, and start-up's share of the whole process's CPU (excluded from the",
        "µs/message):",
        "",
        "| corpus | codec | kbench µs/msg | PP µs/msg | kcat µs/msg | kbench / PP CPU | kbench / kcat CPU "
        "| timed s (kbench / PP / kcat) | start-up CPU share (kbench / PP / kcat) | PP JIT warm-up share of its timed part |",
        "|---|---|---:|---:|---:|---:|---:|---|---|---:|",
    ]
    for s in rows:
        k, p, c = s["kbench"], s["ProducerPerformance"], s["kcat"]
        warm = f"{100 * s['pp_warmup_share']:.1f} %" if "pp_warmup_share" in s else "n/a"
        lines.append(
            f"| {s['corpus']} | {s['codec']} | {k['cpu_us_per_msg']:.2f} | {p['cpu_us_per_msg']:.2f} | "
            f"{c['cpu_us_per_msg']:.2f} | {s['kbench/ProducerPerformance cpu']:.2f} | {s['kbench/kcat cpu']:.2f} | "
            f"{k['timed_s']:.1f} / {p['timed_s']:.1f} / {c['timed_s']:.1f} | "
            f"{100 * k['startup_cpu_share']:.1f} / {100 * p['startup_cpu_share']:.1f} / "
            f"{100 * c['startup_cpu_share']:.1f} % | {warm} |"
        )
    if results.get("latency_sample_cost_ns"):
        cost = results["latency_sample_cost_ns"]
        lines += [
            "",
            f"Cost of one latency sample: **{cost['record']:.1f} ns** to record "
            f"({cost['clock_read_plus_record']:.1f} ns including the clock read).",
        ]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap", help="use this cluster instead of starting a 1-node one")
    ap.add_argument("--seconds", type=float, default=12.0, help="timed part of the fastest tool per run (default 12)")
    ap.add_argument("--warmup-records", type=int, default=300_000, help="records of each tool's warm-up run")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--codecs", default=",".join(CODECS))
    ap.add_argument("--corpora", default=",".join(CORPORA), help="json and/or real-logs")
    ap.add_argument("--batch-size", type=int, default=65536)
    ap.add_argument("--linger-ms", type=int, default=5)
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
    cluster = None if args.bootstrap else LocalCluster(brokers=1, heap="512m").__enter__()
    bs = args.bootstrap or cluster.bootstrap_servers  # type: ignore[union-attr]
    results: dict[str, Any] = {
        "seconds": args.seconds,
        "reps": args.reps,
        "batch.size": args.batch_size,
        "linger.ms": args.linger_ms,
        "header_sample": DEFAULT_HEADER_SAMPLE,
        "librdkafka": _native.rdkafka_version,
        "kafka": kafka_dist.KAFKA_VERSION,
        "corpora": {},
        "cells": [],
    }
    try:
        for cname in args.corpora.split(","):
            if cname == "json":
                corp = corpus.load("json", size=4 << 20)
                records, source = list(corp.records), corp.source
            elif cname == "real-logs":
                dirs = [Path(b.log_dir) for b in cluster.brokers] if cluster is not None else []  # type: ignore[union-attr]
                records, used = real_log_lines(dirs)
                source = "this machine's logs, shuffled (seed 1): " + ", ".join(used)
            else:
                raise SystemExit(f"unknown corpus '{cname}'; use json or real-logs")
            results["corpora"][cname] = {
                "records": len(records),
                "avg_bytes": sum(map(len, records)) / len(records),
                "source": source,
            }
            pp_file = work / f"{cname}.txt"
            pp_file.write_bytes(b"\n".join(records) + b"\n")
            kcat_files = KcatFiles(work, cname, records)
            files = {"records": records, "pp": pp_file, "kcat": kcat_files.get}
            for codec in codecs:
                props = common_props(codec, args.batch_size, args.linger_ms)
                warm = {t: run_tool(t, bs, f"peers-warm-{t}".lower(), files, args.warmup_records, props) for t in TOOLS}
                n = int(max(w["msgs_per_s"] for w in warm.values()) * args.seconds)
                one = {t: run_tool(t, bs, f"peers-one-{t}".lower(), files, 1, props) for t in TOOLS}
                print(
                    f"{cname} {codec}: warm-up "
                    + ", ".join(f"{t} {w['msgs_per_s']:,.0f}" for t, w in warm.items())
                    + f" msg/s -> {n:,} records per run; start-up CPU "
                    + ", ".join(f"{t} {o['cpu_s']:.2f} s" for t, o in one.items()),
                    flush=True,
                )
                kcat_files.keep(n)
                reps: list[dict[str, Any]] = []
                for rep in range(args.reps):
                    order = TOOLS[rep % len(TOOLS) :] + TOOLS[: rep % len(TOOLS)]
                    got: dict[str, Any] = {}
                    for tool in order:
                        r = run_tool(tool, bs, f"peers-{cname}-{codec}-{rep}-{tool}".lower(), files, n, props)
                        if tool == "kcat":  # its timed part: the wall time minus the one-record command's
                            r["msgs_per_s"] = n / max(1e-9, r["wall_s"] - one[tool]["wall_s"])
                        r["cpu_us_per_msg"] = 1e6 * max(0.0, r["cpu_s"] - one[tool]["cpu_s"]) / n
                        r["startup_cpu_share"] = one[tool]["cpu_s"] / r["cpu_s"] if r["cpu_s"] > 0 else math.nan
                        got[tool] = r
                        print(
                            f"  rep {rep} {tool:20} {r['msgs_per_s']:12,.0f} msg/s {r['cpu_us_per_msg']:6.2f} µs/msg",
                            flush=True,
                        )
                    reps.append(got)
                results["cells"].append(
                    {
                        "corpus": cname,
                        "codec": codec,
                        "records": n,
                        "warmup": warm,
                        "startup": one,
                        "reps": reps,
                    }
                )
        results["latency_sample_cost_ns"] = {
            "record": _native.histogram_record_cost(20_000_000),
            "clock_read_plus_record": _native.histogram_record_cost(20_000_000, with_clock=True),
        }
    finally:
        if cluster is not None:
            cluster.__exit__(None, None, None)
        shutil.rmtree(work, ignore_errors=True)
    results["summary"] = summarise(results)
    print(markdown(results))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
