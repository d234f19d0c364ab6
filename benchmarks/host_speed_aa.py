"""The host-speed probe's own false-verdict rate on an idle machine (docs/methodology.md §4).

Usage:
  python benchmarks/host_speed_aa.py --probes 250 --out benchmarks/results/host_speed_aa-DATE.jsonl
  python benchmarks/host_speed_aa.py --from benchmarks/results/host_speed_aa-DATE.jsonl

Takes ``--probes`` probes back to back (``kbench.engine.host_speed.measure``, one JSON line each),
or reads them back with ``--from``. Then it judges them the way a run does. Every 7th probe
starts a calibration of 7 consecutive probes. The 30 pairs of consecutive probes after that
calibration are each judged as one attempt (before, after) against it. The script prints how many
pairs fall beyond the default limit (``DEFAULT_HOST_DRIFT_PCT``), and the largest drift. Nothing
changes between the probes, so every pair beyond the limit is a false verdict.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from kbench.engine import host_speed as hs

PAIRS = 30


def judge(readings: list[hs.Reading], limit: float) -> tuple[int, int, float]:
    """(pairs judged, pairs beyond ``limit``, largest |drift| %)."""
    n = beyond = 0
    worst = 0.0
    k = hs.CALIBRATION_PROBES
    for i in range(0, len(readings) - k - 2 * PAIRS + 1, k):
        base = hs.Baseline(tuple(readings[i : i + k]))
        for j in range(i + k, i + k + 2 * PAIRS, 2):
            d, _ = hs.attempt_drift_pct(readings[j : j + 2], base)
            n += 1
            beyond += abs(d) > limit
            worst = max(worst, abs(d))
    return n, beyond, worst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--probes", type=int, default=250, help="probes to take (default 250, about 2.5 min)")
    ap.add_argument("--out", type=Path, help="write each probe as a JSON line here")
    ap.add_argument("--from", dest="src", type=Path, help="judge the probes of this file instead of probing")
    ap.add_argument("--limit", type=float, default=hs.DEFAULT_HOST_DRIFT_PCT, help="the drift limit, %% (default 10)")
    a = ap.parse_args()
    if a.src:
        lines = [json.loads(x) for x in a.src.read_text().splitlines() if x.strip()]
    else:
        lines = []
        for _ in range(a.probes):
            lines.append({"t": time.time(), **hs.measure().as_dict()})
        if a.out:
            a.out.write_text("".join(json.dumps(x) + "\n" for x in lines))
    readings = [hs.Reading.from_dict(x) for x in lines]
    n, beyond, worst = judge(readings, a.limit)
    med = {p: statistics.median(r.part(p) for r in readings) for p in hs.PARTS}
    print(
        f"{len(readings)} probes: tcp {med['tcp']:.2f}, lz4 {med['codec']:.2f} GB/CPU-s (medians); "
        f"{beyond} of {n} pairs beyond ±{a.limit:g}% ({beyond / n * 100:.1f}%), largest {worst:.1f}%"
    )


if __name__ == "__main__":
    main()
