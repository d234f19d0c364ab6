#!/usr/bin/env python3
"""kbench's codecs against the physical limit: the zstd and lz4 CLIs' own benchmark modes.

Same file, same level, same block size, alternating kbench and CLI runs several times on
one machine; prints kbench/CLI throughput ratios (MB = 10**6 bytes on both sides).

Like for like:
- Both sides report their *fastest* run (``zstd -b``/``lz4 -b`` print the best time), so
  kbench's figure here is its best of ``--repeats``; the medians are in the CSV.
- zstd: kbench compresses each block as a Kafka producer does, as a stream of unknown size,
  which picks zstd's parameters for unknown sizes.  The CLI is given the same parameters
  with ``--zstd=wlog=…,clog=…`` (zstd may still shrink them to fit a known block size).
- lz4: a Kafka LZ4 frame holds independent 64 KiB blocks, so a 1 MiB kbench block is
  16 LZ4 blocks; the CLI is run with ``-B min(block, 65536)`` to do the same work.

Usage: python benchmarks/codecs_vs_cli.py [--rounds 3] [--corpus json] [--size 4194304]
"""
from __future__ import annotations

import argparse
import csv
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from kbench import _native, corpus

CLI_LINE = re.compile(r"->\s*(\d+)\s*\(x?([\d.]+)\),\s*([\d.]+)\s*MB/s\s*,\s*([\d.]+)\s*MB/s")
CASES = [("zstd", 1), ("zstd", 3), ("lz4", None)]
BLOCKS = [16384, 1 << 20]


def run_cli(codec: str, level: int | None, block: int, path: Path, seconds: int) -> tuple[int, float, float]:
    if codec == "zstd":
        p = _native.zstd_cparams(level)
        params = ",".join(f"{k}={v}" for k, v in p.items())
        cmd = ["zstd", f"-b{level}", f"-i{seconds}", f"-B{block}", f"--zstd={params}", str(path)]
    else:
        cmd = ["lz4", "-b1", f"-i{seconds}", f"-B{min(block, 65536)}", str(path)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    text = (out.stdout + out.stderr).replace("\r", "\n")
    m = CLI_LINE.findall(text)
    if not m:
        raise RuntimeError(f"could not parse {' '.join(cmd)}: {text[-300:]}")
    size, _ratio, c, d = m[-1]
    return int(size), float(c), float(d)


def run_kbench(path: Path, block: int, csv_path: Path, repeats: int) -> dict[tuple[str, int | None], tuple[int, float, float]]:
    specs = ",".join(c if lv is None else f"{c}:{lv}" for c, lv in CASES)
    subprocess.run([sys.executable, "-m", "kbench", "codecs", "bench", "--corpus", str(path), "--codecs", specs,
                    "--block-sizes", str(block), "--repeats", str(repeats), "--csv", str(csv_path)],
                   check=True, capture_output=True, text=True)
    best: dict[tuple[str, int | None], tuple[int, float, float]] = {}
    for r in csv.DictReader(csv_path.open()):
        if r["warmup"] == "True":
            continue
        key = (r["codec"], int(r["level"]) if r["level"] else None)
        size, c, d = best.get(key, (int(r["compressed_bytes"]), 0.0, 0.0))
        best[key] = (size, max(c, float(r["compress_mb_s"])), max(d, float(r["decompress_mb_s"])))
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="alternating kbench/CLI rounds")
    ap.add_argument("--corpus", default="json", help="built-in corpus name or file")
    ap.add_argument("--size", type=int, default=4 << 20, help="bytes of a built-in corpus")
    ap.add_argument("--repeats", type=int, default=5, help="kbench repeats per figure")
    ap.add_argument("--cli-seconds", type=int, default=3, help="the CLIs' -i (seconds per figure)")
    args = ap.parse_args()

    c = corpus.load(args.corpus, size=args.size)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "corpus.bin"
        path.write_bytes(c.payload)  # the exact bytes kbench benchmarks
        ours: dict[tuple, list[tuple[int, float, float]]] = {}
        theirs: dict[tuple, list[tuple[int, float, float]]] = {}
        for rnd in range(args.rounds):
            for block in BLOCKS:
                k = run_kbench(path, block, Path(tmp) / f"k{rnd}_{block}.csv", args.repeats)
                for codec, level in CASES:
                    ours.setdefault((codec, level, block), []).append(k[(codec, level)])
                    theirs.setdefault((codec, level, block), []).append(run_cli(codec, level, block, path, args.cli_seconds))
            print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr)

    print(f"corpus {c.name}: {c.size} bytes, entropy {c.entropy:.2f} bits/byte, {args.rounds} alternating rounds; "
          f"medians over rounds of each side's best run")
    print(f"{'codec':<7} {'block':>8} {'kb ratio':>9} {'cli ratio':>9} {'Δratio':>7} "
          f"{'kb C MB/s':>10} {'cli C MB/s':>10} {'C×':>6} {'kb D MB/s':>10} {'cli D MB/s':>10} {'D×':>6}")
    n = c.size
    for (codec, level, block), ks in ours.items():
        ts = theirs[(codec, level, block)]
        kc, kd = statistics.median(x[1] for x in ks), statistics.median(x[2] for x in ks)
        tc, td = statistics.median(x[1] for x in ts), statistics.median(x[2] for x in ts)
        kr, tr = n / ks[0][0], n / ts[0][0]
        name = codec if level is None else f"{codec}:{level}"
        print(f"{name:<7} {block:>8} {kr:9.3f} {tr:9.3f} {100 * (kr - tr) / tr:+6.2f}% "
              f"{kc:10.1f} {tc:10.1f} {kc / tc:6.3f} {kd:10.1f} {td:10.1f} {kd / td:6.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
