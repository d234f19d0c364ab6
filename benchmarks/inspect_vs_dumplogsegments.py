#!/usr/bin/env python3
"""Segment parse speed: ``kbench inspect`` (C reader) against Kafka's ``DumpLogSegments``.

Writes an uncompressed segment of ``--size`` bytes (batches of ``--batch-size`` bytes holding
JSON events, as a broker stores them), then times on the same file, best of ``--repeat``:

- kbench's reader without decompression (CRC-32C verified on every batch): ``segment.scan_file``;
- the same reading every record of every batch (what ``kbench inspect`` does by default);
- the whole ``python -m kbench inspect --no-decompress --summary-only`` command (process start included);
- ``DumpLogSegments --files`` (batch-level, what ``kafka-dump-log.sh`` runs; JVM start included);
- ``DumpLogSegments --deep-iteration --files`` (every record).

Prints one line per tool with seconds and GB/s (1e9 bytes).  Usage:
    python benchmarks/inspect_vs_dumplogsegments.py [--size 1GiB] [--batch-size 16KiB] [--repeat 3]
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kbench import batch, corpus, kafka_dist, segment
from kbench.batch import Record
from kbench.units import parse_size


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
        cpus.append(sum(getattr(b, f) - getattr(a, f) for a, b in ((r0s, r1s), (r0c, r1c))
                        for f in ("ru_utime", "ru_stime")))
    return min(walls), min(cpus)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="1GiB")
    ap.add_argument("--batch-size", default="16KiB")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=None, help="where to write the segment (default: a temporary dir)")
    ap.add_argument("--skip-deep", action="store_true", help="skip DumpLogSegments --deep-iteration")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kbench-bench-", dir=args.dir) as tmp:
        d = Path(tmp) / "bench-0"
        d.mkdir()
        f = d / "00000000000000000000.log"
        n = write_segment(f, parse_size(args.size), parse_size(args.batch_size))
        rows = segment.scan_file(f, decompress=False)
        assert all(r.status == "ok" for r in rows)
        print(f"segment: {n} bytes, {len(rows)} uncompressed batches of ~{n // len(rows)} bytes, "
              f"{sum(r.records for r in rows)} records; crc32c path: {batch.crc32c_active()}")
        dump = kafka_dist.java_command("kafka.tools.DumpLogSegments", ["--files", str(f)], heap="1g",
                                       jvm_opts=["-Dlog4j2.level=WARN"])
        deep = kafka_dist.java_command("kafka.tools.DumpLogSegments", ["--deep-iteration", "--files", str(f)],
                                       heap="1g", jvm_opts=["-Dlog4j2.level=WARN"])
        cli = [sys.executable, "-m", "kbench", "inspect", "--no-decompress", "--summary-only", str(f)]
        tools = [
            ("kbench segment.scan_file (C reader, CRC verified)", lambda: segment.scan_file(f, decompress=False)),
            ("kbench segment.scan_file, every record checked", lambda: segment.scan_file(f, decompress=True)),
            ("kbench inspect CLI (process start included)",
             lambda: subprocess.run(cli, check=True, stdout=subprocess.DEVNULL)),
            ("DumpLogSegments --files (JVM start included)",
             lambda: subprocess.run(dump, check=True, stdout=subprocess.DEVNULL)),
        ]
        if not args.skip_deep:
            tools.append(("DumpLogSegments --deep-iteration --files",
                          lambda: subprocess.run(deep, check=True, stdout=subprocess.DEVNULL)))
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs "
              "(a loaded machine stretches wall time; CPU time is the contention-free cost)")
        print(f"{'tool':<55} {'wall s':>8} {'GB/s':>7} {'CPU s':>8} {'GB/CPU-s':>9}")
        for name, fn in tools:
            fn()  # warm the page cache once
            w, c = best(fn, args.repeat)
            print(f"{name:<55} {w:8.3f} {n / w / 1e9:7.2f} {c:8.3f} {n / c / 1e9:9.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
