#!/usr/bin/env python3
"""Segment parse speed: ``kbench inspect`` (C reader) against Kafka's ``DumpLogSegments``.

Writes an uncompressed segment of ``--size`` bytes (batches of ``--batch-size`` bytes holding
JSON events, as a broker stores them), then times on the same file, best of ``--repeat``:

- kbench's reader without decompression (CRC-32C verified on every batch): ``segment.scan_file``;
- the same reading every record of every batch (what ``kbench inspect`` does by default);
- the whole ``python -m kbench inspect --no-decompress --summary-only`` command (process start included);
- ``DumpLogSegments --files`` (batch-level, what ``kafka-dump-log.sh`` runs; JVM start included);
- ``DumpLogSegments --deep-iteration --files`` (every record).

Prints one line per tool with seconds and GB/s (1e9 bytes); ``--out R.json`` keeps the results
and ``--render R.json`` prints the Markdown table that benchmarks/README.md holds.  Usage:
    python benchmarks/inspect_vs_dumplogsegments.py [--size 1GiB] [--batch-size 16KiB] [--repeat 3] [--out R.json]
    python benchmarks/inspect_vs_dumplogsegments.py --render R.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kbench.kafka import kafka_dist
from kbench.model import batch, corpus, segment
from kbench.model.batch import Record
from kbench.model.units import parse_size


def write_segment(path: Path, size: int, batch_size: int) -> int:
    recs = corpus.load("json", size=4 << 20).records
    batches: list[bytes] = []
    i = 0
    while sum(map(len, batches)) < 4 << 20:  # a pool of distinct batches, reused to reach the size
        cur: list[Record] = []
        acc = 61
        while acc + len(recs[i % len(recs)]) + 8 < batch_size:
            cur.append(Record(value=recs[i % len(recs)], timestamp=1_700_000_000_000 + i))
            acc += len(recs[i % len(recs)]) + 8
            i += 1
        batches.append(batch.encode(cur, "none"))
    offset, written = 0, 0
    with path.open("wb") as f:
        while written < size:
            for b in batches:
                buf = bytearray(b)
                buf[0:8] = offset.to_bytes(8, "big")
                buf[12:16] = (0).to_bytes(4, "big")
                offset += int.from_bytes(buf[23:27], "big") + 1
                f.write(buf)
                written += len(buf)
                if written >= size:
                    break
    return written


def best(fn, repeat: int) -> tuple[float, float]:
    """Best wall seconds and best CPU seconds (user+sys of this process and its children)."""
    walls, cpus = [], []
    for _ in range(repeat):
        r0s, r0c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t)
        r1s, r1c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(
            sum(getattr(b, f) - getattr(a, f) for a, b in ((r0s, r1s), (r0c, r1c)) for f in ("ru_utime", "ru_stime"))
        )
    return min(walls), min(cpus)


def machine() -> dict:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"arch": platform.machine(), "cpu": model, "cpus": os.cpu_count(), "kernel": platform.release()}


def render(r: dict) -> str:
    """The Markdown table for benchmarks/README.md, from a results JSON."""
    m = r["machine"]
    load = lambda xs: " / ".join(f"{x:.1f}" for x in xs)  # noqa: E731
    out = [
        f"Run {r['date']} on {m['cpus']} x {m['cpu']} ({m['arch']}, kernel {m['kernel']}), CRC-32C path "
        f"{r['crc32c']}; {r['bytes']} bytes, {r['batches']} batches, {r['records']} records; load average "
        f"{load(r['load_before'])} before, {load(r['load_after'])} after, on {m['cpus']} CPUs. Command: "
        f"`python {r['command']}`",
        "",
        "| tool | wall s | GB/s (wall) | CPU s | GB per CPU-s |",
        "|---|---:|---:|---:|---:|",
    ]
    for t in r["tools"]:
        out.append(
            f"| {t['tool']} | {t['wall_s']:.3f} | {r['bytes'] / t['wall_s'] / 1e9:.2f} | {t['cpu_s']:.3f} "
            f"| {r['bytes'] / t['cpu_s'] / 1e9:.2f} |"
        )
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="1GiB")
    ap.add_argument("--batch-size", default="16KiB")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=None, help="where to write the segment (default: a temporary dir)")
    ap.add_argument("--skip-deep", action="store_true", help="skip DumpLogSegments --deep-iteration")
    ap.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    ap.add_argument("--render", type=Path, default=None, help="print the Markdown table of a results JSON and exit")
    args = ap.parse_args()
    if args.render:
        print(render(json.loads(args.render.read_text())))
        return 0
    result: dict = {
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "command": " ".join(sys.argv),
        "tools": [],
    }
    with tempfile.TemporaryDirectory(prefix="kbench-bench-", dir=args.dir) as tmp:
        d = Path(tmp) / "bench-0"
        d.mkdir()
        f = d / "00000000000000000000.log"
        n = write_segment(f, parse_size(args.size), parse_size(args.batch_size))
        rows = segment.scan_file(f, decompress=False)
        assert all(r.status == "ok" for r in rows)
        print(
            f"segment: {n} bytes, {len(rows)} uncompressed batches of ~{n // len(rows)} bytes, "
            f"{sum(r.records for r in rows)} records; crc32c path: {batch.crc32c_active()}"
        )
        result.update(
            bytes=n,
            batches=len(rows),
            records=sum(r.records for r in rows),
            crc32c=batch.crc32c_active(),
            load_before=list(os.getloadavg()),
        )
        dump = kafka_dist.java_command(
            "kafka.tools.DumpLogSegments", ["--files", str(f)], heap="1g", jvm_opts=["-Dlog4j2.level=WARN"]
        )
        deep = kafka_dist.java_command(
            "kafka.tools.DumpLogSegments",
            ["--deep-iteration", "--files", str(f)],
            heap="1g",
            jvm_opts=["-Dlog4j2.level=WARN"],
        )
        cli = [sys.executable, "-m", "kbench", "inspect", "--no-decompress", "--summary-only", str(f)]
        tools = [
            ("kbench segment.scan_file (C reader, CRC verified)", lambda: segment.scan_file(f, decompress=False)),
            ("kbench segment.scan_file, every record checked", lambda: segment.scan_file(f, decompress=True)),
            (
                "kbench inspect CLI (process start included)",
                lambda: subprocess.run(cli, check=True, stdout=subprocess.DEVNULL),
            ),
            (
                "DumpLogSegments --files (JVM start included)",
                lambda: subprocess.run(dump, check=True, stdout=subprocess.DEVNULL),
            ),
        ]
        if not args.skip_deep:
            tools.append(
                (
                    "DumpLogSegments --deep-iteration --files",
                    lambda: subprocess.run(deep, check=True, stdout=subprocess.DEVNULL),
                )
            )
        print(
            f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs "
            "(a loaded machine stretches wall time; CPU time is the contention-free cost)"
        )
        print(f"{'tool':<55} {'wall s':>8} {'GB/s':>7} {'CPU s':>8} {'GB/CPU-s':>9}")
        for name, fn in tools:
            fn()  # warm the page cache once
            w, c = best(fn, args.repeat)
            print(f"{name:<55} {w:8.3f} {n / w / 1e9:7.2f} {c:8.3f} {n / c / 1e9:9.2f}", flush=True)
            result["tools"].append({"tool": name, "wall_s": w, "cpu_s": c})
        result["load_after"] = list(os.getloadavg())
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
