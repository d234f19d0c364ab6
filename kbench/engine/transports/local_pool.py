"""The local driver pool: one process per role on this machine (:mod:`kbench.kafka.worker`, or
another client's driver, docs/drivers.md), so each role's CPU is its own.

Per repetition: the consumer is started and assigned first (fixed rate), then the producer; the
broker window opens ``steady_skip_s`` after the producer starts and closes when both have
reported.  Each role's CPU window's payload comes from the producer's schedule
(:mod:`kbench.engine.transports.window`); wire bytes, batch fill and latency phases from the
producer's librdkafka statistics file (another client: its driver's client_stats).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbench.engine.transports.base import CpuSample, RunRequest, TransportError
from kbench.engine.transports.live_feed import LiveFeed
from kbench.engine.transports.measure import Jobs, PoolResult, Window, driver_fill, producer_job
from kbench.engine.transports.persecond import PerSecond
from kbench.engine.transports.window import Schedule
from kbench.kafka import clients, merge
from kbench.kafka import rdstats as stats_mod
from kbench.kafka.driver_client import DriverClient, DriverError, Launcher, launch_here, results
from kbench.model.corpus import Corpus, write_lenprefixed

__all__ = [
    "JAVA_PARITY",
    "Launcher",
    "LocalPool",
    "WORKER_START_TIMEOUT",
    "kill_all",
    "schedule_fields",
    "spawn",
    "watched",
]


#: Seconds a worker may take to start (imports, corpus) and a consumer to be assigned.
WORKER_START_TIMEOUT = 60.0


#: librdkafka properties set for producer and consumer where librdkafka's default differs from
#: the Java client's (docs/methodology.md); a plan's [client] table may override them.
JAVA_PARITY = {"socket.nagle.disable": "true"}  # the Java client sends with TCP_NODELAY


def spawn(
    role: str,
    job: Mapping[str, Any],
    stderr_path: Path,
    client: str = "librdkafka",
    launch: Launcher = launch_here,
    label: str | None = None,
) -> DriverClient:
    """Start the driver process of ``client`` for ``role`` and send it its job (docs/drivers.md):
    the one driver client (kbench.kafka.driver_client), named "{label or role} worker" in errors."""
    env = clients.driver_env(os.environ, str(Path(__file__).resolve().parents[3]))
    w = DriverClient.start(role, job, client=client, stderr_path=stderr_path, env=env, launch=launch)
    w.role = label or role
    w.name = f"{w.role} worker"
    return w


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


def kill_all(workers: Sequence[DriverClient]) -> None:
    """Stop every driver of ``workers`` (a repetition that failed or was interrupted)."""
    for w in workers:
        w.kill()


def _sum_cpu(cpus: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Several consumers' CPU windows as one role's: seconds summed (NA if any is), the longest
    wall time, the earliest window start."""

    def total(key: str) -> float | None:
        vals = [c.get(key) for c in cpus]
        return None if any(v is None for v in vals) else sum(float(v) for v in vals if v is not None)

    starts = [int(c["window_start_ns"]) for c in cpus if c.get("window_start_ns") is not None]
    return {
        "usr_s": total("usr_s"),
        "sys_s": total("sys_s"),
        "wall_s": max(float(c.get("wall_s") or 0.0) for c in cpus),
        "window_start_ns": min(starts) if len(starts) == len(cpus) else None,
        "loadgen_s": total("loadgen_s"),
        "client_s": total("client_s"),
        "note": "; ".join(str(c["note"]) for c in cpus if c.get("note")),
    }


def _phases(path: Path, req: RunRequest) -> dict[str, float | None]:
    """Queue wait, compression and request medians (µs) of one fixed-rate run: the first and last
    from librdkafka's statistics, compression and (the consumer's) decompression timed here on a
    block of the median batch's size."""
    from kbench.model import microbench

    ph = stats_mod.latency_phases(path, req.topic)
    if ph is None:
        return {}
    compress = decompress = None
    if ph.batch_records_p50:
        per_record = req.corpus.size / max(1, len(req.corpus.records))
        block = int(ph.batch_records_p50 * per_record)
        compress = microbench.batch_compress_us(req.corpus, req.cell.spec, block)
        # the consumer's side of the same batch: librdkafka decompresses a fetched batch whole
        decompress = microbench.batch_decompress_us(req.corpus, req.cell.spec, block)
    return {
        "queue_p50_us": ph.queue_p50_us,
        "compress_p50_us": compress,
        "request_p50_us": ph.request_p50_us,
        "decompress_p50_us": decompress,
    }


@contextmanager
def watched(req: RunRequest, window: Window, stats: Path | None, stage: str = "") -> Iterator[PerSecond]:
    """A started per-second sampler of the roles' CPU (the caller adds its drivers' pids) and, when
    the run shows a live status (``req.live``), the feed that pushes the producer's statistics
    (``stats``: a librdkafka producer's file, None when the stage has no producer) and the roles'
    CPU each second, naming ``stage``; both stopped on exit."""
    sampler = window.per_second()
    feed = None
    try:
        if req.live is not None:
            feed = LiveFeed(req.live, stats if req.cell.client == "librdkafka" else None, sampler, stage).start()
        yield sampler
    finally:
        if feed is not None:
            feed.stop()
        sampler.stop()


