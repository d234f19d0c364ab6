"""Run directories for the report and notebook tests, made by the engine itself.

Real runs of small plans with the best transport this build has (``sim`` when present,
else ``dry``; the real-Kafka set is in :func:`kafka_runs`).  The two-machine set is two
runs under different CPU affinity (``taskset -c 0`` and ``taskset -c 0,1``): their manifests
record different CPU counts (the affinity's), so they are two machines by their own facts,
not by a label the test writes; plus an experiment-M CSV per machine made by
``kbench codecs bench -o RUN_DIR/M.csv`` under the same affinity.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from kbenv import KBENCH_PATH

from kbench.commands.run import EXIT_SHORT

ROOT = Path(__file__).resolve().parent.parent
_CACHE: dict[str, object] = {}


def best_transport() -> str:
    return "sim" if importlib.util.find_spec("kbench.engine.transports.simulated") else "dry"


def _env(steal: str | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = KBENCH_PATH + os.pathsep + env.get("PYTHONPATH", "")
    if steal is not None:  # the steal figure every run sees (kbench.kafka.procstat.INJECT_ENV)
        env["KBENCH_INJECT_STEAL_PCT"] = steal
    return env


def kbench(
    *args: str,
    cpus: str | None = None,
    check: bool = True,
    timeout: float = 300,
    steal: str | None = None,
    ok: tuple[int, ...] = (0,),
) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "kbench", *args]
    if cpus is not None and shutil.which("taskset"):
        cmd = ["taskset", "-c", cpus, *cmd]
    p = subprocess.run(cmd, cwd=ROOT, env=_env(steal), capture_output=True, text=True, timeout=timeout)
    if check and p.returncode not in ok:
        raise AssertionError(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


SMALL = """\
repetitions = 3
warmup = true
duration_s = {duration}
min_window_s = 0
warmup_s = 0.1
steady_skip_s = {skip}
auto_rate_fraction = 0.5
seed = 7

[transport]
kind = "{transport}"

[client]
"sasl.password" = "s3cr3t-kbench-test"

[corpora]
json = {{ source = "json", size = 262144, seed = 1 }}
random = {{ source = "random", size = 262144, seed = 1 }}
"""


def plan_text(
    name: str, sweeps: str, duration: float = 0.3, transport: str | None = None, top: str = "", skip: float = 0
) -> str:
    head = f'name = "{name}"\ndescription = "test plan for reports ({name})"\n{top}'
    return head + SMALL.format(duration=duration, transport=transport or best_transport(), skip=skip) + sweeps


#: The zstd-vs-none plan's sweeps (experiments A, B, C, D), at test durations.
ZSTD_VS_NONE = """
[[sweep]]
name = "saturated"
experiments = ["B"]
codec = ["none", "zstd:3"]
corpus = ["json", "random"]
batch_size = 65536
linger_ms = 5
rate = "saturated"

[[sweep]]
name = "fixed"
experiments = ["A", "C", "D"]
codec = ["none", "zstd:3"]
corpus = ["json", "random"]
batch_size = 65536
linger_ms = 5
rate = "auto"
"""

#: A quick-sized plan with A–F for the two-machine report and notebooks.
MACHINE = """
[[sweep]]
name = "saturated"
experiments = ["B"]
codec = ["none", "zstd:3"]
corpus = ["json"]
batch_size = 65536
linger_ms = 5
rate = "saturated"

[[sweep]]
name = "fixed"
experiments = ["A", "C", "D"]
codec = ["none", "zstd:3"]
corpus = ["json"]
batch_size = 65536
linger_ms = 5
rate = "auto"

[[sweep]]
name = "batch"
experiments = ["E"]
codec = ["lz4", "zstd:3"]
corpus = ["json"]
batch_size = [16384, 65536]
linger_ms = 5
rate = "auto"

[[sweep]]
name = "recompress"
experiments = ["F"]
codec = ["zstd:3"]
corpus = ["json"]
batch_size = 65536
linger_ms = 5
rate = "auto"
topic_compression = ["producer", "lz4"]
"""


def _run(
    root: Path,
    name: str,
    sweeps: str,
    cpus: str | None = None,
    transport: str | None = None,
    duration: float = 0.3,
    top: str = "",
    ok: tuple[int, ...] = (0,),
    skip: float = 0,
) -> Path:
    plan = root / f"{name}.toml"
    plan.write_text(plan_text(name, sweeps, duration, transport, top, skip))
    out = root / name
    # Steal injected at 0 %: the rows' statuses must not depend on this host's hypervisor
    # (the steal rule itself is tested with injected figures in test_engine_runner/rules).
    # ok: the exit statuses the caller expects (EXIT_SHORT: a cell ends short of OK repetitions)
    p = kbench("run", str(plan), "-o", str(out), "--gate-sample-s", "0.1", cpus=cpus, timeout=900, steal="0", ok=ok)
    assert (p.returncode == EXIT_SHORT) <= ("cells short of OK repetitions" in p.stdout), p.stdout[-3000:]
    return out


#: Real-Kafka runs for the report tests: A latencies and a p99 verdict (none vs zstd:3 at a
#: rate this machine holds), and a cell whose target no single producer on it can reach
#: (2,000,000 msgs/s for 0.5 s, about 5x what it can even enqueue: REJECTED, with the
#: achieved rate in its reason).
KAFKA = """
[[sweep]]
name = "fixed"
experiments = ["A", "C", "D"]
codec = ["none", "zstd:3"]
corpus = ["json"]
batch_size = 65536
linger_ms = 5
rate = 2000

