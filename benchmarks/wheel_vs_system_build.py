#!/usr/bin/env python3
"""Codec speed of the self-contained wheel (scripts/build-wheel.sh) against the build linked to the
system's libraries (``python setup.py build_ext --inplace``): does bundling cost anything?

The two differ only in how the libraries are reached: the wheel's extension loads copies of
libzstd, liblz4 and libz under hashed names from ``kafka_kbench.libs/`` and has snappy (with its
C++ runtime) linked in; the in-place build loads the system's shared libraries.  Same corpus, same
codecs, same block sizes: ``kbench codecs bench --json`` on each side, one right after the other,
their order swapped every round; per pair the wheel/system ratio of the median MB/s, and per
figure the median ratio over the rounds with a 95 % bootstrap confidence interval.

Usage: python benchmarks/wheel_vs_system_build.py --wheel-python VENV/bin/python
       [--rounds 6] [--codecs zstd:1,zstd:3,lz4,snappy,gzip:6] [--blocks 16KiB,1MiB] [--cpu 1]

The system side is this checkout's in-place build, run with this interpreter and the checkout
first on PYTHONPATH; the wheel side is the given venv's interpreter with no PYTHONPATH.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def bench(python: str, env: dict[str, str], args: argparse.Namespace, pin: list[str]) -> dict[tuple[str, int], dict]:
    cmd = [
        *pin,
        python,
        "-P",
        "-m",
        "kbench",
        "codecs",
        "bench",
        "--json",
        "--corpus",
        "json",
        "--corpus-size",
        args.size,
        "--codecs",
        args.codecs,
        "--block-sizes",
        args.blocks,
        "--min-time",
        str(args.min_time),
        "--repeats",
        str(args.repeats),
    ]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, cwd="/")
    return {(c["spec"], c["block_size"]): c for c in json.loads(out.stdout)["cells"]}


def where(python: str, env: dict[str, str]) -> str:
    code = "import kbench._native as n; print(n.__file__)"
    return subprocess.run(
        [python, "-P", "-c", code], env=env, capture_output=True, text=True, check=True, cwd="/"
    ).stdout.strip()


def ci(ratios: list[float], rng: random.Random) -> tuple[float, float]:
    meds = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(2000))
    return meds[50], meds[1949]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wheel-python", required=True, help="python of a venv with kbench's wheel installed")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--codecs", default="zstd:1,zstd:3,lz4,snappy,gzip:6")
    ap.add_argument("--blocks", default="16KiB,1MiB")
    ap.add_argument("--size", default="4MiB")
    ap.add_argument("--min-time", type=float, default=0.2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cpu", default=None, help="pin both sides to this CPU (taskset)")
    args = ap.parse_args()
    pin = ["taskset", "-c", args.cpu] if args.cpu else []
    base = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    sides = {
        "wheel": (args.wheel_python, base),
        "system": (sys.executable, {**base, "PYTHONPATH": str(ROOT)}),
    }
    for name, (py, env) in sides.items():
        print(f"{name}: {where(py, env)}")
    pairs: dict[tuple[str, int], dict[str, list[float]]] = {}
    for r in range(args.rounds):
        order = ["wheel", "system"] if r % 2 == 0 else ["system", "wheel"]
        res = {name: bench(*sides[name], args, pin) for name in order}
        for key, w in res["wheel"].items():
            s = res["system"][key]
            assert w["ratio"] == s["ratio"], (key, w["ratio"], s["ratio"])  # same bytes out
            d = pairs.setdefault(key, {"C": [], "D": []})
            d["C"].append(w["compress_median"] / s["compress_median"])
            d["D"].append(w["decompress_median"] / s["decompress_median"])
        print(f"round {r + 1}/{args.rounds} done ({' then '.join(order)})", file=sys.stderr)
    rng = random.Random(1)
    print(f"{'codec':8} {'block':>8} {'ratio':>6}  {'wheel/system C':>22}  {'wheel/system D':>22}")
    for (spec, block), d in sorted(pairs.items()):
        cells = []
        for k in ("C", "D"):
            lo, hi = ci(d[k], rng)
            cells.append(f"{statistics.median(d[k]):.3f} [{lo:.3f}–{hi:.3f}]")
        ratio = res["wheel"][(spec, block)]["ratio"]
        print(f"{spec:8} {block:>8} {ratio:>6.3f}  {cells[0]:>22}  {cells[1]:>22}")
    print(f"{args.rounds} pairs per figure; C = compress, D = decompress MB/s (median of {args.repeats} repeats)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
