"""What runs on a Dask worker for ``kbench run --workers``: one driver (producer or consumer) of
one cell, as the same ``python -m kbench.kafka.worker`` job the local path runs, so its CPU is
its own process's; plus the host's facts and its wall clock for the coordinator.

Functions here are sent to workers by :mod:`kbench.engine.transports.distributed`; they import
``distributed`` lazily (only for the coordinator's abort/ready events).
"""

from __future__ import annotations

import json
import os
import platform
import select
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kbench.engine.machine import describe
from kbench.kafka import clients, procstat, rdstats

__all__ = ["clock_now", "host_facts", "run_driver"]

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


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """SIGTERM the driver when its Dask worker dies: a lost worker leaves no client behind."""
    import ctypes
    import signal

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class _Driver:
    """One ``kbench.kafka.worker`` process and its line protocol, abortable by an event."""

    def __init__(self, job: Mapping[str, Any], abort: Any) -> None:
        self.abort = abort
        self.err = tempfile.NamedTemporaryFile(prefix="kbench-driver-", suffix=".err", delete=False)
        self.proc = subprocess.Popen(
            clients.driver_command(str(job.get("client", "librdkafka"))),  # librdkafka or librdkafka@V
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.err,
            text=True,
            env=clients.driver_env(os.environ),  # without the Dask nanny's allocator settings
            preexec_fn=_die_with_parent,
        )
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(dict(job)) + "\n")  # secrets on a pipe, never argv
        self.proc.stdin.close()

    def line(self, timeout: float) -> str:
        out = self.proc.stdout
        assert out is not None
        deadline = time.monotonic() + timeout
        while True:
            ready, _, _ = select.select([out], [], [], 0.2)
            if ready:
                return out.readline()
            if self.abort is not None and self.abort.is_set():
                self.kill()
                raise RuntimeError("aborted by the coordinator")
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"driver did not answer within {timeout:.0f} s")

    def fail(self, line: str) -> RuntimeError:
        if line.startswith("ERROR "):
            try:
                return RuntimeError(str(json.loads(line[6:])))
            except ValueError:
                return RuntimeError(line[6:].strip())
        self.kill()
        tail = Path(self.err.name).read_text(errors="replace").strip().splitlines()[-1:]
        return RuntimeError(line.strip() or (tail[0] if tail else f"driver exited with status {self.proc.poll()}"))

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def close(self) -> None:
        self.kill()
        self.err.close()
        Path(self.err.name).unlink(missing_ok=True)


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
    d = _Driver(job, abort)
    try:
        word = "READY" if job["role"] == "consumer" else "STARTED"
        line = d.line(START_TIMEOUT + max(0.0, float(job.get("start_at_unix") or 0.0) - time.time()))
        if line.strip() != word:
            raise d.fail(line)
        started = time.time()
        if ready_name:
            Event(ready_name).set()
        line = d.line(timeout)
        if not line.startswith("RESULT "):
            raise d.fail(line)
        result = dict(json.loads(line[7:]))
        d.proc.wait(timeout=30)
    finally:
        d.close()
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
