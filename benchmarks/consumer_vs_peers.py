"""``kbench consume`` side by side with ``kcat -C`` and Kafka's ConsumerPerformance, reading the same
backlog from the beginning, every tool for a steady window of >= --min-window seconds.

One local 1-node Kafka cluster; per codec one topic (--partitions, default 1) holding a backlog of
--records of the built-in JSON events, produced once by kbench (saturated, not timed).  Then a
discarded warm-up round and --reps rounds of the three tools, the order rotating, each reading the
whole backlog from the beginning as its own process (kbench and kcat assigning every partition,
ConsumerPerformance in a fresh group, as it must):

- kbench: ``kbench consume --from beginning --count N --json``: its records/s over first .. last
  record (its own clock) and CPU per record over its steady window (the end of the first batch ..
  the end of the last; the loop thread plus librdkafka's threads); the join and the wait for the
  first record are phases outside both;
- kcat: ``kcat -C -o beginning -e -q -f '%o\\n'``, its output read as it comes: the window is the
  first output chunk .. the last chunk before its exit flush, the records the newlines between them,
  the CPU /proc/PID/stat at both edges;
- ConsumerPerformance: ``--show-detailed-stats --reporting-interval 250``: the window is its first
  progress line .. its last, the records its cumulative counts there, the CPU /proc/PID/stat as each
  line arrives (the JVM's start, the group join and its first 250 ms of reading are outside).

Every tool's whole process is kept apart: records / wall time (start-up included) and CPU / record.

Usage: flock /tmp/kbench-kafka.lock python benchmarks/consumer_vs_peers.py --codecs none --out r.json
       python benchmarks/consumer_vs_peers.py --render r1.json r2.json ...
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from steady_window import Run, finish, line_parser, newline_counter, run_sampled  # noqa: E402

from kbench.kafka import admin, drivers, kafka_dist  # noqa: E402
from kbench.kafka.cluster import LocalCluster  # noqa: E402
from kbench.model import corpus  # noqa: E402

TOOLS = ("kbench", "kcat", "ConsumerPerformance")
CODECS = ("none", "lz4", "zstd")
DATE_LINE = re.compile(r"^\d{4}-\d\d-\d\d")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


def run_kbench(bs: str, topic: str, n: int, group: str) -> dict[str, Any]:
    del group
    cmd = [sys.executable, "-m", "kbench", "consume", "--bootstrap", bs, "--topic", topic]
    cmd += ["--from", "beginning", "--count", str(n), "--timeout", "600", "--json"]
    r = run_sampled(cmd, lambda chunk: [], env=_env())
    if r.rc != 0:
        raise RuntimeError(f"kbench consume exited {r.rc}: {r.stderr[-400:]}")
    out = json.loads(r.stdout_tail)
    return {
        "records": out["records"],
        "msgs_per_s": out["records_per_s"],
        "window_s": out["read_s"],
        "cpu_us_per_record": out["loop_us_per_record"] + out["client_us_per_record"],
        "loop_us_per_record": out["loop_us_per_record"],
        "client_us_per_record": out["client_us_per_record"],
        "cpu_window_s": out["cpu_window_s"],
        "first_record_s": out["first_record_s"],
        "fetch": out["fetch"],
        **_whole(r, out["records"]),
    }


def run_kcat(bs: str, topic: str, n: int, group: str) -> dict[str, Any]:
    del group
    cmd = ["kcat", "-C", "-b", bs, "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%o\n"]
    r = run_sampled(cmd, newline_counter())
    if r.rc != 0:
        raise RuntimeError(f"kcat exited {r.rc}: {r.stderr[-400:]}")
    records = r.samples[-1].count if r.samples else 0
    # the last chunk is kcat's exit flush (after its teardown): the window ends at the one before
    return {"records": records, **r.window(last=-2), **_whole(r, records)}


def _cp_count(line: str) -> int | None:
    if not DATE_LINE.match(line):
        return None
    f = [x.strip() for x in line.split(",")]
    # time, threadId, MB, MB/s, nMsg, nMsg/s, ... (detailed stats); the count is the first integer after MB/s
    return int(f[4]) if len(f) >= 6 and f[4].isdigit() else int(f[3]) if f[3].isdigit() else None


def run_cp(bs: str, topic: str, n: int, group: str) -> dict[str, Any]:
    args = ["--bootstrap-server", bs, "--topic", topic, "--messages", str(n), "--group", group]
    args += ["--timeout", "60000", "--show-detailed-stats", "--reporting-interval", "250"]
    cmd = kafka_dist.java_command(
        "org.apache.kafka.tools.ConsumerPerformance", args, heap="512m", jvm_opts=["-Dlog4j2.level=WARN"]
    )
    r = run_sampled(cmd, line_parser(_cp_count))
    if r.rc != 0:
        raise RuntimeError(f"ConsumerPerformance exited {r.rc}: {r.stderr[-400:]}")
    return {"records": n, **r.window(), **_whole(r, n)}


def _whole(r: Run, records: int) -> dict[str, float]:
    return {
        "writeback_s": r.writeback_s,
        "proc_wall_s": r.wall_s,
        "proc_cpu_s": r.cpu_s,
        "proc_msgs_per_s": records / r.wall_s,
        "proc_cpu_us_per_record": r.cpu_s / records * 1e6,
    }


RUN = {"kbench": run_kbench, "kcat": run_kcat, "ConsumerPerformance": run_cp}


#: The backlog's producer settings, whichever client writes it.
BACKLOG_PROPS = {"batch.size": "65536", "linger.ms": "5"}


def write_backlog(
    bs: str,
    topic: str,
    codec: str,
    records: int,
    recs: tuple[bytes, ...],
    producer: str,
    tmp: Path,
    props: dict[str, str] | None = None,
) -> None:
    """``records`` of ``recs`` (cycled) into ``topic``, saturated, not timed: by the C loops in this
    process (``librdkafka``, the library the extension links), or by ``kbench produce --client
    PRODUCER`` (e.g. ``kafka-go``, whose zstd frames carry their content size, with ``props`` in its
    own names; default BACKLOG_PROPS)."""
    if producer == "librdkafka":
        spec = drivers.ProducerSpec(
            topic=topic,
            props={"bootstrap.servers": bs, "compression.type": codec, **BACKLOG_PROPS},
            mode="saturated",
            count=records,
            headers=False,
        )
        assert drivers.produce(spec, recs).delivered == records
        return
    path = corpus.write_lenprefixed(recs, tmp / "corpus.bin")
    cmd = [sys.executable, "-m", "kbench", "produce", "--client", producer, "--bootstrap", bs, "--topic", topic]
    cmd += ["--mode", "saturated", "--count", str(records), "--codec", codec, "--json"]
    cmd += ["--corpus", str(path), "--corpus-format", "lenprefixed"]
    cmd += [x for k, v in (BACKLOG_PROPS if props is None else props).items() for x in ("-X", f"{k}={v}")]
    r = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=1800)
    if r.returncode != 0:
        raise RuntimeError(f"kbench produce --client {producer} exited {r.returncode}: {r.stderr[-400:]}")
    delivered = json.loads(r.stdout)["producer"]["delivered"]
    if delivered != records:
        raise RuntimeError(f"kbench produce --client {producer} delivered {delivered} of {records}")


def measure(
    records: int,
    reps: int,
    partitions: int,
    codecs: list[str],
    min_window: float,
    producer: str = "librdkafka",
    producer_props: dict[str, str] | None = None,
) -> dict[str, Any]:
    recs = corpus.generate("json", 4 << 20, seed=1).records
    out: dict[str, Any] = {
        "producer": producer,
        "producer_props": producer_props or BACKLOG_PROPS,
        "records": records,
        "reps": reps,
        "partitions": partitions,
        "min_window_s": min_window,
        "librdkafka": drivers.librdkafka_version(),
        "codecs": {},
    }
    with tempfile.TemporaryDirectory() as d, LocalCluster(brokers=1, directory=Path(d)) as cluster:
        bs = cluster.bootstrap_servers
        out["kafka"] = kafka_dist.KAFKA_VERSION
        for codec in codecs:
            topic = f"backlog-{codec}"
            admin.create_topic({"bootstrap.servers": bs}, topic, partitions=partitions)
            write_backlog(bs, topic, codec, records, recs, producer, Path(d), producer_props)
            runs: list[dict[str, Any]] = []
            for rep in range(-1, reps):  # rep -1: the discarded warm-up round
                row: dict[str, Any] = {}
                for i in range(len(TOOLS)):
                    tool = TOOLS[(rep + i) % len(TOOLS)]
                    r = RUN[tool](bs, topic, records, f"g-{tool}-{codec}-{rep}")
                    if r["records"] != records:
                        raise RuntimeError(f"{tool} read {r['records']} of {records}")
                    row[tool] = r
                    print(
                        f"{codec} rep {rep} {tool}: {r['msgs_per_s']:,.0f} rec/s over {r['window_s']:.2f} s, "
                        f"{r['cpu_us_per_record']:.3f} us/rec; whole {r['proc_msgs_per_s']:,.0f} rec/s",
                        flush=True,
                    )
                if rep >= 0:
                    runs.append(row)
            out["codecs"][codec] = {"runs": runs}
    return out


def _med(xs: list[float]) -> str:
    return f"{statistics.median(xs):,.0f} [{min(xs):,.0f}–{max(xs):,.0f}]"


def _med2(xs: list[float]) -> str:
    return f"{statistics.median(xs):.3f} [{min(xs):.3f}–{max(xs):.3f}]"


def markdown(results: list[dict[str, Any]]) -> str:
    res = results[0]
    lines = [
        f"{res['records']:,} JSON records per backlog ({res['partitions']} partition(s)), {res['reps']} paired "
        f"repetitions after a discarded warm-up round; librdkafka {res['librdkafka']} (kbench, kcat), "
        f"ConsumerPerformance from the broker's Kafka {res.get('kafka', '?')} jars.",
        "",
        "Steady window (start-up, join and teardown excluded):",
        "",
        "| codec | tool | records/s median [min–max] | CPU µs/record median [min–max] | window s (min) | kbench / tool records/s (median of pairs) | kbench / tool CPU per record (median of pairs) |",
        "|---|---|---|---|---|---|---|",
    ]
    whole = [
        "",
        "Whole process (start-up, join and teardown included):",
        "",
        "| codec | tool | records/s median [min–max] | CPU µs/record median [min–max] | wall s median | kbench / tool records/s (median of pairs) | kbench / tool CPU per record (median of pairs) |",
        "|---|---|---|---|---|---|---|",
    ]
    regrows = [
        "",
        "Batches kbench's librdkafka decompressed again into a larger buffer (statistics' zbuf_grow, median per read):",
        "",
    ]
    for res in results:
        for name, c in res["codecs"].items():
            runs = c["runs"]
            producer = res.get("producer", "librdkafka")
            codec = name if producer == "librdkafka" else f"{name}, written by {producer}"
            grows = [(r["kbench"].get("fetch") or {}).get("decompress_regrows") for r in runs]
            if all(g is not None for g in grows):
                regrows.append(f"- {codec}: {statistics.median(g for g in grows if g is not None):,.0f}")
            for tool in TOOLS:

                def ratio(key: str, tool: str = tool, runs: list[dict[str, Any]] = runs) -> str:
                    if tool == "kbench":
                        return ""
                    return f"{statistics.median(r['kbench'][key] / r[tool][key] for r in runs):.2f}"

                rate = [r[tool]["msgs_per_s"] for r in runs]
                cpu = [r[tool]["cpu_us_per_record"] for r in runs]
                win = min(r[tool]["window_s"] for r in runs)
                lines.append(
                    f"| {codec} | {tool} | {_med(rate)} | {_med2(cpu)} | {win:.1f} | {ratio('msgs_per_s')} "
                    f"| {ratio('cpu_us_per_record')} |"
                )
                prate = [r[tool]["proc_msgs_per_s"] for r in runs]
                pcpu = [r[tool]["proc_cpu_us_per_record"] for r in runs]
                pwall = statistics.median(r[tool]["proc_wall_s"] for r in runs)
                whole.append(
                    f"| {codec} | {tool} | {_med(prate)} | {_med2(pcpu)} | {pwall:.1f} | {ratio('proc_msgs_per_s')} "
                    f"| {ratio('proc_cpu_us_per_record')} |"
                )
    return "\n".join(lines + whole + (regrows if len(regrows) > 3 else []))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=6_000_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--codecs", default=",".join(CODECS), help="comma-separated (default none,lz4,zstd)")
    ap.add_argument("--min-window", type=float, default=5.0, help="refuse a run whose steady window is shorter")
    ap.add_argument(
        "--producer",
        default="librdkafka",
        help="the client that writes the backlog (kbench produce --client; default librdkafka, in this process)",
    )
    ap.add_argument(
        "--producer-prop",
        action="append",
        default=[],
        metavar="K=V",
        help="the backlog producer's properties in its own names, instead of batch.size=65536 linger.ms=5",
    )
    ap.add_argument("--out", type=Path)
    ap.add_argument("--render", type=Path, nargs="+")
    a = ap.parse_args()
    if a.render:
        print(markdown([json.loads(p.read_text()) for p in a.render]))
        return 0
    props = dict(kv.split("=", 1) for kv in a.producer_prop) or None
    res = measure(a.records, a.reps, a.partitions, a.codecs.split(","), a.min_window, a.producer, props)
    return finish(res, TOOLS, a.min_window, a.out, markdown([res]), "raise --records")


if __name__ == "__main__":
    sys.exit(main())