[[sweep]]
name = "impossible"
experiments = ["A"]
codec = ["none"]
corpus = ["json"]
batch_size = 65536
linger_ms = 5
rate = 2000000
"""

#: The impossible cell's target, msgs/s.
IMPOSSIBLE_RATE = 2000000


def kafka_runs(root: Path) -> Path:
    """One short run of :data:`KAFKA` on a local Kafka cluster (3 repetitions of 1.5 s per cell).

    Run the tests that use it under ``flock /tmp/kbench-kafka.lock`` (one cluster at a time)."""
    key = f"kafka:{root}"
    if key not in _CACHE:
        root.mkdir(parents=True, exist_ok=True)
        # no retries: the report tests count exactly 3 REJECTED rows of the impossible cell
        # 1.5 s windows opening 0.5 s in: the consumer that has just joined catches up on the first
        # records before the window (a 0.5 s window from 0 s read one repetition's e2e p50 21 ms
        # above its corrected p50: SATURATED, and no retry to replace it); 1.5 s rather than 1 s:
        # a scheduler stall of 30 ms (three brokers on 2 CPUs) put a 1 s window's send delay p99
        # over A's 20 ms bound in CI; the tests accept a SATURATED repetition and check its wording
        _CACHE[key] = _run(
            root,
            "kafka-report",
            KAFKA,
            transport="local",
            duration=1.5,
            top="retries = 0\n",
            ok=(EXIT_SHORT,),
            skip=0.5,
        )  # the impossible cell is REJECTED: the run ends short
    return _CACHE[key]  # type: ignore[return-value]


def zstd_vs_none_run(root: Path, transport: str | None = None) -> Path:
    """One run of the zstd-vs-none plan's matrix (A–D); ``transport="local"``: real Kafka."""
    key = f"zvn:{root}:{transport}"
    if key not in _CACHE:
        root.mkdir(parents=True, exist_ok=True)
        duration = 1.5 if transport == "local" else 0.3
        # on real Kafka a loaded host may leave a cell short (A SATURATED, a rate missed): exit 4
        ok = (0, EXIT_SHORT) if transport == "local" else (0,)
        _CACHE[key] = _run(root, "zstd-vs-none", ZSTD_VS_NONE, transport=transport, duration=duration, ok=ok)
    return _CACHE[key]  # type: ignore[return-value]


def machine_labels(dirs: list[Path]) -> list[str]:
    """The machine each run directory is grouped under, from its own manifest."""
    from kbench.reporting.frames import machine_label

    return [machine_label(json.loads((d / "manifest.json").read_text())["machine"]) for d in dirs]


#: The CPU sets of the two "machines" (different core counts, both real affinities).
MACHINE_CPUS = ("0", "0,1")


def _parallel(cmds: list[tuple[list[str], str]]) -> None:
    """Run ``kbench`` commands at once, each pinned to its CPUs; fail on any error.  Steal is
    injected at 0 %: two runs sharing 2 CPUs make this VM's real steal mark repetitions INVALID
    (the steal rule itself is tested with injected figures in test_engine_runner/rules)."""
    procs = []
    for args, cpus in cmds:
        cmd = [sys.executable, "-m", "kbench", *args]
        if shutil.which("taskset"):
            cmd = ["taskset", "-c", cpus, *cmd]
        procs.append(
            (
                cmd,
                subprocess.Popen(
                    cmd, cwd=ROOT, env=_env("0"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
                ),
            )
        )
    for cmd, p in procs:
        out, err = p.communicate(timeout=600)
        if p.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} exited {p.returncode}:\n{out[-3000:]}\n{err[-3000:]}")


def two_machines(root: Path) -> list[Path]:
    """Two runs pinned to CPU sets of different sizes (:data:`MACHINE_CPUS`, at the same time),
    each with an M.csv from ``kbench codecs bench`` pinned the same way."""
    key = f"two:{root}"
    if key not in _CACHE:
        root.mkdir(parents=True, exist_ok=True)
        assert shutil.which("taskset"), "the two-machine runs need taskset (util-linux)"
        assert len(os.sched_getaffinity(0)) >= 2, "the two-machine runs need 2 CPUs (taskset -c 0 and -c 0,1)"
        cpus = list(MACHINE_CPUS)
        dirs = [root / f"machine-{i}" for i in (0, 1)]
        runs = []
        for i, (d, c) in enumerate(zip(dirs, cpus)):
            plan = root / f"machine-{i}.toml"
            plan.write_text(plan_text(f"machine-{i}", MACHINE))
            runs.append((["run", str(plan), "-o", str(d), "--gate-sample-s", "0.1", "--force"], c))
        _parallel(runs)
        _parallel(
            [
                (
                    [
                        "codecs",
                        "bench",
                        "--corpus",
                        "json",
                        "--corpus-size",
                        "262144",
                        "--codecs",
                        "lz4,zstd:1,zstd:3",
                        "--block-sizes",
                        "16KiB,64KiB",
                        "--min-time",
                        "0.01",
                        "--repeats",
                        "3",
                        "-o",
                        str(d),  # -o is a directory: the run directory gains M.csv
                    ],
                    c,
                )
                for d, c in zip(dirs, cpus)
            ]
        )
        _CACHE[key] = dirs
    return _CACHE[key]  # type: ignore[return-value]
