"""What runs on a Dask worker for ``kbench run --workers``: one driver (producer or consumer) of
one cell, as the same ``python -m kbench.kafka.worker`` job the local path runs, so its CPU is
its own process's; plus the host's facts and its wall clock for the coordinator.

Functions here are sent to workers by :mod:`kbench.engine.transports.distributed`; they import
``distributed`` lazily (only for the coordinator's abort/ready events).
"""

from __future__ import annotations

import os
import platform
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kbench.engine.machine import describe
from kbench.kafka import clients, procstat, rdstats
from kbench.kafka.driver_client import DriverClient

__all__ = ["clock_now", "host_facts", "run_driver", "start_driver"]

#: Seconds a driver process may take to start (imports, corpus) and a consumer to be assigned.
START_TIMEOUT = 60.0


def clock_now() -> float:
    """This worker's wall clock (seconds since the epoch), for the coordinator's offset probe."""
    return time.time()


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return "unknown"


def host_facts() -> dict[str, Any]:
    """Arch, CPU model, cores, kernel, clock source and boot id of this worker's host."""
    m = describe().as_dict()
    return {
        **{k: m[k] for k in ("arch", "cpu_model", "physical_cores", "logical_cores", "kernel", "hostname_hash")},
        "clocksource": _read("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        # Same boot id = same CLOCK_MONOTONIC: the kb header's send times are comparable.
        "boot_id": _read("/proc/sys/kernel/random/boot_id"),
        "python": platform.python_version(),
    }


def _corpus_path(sha: str, blob: bytes) -> Path:
    """The corpus as a length-prefixed file on this host, written once per corpus."""
    p = Path(tempfile.gettempdir()) / f"kbench-corpus-{sha[:16]}.bin"
    if not p.is_file() or p.stat().st_size != len(blob):
        tmp = p.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(blob)
        tmp.replace(p)
    return p


def start_driver(job: Mapping[str, Any], stderr_path: Path, abort: Callable[[], bool] | None) -> DriverClient:
    """The job's driver on this worker, through the one driver client."""
    return DriverClient.start(
        str(job["role"]),
        job,
        client=str(job.get("client", "librdkafka")),  # librdkafka or librdkafka@V
        name="driver",  # the coordinator names role, number and worker
        stderr_path=stderr_path,
        env=clients.driver_env(os.environ),  # without the Dask nanny's allocator settings
        abort=abort,
    )


def run_driver(
    job: Mapping[str, Any],
    corpus_sha: str | None,
    corpus_blob: bytes | None,
    abort_name: str,
    ready_name: str | None,
    timeout: float,
) -> dict[str, Any]:
    """Run one driver job on this worker and return its result with this host's facts.

    ``job`` is a :mod:`kbench.kafka.worker` job (role, props, topic, run_id, ...; a producer's
    ``start_at_unix`` is the common start instant).  A consumer sets the ``ready_name`` event
    once assigned.  Setting the ``abort_name`` event kills the driver.
    """
    from distributed import Event, get_worker

    abort = Event(abort_name)
    job = dict(job)
    stats = None
    if corpus_blob is not None and corpus_sha is not None:
        job["corpus_file"] = str(_corpus_path(corpus_sha, corpus_blob))
    if job["role"] == "producer":
        stats = Path(tempfile.gettempdir()) / f"kbench-{job['topic']}-{job.get('seq_base', 0)}.stats.jsonl"
        job["stats_path"] = str(stats)
    wall_minus_mono = time.time_ns() - time.monotonic_ns()
    s0 = procstat.snapshot([])
    err = tempfile.NamedTemporaryFile(prefix="kbench-driver-", suffix=".err", delete=False)
    err.close()
    d = start_driver(job, Path(err.name), abort.is_set)
    try:
        d.expect(
            "READY" if job["role"] == "consumer" else "STARTED",
            START_TIMEOUT + max(0.0, float(job.get("start_at_unix") or 0.0) - time.time()),
        )
        started = time.time()
        if ready_name:
            Event(ready_name).set()
        result = d.result(timeout)
    finally:
        d.kill()
        Path(err.name).unlink(missing_ok=True)
    s1 = procstat.snapshot([])
    out: dict[str, Any] = {
        "role": job["role"],
        "worker": get_worker().address,
        "host": host_facts(),
        "started_unix": started,
        "steal_pct": procstat.steal_pct(s0.system, s1.system),
        "result": result,
    }
    if "t0_ns" in result:  # the producer's first due time on this host's wall clock
        out["t0_unix"] = (int(result["t0_ns"]) + wall_minus_mono) / 1e9
    if stats is not None:
        out["stats"] = rdstats.last_stats(stats)
        stats.unlink(missing_ok=True)
    return out