@dataclass
class LocalPool:
    """Drivers as local processes; files (corpus, statistics, stderr) in a temporary directory."""

    tmp: Path
    header_sample: int
    launch: Launcher = launch_here
    #: the log dirs of the cluster kbench started for the run, on this machine (empty for a
    #: --bootstrap cluster): where an experiment's schedule may read a topic's segment files
    log_dirs: tuple[Path, ...] = ()
    _corpus_files: dict[str, Path] = field(default_factory=dict)

    def corpus_file(self, corpus: Corpus) -> Path:
        key = corpus.sha256
        if key not in self._corpus_files:
            self._corpus_files[key] = write_lenprefixed(corpus.records, self.tmp / f"corpus-{key[:16]}.bin")
        return self._corpus_files[key]

    def spawn_consumers(
        self, req: RunRequest, jobs: Jobs, timeout: float, sampler: PerSecond | None = None
    ) -> list[DriverClient]:
        """The repetition's consumers, each assigned (READY) before this returns.  Several are the
        members of one consumer group, named consumer-1, consumer-2, ... in errors and in the
        per-second sampler's roles; held members (the job's ``hold``) are released together once
        every one is READY, so that they join the group at one instant, not one start-up apart."""
        assert jobs.consumer is not None
        cprops = {**(JAVA_PARITY if clients.family(req.cell.client) == "librdkafka" else {}), **jobs.consumer["props"]}
        out: list[DriverClient] = []
        try:
            for i in range(jobs.consumers):
                w = spawn(
                    "consumer",
                    {**jobs.consumer, "props": cprops, "timeout": timeout},
                    self.tmp
                    / (f"{req.topic}.consumer-{i + 1}.err" if jobs.consumers > 1 else f"{req.topic}.consumer.err"),
                    req.cell.client,
                    self.launch,
                    label=f"consumer-{i + 1}" if jobs.consumers > 1 else None,
                )
                out.append(w)
                if sampler is not None:
                    sampler.add(w.role, w.proc.pid)
            for w in out:
                w.expect("READY", WORKER_START_TIMEOUT)
            for w in out:
                w.release()
        except BaseException:
            kill_all(out)
            raise
        return out

    def _consumer_results(
        self, consumers: Sequence[DriverClient], timeout: float, expected: int
    ) -> dict[str, Any] | None:
        """Every consumer's RESULT (one missing fails the repetition, naming the consumer), merged
        when there are several (merge.merge_consumers: a group's counts per partition)."""
        if not consumers:
            return None
        parts = [schedule_fields(r) for r in results(consumers, timeout)]
        if len(parts) == 1:
            return parts[0]
        out = {**parts[0], **merge.merge_consumers(parts, expected), "members": parts}
        out["cpu"] = _sum_cpu([p["cpu"] for p in parts])
        return out

    def spawn_producer(self, req: RunRequest, jobs: Jobs, stats: Path) -> DriverClient:
        """The repetition's producer, started (its corpus as a length-prefixed file, its statistics to ``stats``)."""
        return spawn(
            "producer",
            producer_job(jobs, req.rate, corpus_file=str(self.corpus_file(req.corpus)), stats_path=str(stats)),
            self.tmp / f"{req.topic}.producer.err",
            req.cell.client,
            self.launch,
        )

    def run(self, req: RunRequest, jobs: Jobs, window: Window) -> PoolResult:
        try:
            return self._run_jobs(req, jobs, window)
        except DriverError as e:  # a driver failed, timed out or could not start: the repetition fails
            raise TransportError(str(e)) from None

    def _run_jobs(self, req: RunRequest, jobs: Jobs, window: Window) -> PoolResult:
        if jobs.schedule is not None:  # an experiment's own schedule (G: produce, then drain)
            return jobs.schedule(self, req, jobs, window)
        stats = self.tmp / f"{req.topic}.stats.jsonl"
        window.nic_start()
        with watched(req, window, stats) as sampler:
            return self._run(req, jobs, window, stats, sampler)

    def _run(self, req: RunRequest, jobs: Jobs, window: Window, stats: Path, sampler: PerSecond) -> PoolResult:
        fixed = req.rate is not None
        consumers = self.spawn_consumers(req, jobs, req.duration_s + 60.0, sampler) if jobs.consumer is not None else []
        producer = self.spawn_producer(req, jobs, stats)
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
            cres = self._consumer_results(consumers, req.duration_s + 120.0, jobs.count)
            window.close()
            window.nic_end()
        except BaseException:
            kill_all([producer, *consumers])
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
        # librdkafka's statistics file: wire bytes, batch fill, latency phases
        if clients.family(req.cell.client) == "librdkafka":
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
