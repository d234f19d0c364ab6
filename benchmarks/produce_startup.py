"""``kbench produce``'s start-up: the whole process's CPU (user + sys, its rusage) sending one
message, against the bare interpreter's (``python -c pass``) and ``kbench produce --help``,
alternated --reps times against librdkafka's in-process mock cluster (tests/test_consume.py's
MockCluster: no Kafka needed, the broker side runs in this script's process, not the measured one).  The built-in corpus is read from
its cache (kbench.model.corpus_cache), warmed by one run first; the runs use the caller's
environment as it is (its PYTHONDONTWRITEBYTECODE included: the script prints it).

    python benchmarks/produce_startup.py --reps 10
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from test_consume import MockCluster  # noqa: E402


def cpu_of(cmd: list[str], env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=10)
    a = ap.parse_args()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    print(f"PYTHONDONTWRITEBYTECODE={env.get('PYTHONDONTWRITEBYTECODE', '')!r}")
    mock = MockCluster({"startup": 1})
    try:
        bs = mock.bootstrap_servers
        cmds = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "kbench produce --help": [sys.executable, "-m", "kbench", "produce", "--help"],
            "kbench produce (1 message)": [
                sys.executable,
                "-m",
                "kbench",
                "produce",
                "--bootstrap",
                bs,
                "--topic",
                "startup",
                "--mode",
                "saturated",
                "--count",
                "1",
            ],  # fmt: skip
        }
        for cmd in cmds.values():  # warm: the corpus cache, the page cache
            cpu_of(cmd, env)
        cpu: dict[str, list[float]] = {k: [] for k in cmds}
        for rep in range(a.reps):
            names = list(cmds) if rep % 2 == 0 else list(reversed(cmds))
            for k in names:
                cpu[k].append(cpu_of(cmds[k], env))
    finally:
        mock.close()
    for k, xs in cpu.items():
        print(f"| {k} | {statistics.median(xs):.3f} [{min(xs):.3f}–{max(xs):.3f}] |")
    own = [p - b for p, b in zip(cpu["kbench produce (1 message)"], cpu["python -c pass"], strict=True)]
    print(f"| kbench produce (1 message) − python -c pass, per pair | {statistics.median(own):.3f} "
          f"[{min(own):.3f}–{max(own):.3f}] |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
