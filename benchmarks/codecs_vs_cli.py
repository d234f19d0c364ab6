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

Noise: a shared VM moves single figures by ±15 %, more than the effect being measured.  So
each kbench run is *paired* with a CLI run of the same case right next to it (their order
swapped every round to cancel drift), the ratio is taken per pair, and the table gives the
median of the per-pair ratios with a 95 % bootstrap confidence interval, and says whether
it is at or above ``--target`` (0.95): ``yes`` when the whole interval is, ``no`` when none
of it is, ``open`` when more rounds are needed.  ``--cpu N`` pins both sides
to one CPU; ``--pairs FILE`` writes every pair to a CSV.  To narrow one case down, run it alone
with more rounds: ``--cases lz4 --blocks 16384 --rounds 25``.

Usage: python benchmarks/codecs_vs_cli.py [--rounds 7] [--cases zstd:1,zstd:3,lz4]
       [--blocks 16384,1048576] [--corpus json] [--size 4194304] [--cpu 1] [--pairs FILE]
"""

from __future__ import annotations

import argparse
import csv
import random
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from kbench import _native
from kbench.model import corpus

CLI_LINE = re.compile(r"->\s*(\d+)\s*\(x?([\d.]+)\),\s*([\d.]+)\s*MB/s\s*,\s*([\d.]+)\s*MB/s")
CASES = [("zstd", 1), ("zstd", 3), ("lz4", None)]
BLOCKS = [16384, 1 << 20]


def run_cli(
    codec: str, level: int | None, block: int, path: Path, seconds: int, pin: list[str]
) -> tuple[int, float, float]:
    """One ``zstd -b``/``lz4 -b`` run: (compressed bytes, best compress MB/s, best decompress MB/s)."""
    if codec == "zstd":
        p = _native.zstd_cparams(level)
        params = ",".join(f"{k}={v}" for k, v in p.items())
        cmd = ["zstd", f"-b{level}", f"-i{seconds}", f"-B{block}", f"--zstd={params}", str(path)]
    else:
        cmd = ["lz4", "-b1", f"-i{seconds}", f"-B{min(block, 65536)}", str(path)]
    out = subprocess.run(pin + cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} failed (exit {out.returncode}): {(out.stderr or out.stdout).strip()[-300:]}"
        )
    text = (out.stdout + out.stderr).replace("\r", "\n")
    m = CLI_LINE.findall(text)
    if not m:
        raise RuntimeError(f"could not parse {' '.join(cmd)}: {text[-300:]}")
    size, _ratio, c, d = m[-1]
    return int(size), float(c), float(d)


def run_kbench(
    codec: str, level: int | None, block: int, path: Path, csv_path: Path, repeats: int, pin: list[str]
) -> tuple[int, float, float]:
    """One ``kbench codecs bench`` run of one case: (compressed bytes, best compress MB/s, best decompress MB/s)."""
    spec = codec if level is None else f"{codec}:{level}"
    out = subprocess.run(
        pin
        + [
            sys.executable,
            "-m",
            "kbench",
            "codecs",
            "bench",
            "--corpus",
            str(path),
            "--codecs",
            spec,
            "--block-sizes",
            str(block),
            "--repeats",
            str(repeats),
            "--csv",
            str(csv_path),
        ],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise RuntimeError(f"kbench codecs bench {spec} failed (exit {out.returncode}): {out.stderr.strip()[-300:]}")
    rows = [r for r in csv.DictReader(csv_path.open()) if r["warmup"] != "True"]
    return (
        int(rows[0]["compressed_bytes"]),
        max(float(r["compress_mb_s"]) for r in rows),
        max(float(r["decompress_mb_s"]) for r in rows),
    )


def median_ci(xs: list[float], resamples: int = 4000, seed: int = 1) -> tuple[float, float, float]:
    """Median of the per-pair ratios and its 95 % bootstrap confidence interval (percentile method)."""
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(resamples))
    return statistics.median(xs), meds[int(0.025 * resamples)], meds[int(0.975 * resamples) - 1]


def judged(xs: list[float], target: float) -> tuple[str, str]:
    """(``0.981 [0.93–1.04]``, verdict): the median per-pair ratio with its 95 % confidence
    interval, and whether it is at or above ``target``: yes, no, or open (the CI spans it)."""
    m, lo, hi = median_ci(xs)
    return f"{m:.3f} [{lo:.2f}–{hi:.2f}]", "yes" if lo >= target else "no" if hi < target else "open"


def parse_cases(text: str) -> list[tuple[str, int | None]]:
    """``zstd:1,lz4`` -> [("zstd", 1), ("lz4", None)]; only what both CLIs can run."""
    out: list[tuple[str, int | None]] = []
    for item in filter(None, (t.strip() for t in text.split(","))):
        codec, _, level = item.partition(":")
        if codec == "zstd" and level.isdigit() and 1 <= int(level) <= 22:
            out.append(("zstd", int(level)))
        elif codec == "lz4" and not level:
            out.append(("lz4", None))
        else:
            raise argparse.ArgumentTypeError(
                f"unknown case {item!r}; use zstd:LEVEL (1..22) or lz4 (Kafka's default lz4)"
            )
    if not out:
        raise argparse.ArgumentTypeError("no cases given; e.g. --cases zstd:1,zstd:3,lz4")
    return out


def parse_blocks(text: str) -> list[int]:
    """``16384,1048576`` -> [16384, 1048576]."""
    try:
        out = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad block sizes {text!r}; use bytes, e.g. 16384,1048576") from None
    if not out or min(out) <= 0:
        raise argparse.ArgumentTypeError(f"bad block sizes {text!r}; use positive bytes, e.g. 16384,1048576")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7, help="paired kbench/CLI rounds per case (default 7)")
    ap.add_argument("--corpus", default="json", help="built-in corpus name or file")
    ap.add_argument("--size", type=int, default=4 << 20, help="bytes of a built-in corpus")
    ap.add_argument("--repeats", type=int, default=5, help="kbench repeats per figure")
    ap.add_argument("--cli-seconds", type=int, default=3, help="the CLIs' -i (seconds per figure)")
    ap.add_argument("--cpu", type=int, default=None, help="pin both sides to this CPU with taskset")
    ap.add_argument(
        "--cases", type=parse_cases, default=CASES, help="zstd:LEVEL and/or lz4 (default zstd:1,zstd:3,lz4)"
    )
    ap.add_argument("--blocks", type=parse_blocks, default=BLOCKS, help="block sizes in bytes (default 16384,1048576)")
    ap.add_argument("--target", type=float, default=0.95, help="kbench/CLI ratio to judge against (default 0.95)")
    ap.add_argument("--pairs", type=Path, default=None, help="also write every kbench/CLI pair to this CSV")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    pin = ["taskset", "-c", str(args.cpu)] if args.cpu is not None else []

    try:
        return compare(args, pin)
    except (RuntimeError, OSError, corpus.CorpusError) as e:
        print(f"codecs_vs_cli: {e}", file=sys.stderr)
        return 1


def compare(args: argparse.Namespace, pin: list[str]) -> int:
    """Run the paired rounds, print the table, write --pairs; returns the exit status."""
    c = corpus.load(args.corpus, size=args.size)
    pairs: dict[tuple[str, int | None, int], list[tuple[tuple[int, float, float], tuple[int, float, float]]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "corpus.bin"
        path.write_bytes(c.payload)  # the exact bytes kbench benchmarks
        for rnd in range(args.rounds):
            for block in args.blocks:
                for codec, level in args.cases:
                    csv_path = Path(tmp) / f"k{rnd}_{codec}{level}_{block}.csv"
                    if rnd % 2 == 0:
                        k = run_kbench(codec, level, block, path, csv_path, args.repeats, pin)
                        t = run_cli(codec, level, block, path, args.cli_seconds, pin)
                    else:
                        t = run_cli(codec, level, block, path, args.cli_seconds, pin)
                        k = run_kbench(codec, level, block, path, csv_path, args.repeats, pin)
                    pairs.setdefault((codec, level, block), []).append((k, t))
            print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr, flush=True)

    print(
        f"corpus {c.name}: {c.size} bytes, entropy {c.entropy:.2f} bits/byte; {args.rounds} rounds, each a kbench "
        f"run paired with a CLI run; MB/s = medians of each side's best; C×, D× = median [95 % CI] of per-pair ratios; ≥T: at or above the target?"
    )
    print(
        f"{'codec':<7} {'block':>8} {'kb ratio':>9} {'cli ratio':>9} {'Δratio':>7} "
        f"{'kb C MB/s':>10} {'cli C MB/s':>10} {'C×':>17} {'≥T':>4} {'kb D MB/s':>10} {'cli D MB/s':>10} {'D×':>17} {'≥T':>4}"
    )
    n = c.size
    for (codec, level, block), ps in pairs.items():
        kc, kd = statistics.median(k[1] for k, _ in ps), statistics.median(k[2] for k, _ in ps)
        tc, td = statistics.median(t[1] for _, t in ps), statistics.median(t[2] for _, t in ps)
        kr, tr = n / ps[0][0][0], n / ps[0][1][0]
        name = codec if level is None else f"{codec}:{level}"
        (cs, cv), (ds, dv) = (judged([k[i] / t[i] for k, t in ps], args.target) for i in (1, 2))
        print(
            f"{name:<7} {block:>8} {kr:9.3f} {tr:9.3f} {100 * (kr - tr) / tr:+6.2f}% "
            f"{kc:10.1f} {tc:10.1f} {cs:>17} {cv:>4} {kd:10.1f} {td:10.1f} {ds:>17} {dv:>4}"
        )
    if args.pairs:
        tmp_path = args.pairs.with_name(args.pairs.name + ".partial")
        with tmp_path.open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(
                [
                    "codec",
                    "level",
                    "block",
                    "round",
                    "kb_compressed_bytes",
                    "kb_compress_mb_s",
                    "kb_decompress_mb_s",
                    "cli_compressed_bytes",
                    "cli_compress_mb_s",
                    "cli_decompress_mb_s",
                ]
            )
            for (codec, level, block), ps in pairs.items():
                for rnd, (k, t) in enumerate(ps, 1):
                    w.writerow([codec, "" if level is None else level, block, rnd, *k, *t])
        tmp_path.replace(args.pairs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
