"""Time ``kbench report`` on 100,000 CSV rows (target: under 5 s).

Writes four run directories (four "machines", 25,000 rows each over A, B, C, D, E) with
the engine's own writer (:class:`kbench.engine.store.ResultsWriter`, the CSV columns of
``kbench.engine.store.COLUMNS``) and a manifest shaped like the engine's, then runs
``python -m kbench report`` on them and prints wall-clock and CPU seconds.

    python benchmarks/report_bench.py [--rows 100000] [--keep DIR] [--no-plots]
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kbench.engine.store import COLUMNS, ResultsWriter  # noqa: E402

CODECS = ("none", "lz4", "zstd:1", "zstd:3")
CORPORA = ("json", "random")
BATCH = (16384, 65536, 131072, 262144, 1048576)
LINGER = (0, 5, 20, 50)
PARTS = (1, 2, 4, 8, 16)
ROLES = ("producer", "consumer", "broker-0")
REPS = 5


def _rows(exp: str, rng: random.Random, cells: list[tuple], reps: int):  # noqa: ANN202 - generator of dicts
    for i, (codec, corpus, bs, linger, parts) in enumerate(cells):
        base = {
            "cell_id": f"s-{i:04d}",
            "sweep": "s",
            "codec": codec,
            "corpus": corpus,
            "batch_size": bs,
            "linger_ms": linger,
            "partitions": parts,
            "acks": "all",
            "topic_compression": "producer",
            "messages": 100000,
        }
        comp = codec != "none"
        for rep in range(1, reps + 1):
            r = dict(base, rep=rep, target_rate_msgs=None if exp == "B" else 50000.0)
            ach = rng.uniform(49500, 50500) if exp != "B" else rng.uniform(2e5, 9e5) / (3 if comp else 1)
            r.update(achieved_rate_msgs=ach, rate_error_pct=None if exp == "B" else (ach - 50000) / 500)
            st = "OK" if rng.random() > 0.02 else "REJECTED"
            r.update(status=st, reason="" if st == "OK" else "achieved rate off the target")
            if exp == "A":
                p50 = rng.uniform(800, 1200)
                r.update(
                    {
                        f"corrected_{k}": p50 * f
                        for k, f in (("p50_us", 1), ("p95_us", 2), ("p99_us", 3), ("p999_us", 5), ("max_us", 9))
                    }
                )
                r.update(
                    {
                        f"service_{k}": p50 * f * 0.9
                        for k, f in (("p50_us", 1), ("p95_us", 2), ("p99_us", 3), ("p999_us", 5), ("max_us", 9))
                    }
                )
                r.update(out_of_range=0, lost=0, duplicated=0, delivery_errors=0)
            elif exp == "B":
                r.update(
                    payload_mb_per_s=ach * 250 / 1e6,
                    latency_flag="latency-NOT-comparable-saturated",
                    lost=0,
                    duplicated=0,
                    delivery_errors=0,
                )
            elif exp in ("C", "E"):
                ratio = (rng.uniform(4, 7) if corpus == "json" else rng.uniform(1.1, 1.3)) if comp else 0.97
                r.update(
                    payload_bytes=25_000_000,
                    stored_bytes=int(25_000_000 / ratio),
                    ratio=25_000_000 / int(25_000_000 / ratio),
                )
                if exp == "C":
                    r.update(
                        corpus_entropy_bits=5.12 if corpus == "json" else 6.57,
                        corpus_sha256="0" * 64,
                        corpus_near_random=corpus == "random",
                        stored_batches=400,
                        stored_codecs=codec.split(":")[0],
                    )
                else:
                    rec = bs / 250
                    r.update(
                        batches=400,
                        records_per_batch_p50=rec,
                        records_per_batch_p90=rec,
                        records_per_batch_max=rec,
                        bytes_per_batch_p50=bs / ratio,
                        bytes_per_batch_p90=bs / ratio,
                        bytes_per_batch_max=bs / ratio,
                        fill_source="bench",
                    )
            if exp == "D":
                for role in ROLES:
                    u, s = rng.uniform(5, 30), rng.uniform(1, 6)
                    yield dict(
                        r,
                        role=role,
                        pid=1000,
                        usr_pct=u,
                        sys_pct=s,
                        cpu_s=(u + s) / 10,
                        payload_gb=0.025,
                        cpu_s_per_gb=(u + s) / 10 / 0.025,
                        wire_bytes=None,
                        wire_source="",
                        steal_pct=0.0,
                    )
            else:
                yield r


def make_runs(root: Path, total_rows: int, machines: int = 4, seed: int = 1) -> list[Path]:
    cells = list(itertools.product(CODECS, CORPORA, BATCH, LINGER, PARTS))
    per_machine_per_cell = REPS * (4 + len(ROLES))  # A, B, C, E + D's roles
    n_cells = max(1, min(len(cells), total_rows // (machines * per_machine_per_cell)))
    cells = cells[:n_cells]
    dirs = []
    for m in range(machines):
        rng = random.Random(seed + m)
        d = root / f"machine-{m}"
        d.mkdir(parents=True)
        w = ResultsWriter(d)
        for exp in ("A", "B", "C", "D", "E"):
            w.append(exp, _rows(exp, rng, cells, REPS))
        man = {
            "run_id": f"bench{m}",
            "plan_name": "report-bench",
            "state": "complete",
            "seed": seed,
            "repetitions": REPS,
            "warmup": True,
            "duration_s": 30,
            "started_at": "2026-01-01T00:00:00+00:00",
            "machine": {
                "label": f"bench-{m}",
                "arch": ["x86_64", "aarch64"][m % 2],
                "cpu_model": f"bench cpu {m}",
                "physical_cores": 16 * (1 + m % 2),
                "logical_cores": 32,
                "memory_bytes": 1 << 38,
                "kernel": "6.1",
                "os": "Linux",
                "hostname_hash": f"{m:012d}",
            },
            "transport": {"kind": "bench"},
            "versions": {"kbench": "bench"},
            "corpora": {},
            "rate_derivation": {"method": "bench", "fraction": 0.5, "rate_msgs": 50000.0, "min_cell": "s-0000"},
            "gate": {"checks": []},
        }
        (d / "manifest.json").write_text(json.dumps(man))
        dirs.append(d)
    return dirs


def count_rows(dirs: list[Path]) -> int:
    return sum(sum(1 for _ in (d / f"{e}.csv").open()) - 1 for d in dirs for e in COLUMNS if (d / f"{e}.csv").exists())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--keep", type=Path, help="write the run directories and report here (default: a temp dir)")
    ap.add_argument("--no-plots", action="store_true")
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="kbench-report-bench-"))
    dirs = make_runs(root / "runs", args.rows)
    rows = count_rows(dirs)
    cmd = [sys.executable, "-m", "kbench", "report", *map(str, dirs), "-o", str(root / "report")] + (
        ["--no-plots"] if args.no_plots else []
    )
    c0 = time.process_time()
    sum(range(10**7))  # a fixed pure-Python loop: how fast this CPU is right now (load inflates it)
    calib = time.process_time() - c0
    load1 = open("/proc/loadavg").read().split()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(
        f"kbench report: {rows:,} CSV rows in {len(dirs)} run directories: {wall:.2f} s wall, {cpu:.2f} s CPU "
        f"({'no plots' if args.no_plots else 'with plots'}); report.md {(root / 'report' / 'report.md').stat().st_size:,} bytes; "
        f"load average {load1}, calibration loop sum(range(10**7)) {calib * 1000:.0f} ms CPU"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
