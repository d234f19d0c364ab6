"""kbench's Go clients (kafka-go, sarama) against librdkafka and the Java client, at steady state.

One local cluster (1 node), the built-in JSON corpus, the cell settings of every client mapped by
``kbench.kafka.clients.producer_props`` (batch_size 65536, linger_ms 5, acks all, each codec at
its client's default level), a fresh topic per run, the four clients in a rotating order per
repetition (paired repetitions: the clients of one repetition run back to back, so their ratios
cancel most of the background load), one discarded warm-up repetition.

Each run is a saturated driver (docs/drivers.md) for ``--seconds``.  Steady state, start-up
excluded: the script reads the topic's end offsets (``kcat -Q``) ``--skip`` seconds after the
driver's STARTED line and again one second before the run ends;

- msg/s = the messages stored between the two reads / the time between them;
- client CPU µs per message = the driver's CPU window (it opens ``skip_s`` = ``--skip`` after
  STARTED and closes after the flush: usr + sys of the whole process) / the messages stored from
  the first read to the end of the run.

So process start-up, connection, the JVM's first JIT seconds and the Go clients' pool warm-up
stay out of both figures.

    python benchmarks/go_drivers_vs_peers.py run --seconds 14 --skip 4 --reps 5 --out r.json
    python benchmarks/go_drivers_vs_peers.py render --out r.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
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

from kbench.kafka import admin, clients, go_driver, java_driver  # noqa: E402
from kbench.kafka.cluster import LocalCluster  # noqa: E402
from kbench.model import corpus  # noqa: E402

CLIENTS = ("librdkafka", "java", "kafka-go", "sarama")
PARTITIONS = 3


def end_offsets(bs: str, topic: str) -> int:
    """The sum of the topic's end offsets (kcat -Q at timestamp -1)."""
    args = ["kcat", "-b", bs, "-Q"]
    for p in range(PARTITIONS):
        args += ["-t", f"{topic}:{p}:-1"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=30, check=True).stdout
    offs = [int(x) for x in re.findall(r"offset (-?\d+)", out)]
    if len(offs) != PARTITIONS:
        raise RuntimeError(f"kcat -Q: {out.strip()[:300]}")
    return sum(offs)


