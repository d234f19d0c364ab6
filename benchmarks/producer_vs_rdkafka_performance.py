"""``kbench produce`` side by side with librdkafka's own ``rdkafka_performance`` (the same library,
2.0.2), both sending the same corpus, saturated, start-up excluded for both.

``rdkafka_performance`` is built here from the example source Debian's librdkafka-dev ships, with
one patch: its message source is the corpus file, cycled (rdkafka_performance_build.py); unpatched
it repeats one pattern, which a codec would squeeze to nothing.  Both tools get the same client
properties (PROPS, the codec), null keys, librdkafka's partitioner over a fresh 3-partition topic
per run; kbench keeps its default header sampling (one record in 1000 carries its
24-byte latency header).  One local 1-node Kafka cluster; a discarded warm-up round, then --reps
rounds of the two tools, the order alternating.

- kbench: ``kbench produce --mode saturated --count N --json``: its steady window (1 s after the
  first send .. the end of the flush): messages delivered in it / its wall time, and the process's
  CPU (/proc, every thread) over it per message;
- rdkafka_performance: ``-P -c N -i 250``: its periodic stats lines (cumulative delivered count),
  read as they are printed, and /proc/PID/stat at each: the window is its first line 1 s or more
  after its first send .. its last periodic line (the final summary, after its teardown, is left out).

Each tool's whole process is kept apart: delivered / wall time (start-up included), CPU / message.

Usage: flock /tmp/kbench-kafka.lock python benchmarks/producer_vs_rdkafka_performance.py --codecs none --out r.json
       python benchmarks/producer_vs_rdkafka_performance.py --render r1.json r2.json ...
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from rdkafka_performance_build import build  # noqa: E402
from steady_window import Run, finish, line_parser, run_sampled  # noqa: E402

from kbench.kafka import admin, drivers, kafka_dist  # noqa: E402
from kbench.kafka.cluster import LocalCluster  # noqa: E402
from kbench.model import corpus  # noqa: E402

TOOLS = ("kbench", "rdkafka_performance")
CODECS = ("none", "zstd")
#: Both tools' client properties, the very same (-X for both): the benchmark's settings, and the two
#: that rdkafka_performance sets itself before its -X (message.send.max.retries=3,
#: retry.backoff.ms=500), given to kbench too; its third, linger.ms=1000, is overridden here.
PROPS = {
    "batch.size": "65536",
    "linger.ms": "5",
    "acks": "1",
    "message.send.max.retries": "3",
    "retry.backoff.ms": "500",
}
#: rdkafka_performance's periodic line: "% N messages produced (B bytes), D delivered (...) in T ms: ..."
STATS_LINE = re.compile(r"^% (\d+) messages produced \(\d+ bytes\), (\d+) delivered .* in (\d+)ms:")


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env.update(extra)
    return env


def _whole(r: Run, n: int) -> dict[str, float]:
    return {
        "writeback_s": r.writeback_s,
        "proc_wall_s": r.wall_s,
        "proc_cpu_s": r.cpu_s,
        "proc_msgs_per_s": n / r.wall_s,
        "proc_cpu_us_per_msg": r.cpu_s / n * 1e6,
    }


def run_kbench(ctx: dict[str, Any], topic: str, codec: str, n: int) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "kbench", "produce", "--bootstrap", ctx["bs"], "--topic", topic]
    cmd += ["--mode", "saturated", "--count", str(n), "--codec", codec, "--json"]
    cmd += ["--corpus", str(ctx["corpus"]), "--corpus-format", "lenprefixed"]
    for k, v in PROPS.items():
        cmd += ["-X", f"{k}={v}"]
    r = run_sampled(cmd, lambda chunk: [], env=_env())
    if r.rc != 0:
        raise RuntimeError(f"kbench produce exited {r.rc}: {r.stderr[-400:]}")
    p = json.loads(r.stdout_tail)["producer"]
    w = p["steady"]
    return {
        "delivered": p["delivered"],
        "msgs_per_s": w["delivered_per_s"],
        "cpu_us_per_msg": w["cpu_us_per_msg"],
        "window_s": w["window_s"],
        "window_msgs": w["delivered"],
        **_whole(r, p["delivered"]),
    }


def _rdkp_count(line: str) -> int | None:
    m = STATS_LINE.match(line)
    if not m or int(m.group(3)) < 1000:  # its first second of sending is outside the window
        return None
    return int(m.group(2))


def run_rdkp(ctx: dict[str, Any], topic: str, codec: str, n: int) -> dict[str, Any]:
    cmd = [str(ctx["rdkp"]), "-P", "-t", topic, "-b", ctx["bs"], "-c", str(n), "-i", "250", "-a", PROPS["acks"]]
    cmd += ["-X", f"compression.codec={codec}"]
    cmd += [x for k, v in PROPS.items() if k != "acks" for x in ("-X", f"{k}={v}")]
    r = run_sampled(cmd, line_parser(_rdkp_count), env=_env(KB_CORPUS=str(ctx["corpus"])))
    if r.rc != 0:
        raise RuntimeError(f"rdkafka_performance exited {r.rc}: {r.stderr[-400:]} {r.stdout_tail[-400:]!r}")
    delivered = r.samples[-1].count if r.samples else 0
    w = r.window(last=-2)  # the last line is the summary after its teardown
    return {
        "delivered": delivered,
        "msgs_per_s": w["msgs_per_s"],
        "cpu_us_per_msg": w["cpu_us_per_record"],
        "window_s": w["window_s"],
        "window_msgs": w["window_records"],
        **_whole(r, delivered),
    }


RUN = {"kbench": run_kbench, "rdkafka_performance": run_rdkp}


def measure(count: int, reps: int, codecs: list[str]) -> dict[str, Any]:
    recs = corpus.generate("json", 4 << 20, seed=1).records
    out: dict[str, Any] = {
        "count": count,
        "reps": reps,
        "props": PROPS,
        "librdkafka": drivers.librdkafka_version(),
        "corpus": "json (built in, 4 MiB, seed 1)",
        "codecs": {},
    }
    with tempfile.TemporaryDirectory() as d, LocalCluster(brokers=1, directory=Path(d) / "kafka") as cluster:
        ctx = {
            "bs": cluster.bootstrap_servers,
            "corpus": corpus.write_lenprefixed(recs, Path(d) / "corpus.bin"),
            "rdkp": build(Path(d) / "rdkp"),
        }
        out["kafka"] = kafka_dist.KAFKA_VERSION
        for codec in codecs:
            runs: list[dict[str, Any]] = []
            for rep in range(-1, reps):  # rep -1: the discarded warm-up round
                row: dict[str, Any] = {}
                for i in range(len(TOOLS)):
                    tool = TOOLS[(rep + i) % len(TOOLS)]
                    topic = f"p-{tool}-{codec}-{rep + 1}"
                    admin.create_topic({"bootstrap.servers": ctx["bs"]}, topic, partitions=3)
                    r = RUN[tool](ctx, topic, codec, count)
                    if r["delivered"] != count:
                        raise RuntimeError(f"{tool} delivered {r['delivered']} of {count}")
                    row[tool] = r
                    print(
                        f"{codec} rep {rep} {tool}: {r['msgs_per_s']:,.0f} msg/s over {r['window_s']:.2f} s, "
                        f"{r['cpu_us_per_msg']:.3f} us/msg; whole {r['proc_msgs_per_s']:,.0f} msg/s",
                        flush=True,
                    )
                    admin.delete_topic({"bootstrap.servers": ctx["bs"]}, topic)
                if rep >= 0:
                    runs.append(row)
            out["codecs"][codec] = {"runs": runs}
    return out


def markdown(results: list[dict[str, Any]]) -> str:
    res = results[0]
    lines = [
        "; ".join(f"{', '.join(r['codecs'])}: {r['count']:,} messages per run" for r in results)
        + f", {res['reps']} paired repetitions after a discarded warm-up round; "
        f"librdkafka {res['librdkafka']} (both), Kafka {res.get('kafka', '?')}; {res['corpus']}.",
        "",
        "| codec | figure | kbench median [min–max] | rdkafka_performance median [min–max] | kbench / rdkafka_performance (median of pairs) [min–max] |",
        "|---|---|---|---|---|",
    ]
    figures = (
        ("delivered msg/s, steady window", "msgs_per_s", ",.0f"),
        ("CPU µs/message, steady window", "cpu_us_per_msg", ".3f"),
        ("window s", "window_s", ".1f"),
        ("delivered msg/s, whole process", "proc_msgs_per_s", ",.0f"),
        ("CPU µs/message, whole process", "proc_cpu_us_per_msg", ".3f"),
    )
    for res in results:
        for codec, c in res["codecs"].items():
            runs = c["runs"]
            for name, key, spec in figures:
                cells = []
                for tool in TOOLS:
                    xs = [r[tool][key] for r in runs]
                    cells.append(
                        f"{format(statistics.median(xs), spec)} [{format(min(xs), spec)}–{format(max(xs), spec)}]"
                    )
                ratios = [r["kbench"][key] / r["rdkafka_performance"][key] for r in runs]
                ratio = (
                    ""
                    if key == "window_s"
                    else (f"{statistics.median(ratios):.2f} [{min(ratios):.2f}–{max(ratios):.2f}]")
                )
                lines.append(f"| {codec} | {name} | {cells[0]} | {cells[1]} | {ratio} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=4_000_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--codecs", default=",".join(CODECS), help="comma-separated (default none,zstd)")
    ap.add_argument("--min-window", type=float, default=5.0, help="exit 1 if a steady window is shorter")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--render", type=Path, nargs="+")
    a = ap.parse_args()
    if a.render:
        print(markdown([json.loads(p.read_text()) for p in a.render]))
        return 0
    res = measure(a.count, a.reps, a.codecs.split(","))
    return finish(res, TOOLS, a.min_window, a.out, markdown([res]), "raise --count")


if __name__ == "__main__":
    sys.exit(main())
