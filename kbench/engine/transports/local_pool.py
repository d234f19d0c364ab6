"""The local driver pool: one process per role on this machine (:mod:`kbench.kafka.worker`, or
another client's driver, docs/drivers.md), so each role's CPU is its own.

Per repetition: the consumer is started and assigned first (fixed rate), then the producer; the
broker window opens ``steady_skip_s`` after the producer starts and closes when both have
reported.  Each role's CPU window's payload comes from the producer's schedule
(:mod:`kbench.engine.transports.window`); wire bytes, batch fill and latency phases from the
producer's librdkafka statistics file (another client: its driver's client_stats).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbench.engine.transports.base import CpuSample, RunRequest, TransportError
from kbench.engine.transports.measure import Jobs, PoolResult, Window, driver_fill
from kbench.engine.transports.persecond import PerSecond
from kbench.engine.transports.window import Schedule
from kbench.kafka import clients
from kbench.kafka import rdstats as stats_mod
from kbench.model.corpus import Corpus, write_lenprefixed

__all__ = ["JAVA_PARITY", "Launcher", "LocalPool", "WORKER_START_TIMEOUT", "schedule_fields", "spawn"]


#: Seconds a worker may take to start (imports, corpus) and a consumer to be assigned.
WORKER_START_TIMEOUT = 60.0


#: librdkafka properties set for producer and consumer where librdkafka's default differs from
#: the Java client's (docs/methodology.md); a plan's [client] table may override them.
JAVA_PARITY = {"socket.nagle.disable": "true"}  # the Java client sends with TCP_NODELAY


@dataclass
class _Worker:
    proc: subprocess.Popen[str]
    role: str
    stderr_path: Path

    def expect(self, word: str, timeout: float) -> None:
        line = self._line(timeout)
        if line.strip() != word:
            self.proc.kill()
            raise TransportError(f"{self.role} worker: {self._error(line)}")

    def _line(self, timeout: float) -> str:
        out = self.proc.stdout
        assert out is not None
        ready, _, _ = select.select([out], [], [], timeout)
        if not ready:
            self.proc.kill()
            raise TransportError(f"{self.role} worker did not answer within {timeout:.0f} s")
        return out.readline()

    def _error(self, line: str) -> str:
        if line.startswith("ERROR "):
            try:
                return str(json.loads(line[6:]))
            except ValueError:
                return line[6:].strip()
        if line.strip():
            return line.strip()
        try:
            self.proc.wait(timeout=10)
            tail = self.stderr_path.read_text(errors="replace").strip().splitlines()[-1:]
        except (OSError, subprocess.TimeoutExpired):
            tail = []
        return tail[0] if tail else f"exited with status {self.proc.poll()}"

    def result(self, timeout: float) -> dict[str, Any]:
        line = self._line(timeout)
        self.proc.wait(timeout=30)
        if not line.startswith("RESULT "):
            raise TransportError(f"{self.role} worker: {self._error(line)}")
        return dict(json.loads(line[7:]))


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """SIGTERM this worker when kbench dies (even by SIGKILL): no orphaned clients."""
    import ctypes
    import signal

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


#: Starts a driver process: (role, argv, Popen keyword arguments) -> the process.  The default runs
#: it on this machine; the testbed runs it on the role's emulated host.
Launcher = Callable[[str, Sequence[str], dict[str, Any]], "subprocess.Popen[str]"]


def _here(role: str, argv: Sequence[str], kwargs: dict[str, Any]) -> subprocess.Popen[str]:
    return subprocess.Popen(list(argv), **kwargs)


def spawn(
    role: str, job: Mapping[str, Any], stderr_path: Path, client: str = "librdkafka", launch: Launcher = _here
) -> _Worker:
    """Start the driver process of ``client`` for ``role`` and send it its job (docs/drivers.md)."""
    try:
        argv = clients.driver_command(client)
    except Exception as e:  # noqa: BLE001 - KafkaDistError: Maven/Java missing or the build failed
        raise TransportError(f"{client} driver: {e}") from None
    env = clients.driver_env(os.environ, str(Path(__file__).resolve().parents[3]))
    with stderr_path.open("w") as err:  # a file, not a pipe: a chatty client never blocks on it
        p = launch(
            role,
            argv,
            dict(
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                env=env,
                preexec_fn=_die_with_parent,
            ),
        )
    assert p.stdin is not None
    p.stdin.write(
        json.dumps(dict(job, role=role, protocol=clients.PROTOCOL)) + "\n"
    )  # secrets travel on a pipe, never argv
    p.stdin.close()
    return _Worker(p, role, stderr_path)


def schedule_fields(res: dict[str, Any]) -> dict[str, Any]:
    """A driver result with the librdkafka driver's schedule and CPU-split fields, filled from the
    protocol's ``windows`` and ``cpu.threads`` (docs/drivers.md) when the driver gave only those:
    ``t0_ns``/``first_send_ns`` = the send window's start, ``last_send_ns`` its end,
    ``cpu.window_start_ns`` = the CPU window's start, ``cpu.loadgen_s`` = the ``app`` thread group,
    ``cpu.client_s`` = the ``client`` group (the rest, JIT/GC/VM threads, is in the process total only)."""
    out = dict(res)
    win = res.get("windows") or {}
    send = win.get("send") or {}
    if "t0_ns" not in out and send:
        out["t0_ns"] = out["first_send_ns"] = int(send["start_mono_ns"])
        out["last_send_ns"] = int(send["end_mono_ns"])
    cpu = dict(res.get("cpu") or {})
    if "window_start_ns" not in cpu and win.get("cpu"):
        cpu["window_start_ns"] = int(win["cpu"]["start_mono_ns"])
    threads = cpu.get("threads") or {}
    for group, key in (("app", "loadgen_s"), ("client", "client_s")):
        t = threads.get(group)
        if key not in cpu and t and t.get("usr_s") is not None and t.get("sys_s") is not None:
            cpu[key] = float(t["usr_s"]) + float(t["sys_s"])
    out["cpu"] = cpu
    return out


def _phases(path: Path, req: RunRequest) -> dict[str, float | None]:
    """Queue wait, compression and request medians (µs) of one fixed-rate run: the first and last
    from librdkafka's statistics, compression timed here on a block of the median batch's size."""
    from kbench.model import microbench

    ph = stats_mod.latency_phases(path, req.topic)
    if ph is None:
        return {}
    compress = None
    if ph.batch_records_p50:
        per_record = req.corpus.size / max(1, len(req.corpus.records))
        compress = microbench.batch_compress_us(req.corpus, req.cell.spec, int(ph.batch_records_p50 * per_record))
    return {"queue_p50_us": ph.queue_p50_us, "compress_p50_us": compress, "request_p50_us": ph.request_p50_us}


@dataclass
class LocalPool:
    """Drivers as local processes; files (corpus, statistics, stderr) in a temporary directory."""

    tmp: Path
    header_sample: int
    launch: Launcher = _here
    _corpus_files: dict[str, Path] = field(default_factory=dict)

    def corpus_file(self, corpus: Corpus) -> Path:
        key = corpus.sha256
        if key not in self._corpus_files:
            self._corpus_files[key] = write_lenprefixed(corpus.records, self.tmp / f"corpus-{key[:16]}.bin")
        return self._corpus_files[key]

    def run(self, req: RunRequest, jobs: Jobs, window: Window) -> PoolResult:
        stats = self.tmp / f"{req.topic}.stats.jsonl"
        window.nic_start()
        sampler = window.per_second()
        try:
            return self._run(req, jobs, window, stats, sampler)
        finally:
            sampler.stop()

    def _run(self, req: RunRequest, jobs: Jobs, window: Window, stats: Path, sampler: PerSecond) -> PoolResult:
        fixed = req.rate is not None
        consumer = None
        if jobs.consumer is not None:
            cprops = {**(JAVA_PARITY if req.cell.client == "librdkafka" else {}), **jobs.consumer["props"]}
            consumer = spawn(
                "consumer",
                {**jobs.consumer, "props": cprops, "timeout": req.duration_s + 60.0},
                self.tmp / f"{req.topic}.consumer.err",
                req.cell.client,
                self.launch,
            )
            sampler.add("consumer", consumer.proc.pid)
            consumer.expect("READY", WORKER_START_TIMEOUT)
        producer = spawn(
            "producer",
            {**jobs.producer, "corpus_file": str(self.corpus_file(req.corpus)), "stats_path": str(stats)},
            self.tmp / f"{req.topic}.producer.err",
            req.cell.client,
            self.launch,
        )
        sampler.add("producer", producer.proc.pid)
        try:
            producer.expect("STARTED", WORKER_START_TIMEOUT)
            t_start = time.monotonic()
            # Steady window: from steady_skip_s after the producer starts.
            pause = t_start + req.steady_skip_s - time.monotonic()
            if pause > 0:
                time.sleep(pause)  # a measurement schedule, not synchronisation
            window.open()
            pres = schedule_fields(producer.result(req.duration_s + 120.0))
            cres = schedule_fields(consumer.result(req.duration_s + 120.0)) if consumer else None
            window.close()
            window.nic_end()
        except BaseException:
            for w in (producer, consumer):
                if w is not None and w.proc.poll() is None:
                    w.proc.kill()
            raise
        sched = Schedule.of(
            [len(r) for r in req.corpus.records],
            int(pres["sent"]),
            int(pres["delivered"]),
            int(pres["t0_ns"] if fixed else pres["first_send_ns"]),
            int(pres["last_send_ns"]),
            req.rate,
        )

        def lag_ns(h: Mapping[str, Any] | None) -> int:
            return int(float(h["p50_us"]) * 1000) if h and h.get("count") else 0

        lags = {"producer": 0, "consumer": lag_ns(cres.get("e2e") if cres else None)}
        cpu = []
        for role, res in (("producer", pres), ("consumer", cres)):
            if res is None:
                continue
            c = res["cpu"]
            start = c.get("window_start_ns")
            cpu.append(
                CpuSample(
                    role,
                    c["usr_s"],
                    c["sys_s"],
                    c["wall_s"],
                    regressed=(c["usr_s"] or 0) < 0 or (c["sys_s"] or 0) < 0,
                    pid=None,
                    note=c.get("note", ""),
                    loadgen_s=c.get("loadgen_s"),
                    client_s=c.get("client_s"),
                    window_payload_bytes=None if start is None else sched.window_payload(int(start), lags[role]),
                )
            )
        if req.cell.client == "librdkafka":  # its statistics file: wire bytes, batch fill, latency phases
            raw = stats_mod.last_stats(stats) or {}
            wire = raw.get("tx_bytes")
            client_fill = driver_fill(stats_mod.batch_fill(raw, req.topic))
            phases = _phases(stats, req) if fixed else {}
        else:  # the driver's client_stats (docs/drivers.md section 4.2)
            st = pres.get("client_stats") or {}
            wire = st.get("wire_bytes")
            client_fill = driver_fill(st.get("batch_fill"))
            phases = {}
        return PoolResult(
            producer=pres,
            consumer=cres,
            client_cpu=tuple(cpu),
            broker_window_bytes=sched.window_payload(window.t0_ns, lag_ns(pres.get("service"))),
            wire_bytes=int(wire) if wire is not None else None,
            client_fill=client_fill,
            phases=phases,
            samples=tuple(sampler.stop()),
        )