def loadavg() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def one_run(client: str, bs: str, topic: str, codec: str, cfile: Path, args: argparse.Namespace) -> dict[str, Any]:
    props = clients.producer_props(client, {"bootstrap.servers": bs}, codec, None, 65536, 5.0, "all")
    job = {
        "protocol": clients.PROTOCOL,
        "role": "producer",
        "topic": topic,
        "props": props,
        "corpus_file": str(cfile),
        "corpus_format": "lenprefixed",
        "mode": "saturated",
        "count": 0,
        "duration": args.seconds,
        "run_id": 1,
        "skip_s": args.skip,
    }
    env = clients.driver_env(os.environ, str(ROOT))
    p = subprocess.Popen(
        clients.driver_command(client),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert p.stdin is not None and p.stdout is not None
    p.stdin.write(json.dumps(job) + "\n")
    p.stdin.close()
    line = p.stdout.readline().strip()
    if line != "STARTED":
        p.kill()
        raise RuntimeError(f"{client}: {line or 'no STARTED line'}")
    started = time.monotonic()
    # the sampling schedule of the benchmark itself: end offsets at skip and at seconds - 1
    time.sleep(max(0.0, started + args.skip - time.monotonic()))
    t1, h1 = time.monotonic(), end_offsets(bs, topic)
    time.sleep(max(0.0, started + args.seconds - 1.0 - time.monotonic()))
    t2, h2 = time.monotonic(), end_offsets(bs, topic)
    line = p.stdout.readline().strip()
    p.wait(timeout=120)
    if not line.startswith("RESULT "):
        raise RuntimeError(f"{client}: {line[:300]}")
    res = json.loads(line[7:])
    h_end = end_offsets(bs, topic)
    cpu = res["cpu"]
    if res["delivered"] != res["sent"] or cpu["usr_s"] is None:
        raise RuntimeError(f"{client}: sent {res['sent']}, delivered {res['delivered']}, cpu {cpu}")
    out = {
        "msg_s": (h2 - h1) / (t2 - t1),
        "cpu_us_per_msg": 1e6 * (cpu["usr_s"] + cpu["sys_s"]) / (h_end - h1),
        "steady_msgs": h2 - h1,
        "window_msgs": h_end - h1,
        "cpu_s": cpu["usr_s"] + cpu["sys_s"],
        "delivered": res["delivered"],
        "wire_bytes": (res.get("client_stats") or {}).get("wire_bytes"),
    }
    if "go" in cpu:
        out["go_gc_us_per_msg"] = 1e6 * (cpu["go"]["gc_s"] or 0.0) / (h_end - h1)
        out["go_alloc_bytes_per_msg"] = (cpu["go"]["alloc_bytes"] or 0.0) / (h_end - h1)
    return out


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def bench(bs: str, args: argparse.Namespace, tmp: Path, recs: tuple[bytes, ...]) -> dict[str, Any]:
    cfile = tmp / "corpus.bin"
    cfile.write_bytes(b"".join(len(r).to_bytes(4, "big") + r for r in recs))
    out: dict[str, Any] = {
        "seconds": args.seconds,
        "skip_s": args.skip,
        "partitions": PARTITIONS,
        "cell": {"batch_size": 65536, "linger_ms": 5, "acks": "all", "level": "each client's default"},
        "records": len(recs),
        "bytes_per_record": sum(map(len, recs)) / len(recs),
        "loadavg": [],
        "codecs": {},
    }
    k = 0
    for codec in args.codecs.split(","):
        reps = []
        for rep in range(args.reps + 1):  # rep 0: warm-up, discarded
            order = CLIENTS[rep % 4 :] + CLIENTS[: rep % 4]
            row: dict[str, Any] = {"rep": rep, "order": list(order), "loadavg_before": loadavg()}
            for client in order:
                k += 1
                topic = f"gb-{k}"
                admin.create_topic({"bootstrap.servers": bs}, topic, PARTITIONS, 1)
                row[client] = one_run(client, bs, topic, codec, cfile, args)
                admin.delete_topic({"bootstrap.servers": bs}, topic)
            row["loadavg_after"] = loadavg()
            out["loadavg"] += [row["loadavg_before"], row["loadavg_after"]]
            print(codec, json.dumps(row), flush=True)
            if rep:
                reps.append(row)
        out["codecs"][codec] = {
            "pairs": reps,
            "median": {c: {m: med([r[c][m] for r in reps]) for m in ("msg_s", "cpu_us_per_msg")} for c in CLIENTS},
            "ratio_vs_librdkafka": {
                c: {m: med([r[c][m] / r["librdkafka"][m] for r in reps]) for m in ("msg_s", "cpu_us_per_msg")}
                for c in CLIENTS
            },
            "go": {
                c: {m: med([r[c][m] for r in reps]) for m in ("go_gc_us_per_msg", "go_alloc_bytes_per_msg")}
                for c in ("kafka-go", "sarama")
            },
        }
    return out


def render(path: Path) -> str:
    r = json.loads(path.read_text())
    n = len(next(iter(r["codecs"].values()))["pairs"])
    lines = [
        f"{n} paired repetitions per codec (the four clients back to back, rotating order) after one "
        f"discarded round; saturated runs of {r['seconds']:g} s into a fresh {r['partitions']}-partition "
        f"topic; steady window from {r['skip_s']:g} s after STARTED; batch_size 65536, linger_ms 5, acks "
        f"all, each codec at its client's default level; JSON corpus, {r['bytes_per_record']:.0f} B/record; "
        f"load average during the runs {min(r['loadavg']):.1f}–{max(r['loadavg']):.1f} (2 vCPUs).",
        "",
        "| codec | client | msg/s (median) | / librdkafka | client CPU µs/msg | / librdkafka | Go GC µs/msg | Go alloc B/msg |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for codec, d in r["codecs"].items():
        for c in CLIENTS:
            m, q = d["median"][c], d["ratio_vs_librdkafka"][c]
            g = d["go"].get(c)
            gc = f"{g['go_gc_us_per_msg']:.2f}" if g else ""
            al = f"{g['go_alloc_bytes_per_msg']:,.0f}" if g else ""
            lines.append(
                f"| {codec} | {c} | {m['msg_s']:,.0f} | {q['msg_s']:.2f} | {m['cpu_us_per_msg']:.2f} "
                f"| {q['cpu_us_per_msg']:.2f} | {gc} | {al} |"
            )
    lines += [
        "",
        "Ratios are medians of the per-repetition ratios; Go GC µs/msg is the runtime's own estimate "
        "(runtime/metrics `/cpu/classes/gc/total:cpu-seconds`, refreshed at each GC cycle's end), part of "
        "the client CPU, not added to it.",
    ]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("run", "render"))
    ap.add_argument("--codecs", default="none,lz4,zstd")
    ap.add_argument("--seconds", type=float, default=14)
    ap.add_argument("--skip", type=float, default=4)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--corpus-size", type=int, default=4 << 20)
    ap.add_argument("--out", type=Path, required=True, help="results JSON to write (or to read, with render)")
    args = ap.parse_args()
    if args.what == "render":
        print(render(args.out))
        return 0
    if args.reps < 1 or args.seconds < args.skip + 3:
        print("go_drivers_vs_peers: give --reps >= 1 and --seconds >= --skip + 3", file=sys.stderr)
        return 2
    if shutil.which("kcat") is None:
        print("go_drivers_vs_peers: kcat not found; install it with: apt-get install -y kcat", file=sys.stderr)
        return 2
    recs = corpus.generate("json", args.corpus_size, seed=1).records
    java_driver.build()
    go_driver.build()
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kbench-gb-") as tmp, LocalCluster(brokers=1) as cl:
        res = bench(cl.bootstrap_servers, args, Path(tmp), recs)
    res["wall_s"] = time.monotonic() - t0
    res["versions"] = {"go": go_driver.build().go_version}
    args.out.write_text(json.dumps(res, indent=2))
    print(render(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
