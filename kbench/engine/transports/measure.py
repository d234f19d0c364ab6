"""The measurement core of the Kafka transport: one repetition's drivers run by a pool, the
brokers' CPU and the system's steal sampled over the pool's window, and the RunResult assembled
once (:func:`assemble`) whichever pool ran the drivers.

A pool (:class:`DriverPool`) runs a repetition's producer and consumer drivers and says what they
measured (:class:`PoolResult`); it opens and closes the broker window (:class:`Window`) at the
instants its own method defines: the local pool (:mod:`.local_pool`) from ``steady_skip_s`` after
the producer starts to the end of the run, the Dask pool (:mod:`.distributed`) over the whole cell.
This is the shape of OpenMessaging Benchmark's one ``Worker`` interface with a local and a
distributed implementation; the testbed's pool is a third.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kbench.engine import series
from kbench.engine.transports import remote
from kbench.engine.transports.base import BatchFill, BrokerInfo, CpuSample, LatencySummary, RunRequest, RunResult
from kbench.engine.transports.persecond import PerSecond, SecondSample
from kbench.kafka import procstat

__all__ = [
    "DriverPool",
    "JobInputs",
    "Jobs",
    "PoolResult",
    "StoredInfo",
    "Window",
    "assemble",
    "broker_proc_cpu",
    "delivered",
    "driver_fill",
    "latency_summary",
    "producer_job",
]


def latency_summary(d: Mapping[str, Any] | None) -> LatencySummary | None:
    """A driver's histogram summary (docs/drivers.md) as a LatencySummary (None when empty)."""
    if not d or not d.get("count"):
        return None
    return LatencySummary(
        int(d["count"]), d["p50_us"], d["p95_us"], d["p99_us"], d["p999_us"], d["max_us"], int(d.get("out_of_range", 0))
    )


def driver_fill(f: Mapping[str, Any] | None) -> BatchFill | None:
    """Records and bytes per batch as a client saw them (its driver's client_stats.batch_fill)."""
    if not f:
        return None
    return BatchFill(
        int(f["batches"]),
        float(f["records_p50"]),
        float(f["records_p90"]),
        float(f["records_max"]),
        float(f["bytes_p50"]),
        float(f["bytes_p90"]),
        float(f["bytes_max"]),
        str(f.get("source", "client statistics")),
    )


def delivered(pres: Mapping[str, Any]) -> tuple[int, int, int]:
    """From a producer RESULT: delivered messages, their payload bytes, and delivery errors (failed
    or reported, plus messages never reported)."""
    n, sent = int(pres["delivered"]), int(pres["sent"])
    payload = int(pres["bytes"]) if n == sent else int(pres["bytes"] * n / max(1, sent))
    reported = sum(int(v) for v in pres.get("delivery_errors", {}).values())
    return n, payload, max(int(pres["failed"]), reported) + int(pres["undelivered"])


def broker_proc_cpu(
    b: BrokerInfo, deltas: Mapping[int, procstat.CpuDelta], elapsed_s: float, payload: int | None, no_pid: str
) -> CpuSample:
    """A broker's CPU over a window from its /proc counters; ``no_pid``: the note when it has no local pid."""
    d = deltas.get(b.pid) if b.pid else None
    note = "" if b.pid else no_pid
    if b.pid and (d is None or d.status == procstat.NA):
        note = f"pid {b.pid} unreadable or gone"
    return CpuSample(
        f"broker-{b.broker_id}",
        d.user_s if d is not None else None,
        d.sys_s if d is not None else None,
        elapsed_s,
        regressed=d is not None and d.status == procstat.NEGATIVE,
        pid=b.pid,
        note=note,
        source=f"/proc/{b.pid}/stat" if b.pid else "",
        window_payload_bytes=payload,
    )


@dataclass
class Window:
    """The broker window of one repetition: the brokers' /proc counters, the system's steal
    counters (the request's steal source: /proc/stat unless a test injects one) and the brokers'
    metrics, read at :meth:`open` and :meth:`close`."""

    snapshot: Callable[[], procstat.Snapshot]
    steal_source: procstat.StealSource
    probe: remote.MetricsProbe | None = None
    s0: procstat.Snapshot | None = None
    s1: procstat.Snapshot | None = None
    sys0: procstat.SystemCpu | None = None
    sys1: procstat.SystemCpu | None = None
    t0: float = 0.0
    t1: float = 0.0
    t0_ns: int = 0
    m0: Mapping[int, Any] = field(default_factory=dict)
    m1: Mapping[int, Any] = field(default_factory=dict)
    #: Each host's NIC (tx, rx) byte counters, by role (testbed); None where no NIC is measured.
    #: Read at :meth:`nic_start` and :meth:`nic_end`, around the whole repetition.
    nic: Callable[[], Mapping[str, tuple[int, int]]] | None = None
    n0: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    n1: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    #: Local pids by role (the brokers'), sampled each second for the time series with the drivers'.
    roles: Mapping[str, int] = field(default_factory=dict)
    #: Each broker's own metrics scrape (BrokerMetrics or MetricsError), by role, read together
    #: with the NIC counters (testbed): Kafka's byte counters over the same span as the NIC bytes.
    kafka: Callable[[], Mapping[str, Any]] | None = None
    k0: Mapping[str, Any] = field(default_factory=dict)
    k1: Mapping[str, Any] = field(default_factory=dict)

    def per_second(self) -> PerSecond:
        """A started per-second sampler of these roles' CPU and the NICs (a pool adds its drivers' pids)."""
        return PerSecond(dict(self.roles), self.nic).start()

    def open(self) -> None:
        self.s0, self.sys0, self.t0, self.t0_ns = (
            self.snapshot(),
            self.steal_source(),
            time.monotonic(),
            time.monotonic_ns(),
        )
        self.m0 = self.probe.edge() if self.probe else {}

    def close(self) -> None:
        self.s1, self.sys1, self.t1 = self.snapshot(), self.steal_source(), time.monotonic()
        self.m1 = self.probe.edge() if self.probe else {}

    def nic_start(self) -> None:
        """NIC counters before the repetition's drivers start (a pool calls it first)."""
        self.k0 = self.kafka() if self.kafka else {}
        self.n0 = self.nic() if self.nic else {}

    def nic_end(self) -> None:
        """NIC counters once every driver has finished."""
        self.n1 = self.nic() if self.nic else {}
        self.k1 = self.kafka() if self.kafka else {}

    def kafka_bytes(self) -> dict[str, dict[str, Any]]:
        """Each broker's Kafka byte counters over the NIC bytes' span (remote.kafka_bytes)."""
        return {r: remote.kafka_bytes(a, self.k1.get(r)) for r, a in self.k0.items()}

    def nic_bytes(self) -> dict[str, tuple[int, int]]:
        """Each role's NIC (tx, rx) bytes over the whole repetition: a message's bytes cross the
        NICs when it is sent, replicated and fetched, instants no CPU window's edges can split."""
        return {r: (self.n1[r][0] - a[0], self.n1[r][1] - a[1]) for r, a in self.n0.items() if r in self.n1}

    @property
    def steal_pct(self) -> float | None:
        return procstat.steal_pct(self.sys0, self.sys1)

    def broker_cpu(self, brokers: Sequence[BrokerInfo], payload: int | None) -> list[CpuSample]:
        """Every broker's CPU over the window: from its metrics when it has no local pid and the
        probe reads it, else from /proc/<pid>/stat."""
        assert self.s0 is not None and self.s1 is not None
        deltas = {d.pid: d for d in procstat.delta(self.s0, self.s1)}
        out = []
        for b in brokers:
            if not b.pid and b.broker_id in self.m0:
                sample = remote.cpu_from_metrics(
                    f"broker-{b.broker_id}", self.m0[b.broker_id], self.m1.get(b.broker_id)
                )
                out.append(dataclasses.replace(sample, window_payload_bytes=payload))
                continue
            out.append(broker_proc_cpu(b, deltas, self.t1 - self.t0, payload, NO_PID))
        return out


#: A broker's CPU note when it has no local pid.
NO_PID = "no local pid (give --broker-metrics or --broker-pid)"


@dataclass(frozen=True)
class Jobs:
    """The driver jobs of one repetition (docs/drivers.md), before a pool adds its own fields.
    The rate is not among them: the request carries it, and the pool puts it in each producer's
    job (:func:`producer_job`)."""

    producer: Mapping[str, Any]
    consumer: Mapping[str, Any] | None  # None: saturated (no consumer)
    count: int  # messages to send at a fixed rate (0: saturated, for the duration)
    consumers: int = 1  # consumer drivers (more than one: a consumer group, or Dask fan-out)
    #: An experiment's own way to run these jobs on the local pool (G: produce the backlog, then
    #: drain it; kbench/experiments/g_drain.py): (the pool, the request, the jobs, the window) ->
    #: what the drivers measured.  None: the producer and consumers run together.
    schedule: Callable[[Any, RunRequest, Jobs, Window], PoolResult] | None = None


@dataclass(frozen=True)
class JobInputs:
    """What a transport gives an experiment that writes its own jobs (Experiment.jobs): the
    producer's client properties for the cell, the bootstrap servers and the header sampling."""

    producer_props: Mapping[str, str]
    bootstrap: str
    header_sample: int


def producer_job(jobs: Jobs, rate: float | None, **fields: Any) -> dict[str, Any]:
    """A producer driver's job: the repetition's, at ``rate`` msgs/s (the request's, or on Dask
    one producer's share of it; None: saturated, 0 on the wire) with the pool's own ``fields``."""
    return {**jobs.producer, "rate": rate or 0.0, **fields}


@dataclass(frozen=True)
class PoolResult:
    """What a pool's drivers measured in one repetition."""

    producer: Mapping[str, Any]  # the (merged) producer RESULT, schedule fields filled
    consumer: Mapping[str, Any] | None  # the (merged) consumer RESULT
    client_cpu: tuple[CpuSample, ...]  # producer and consumer roles, each with its window's payload
    broker_window_bytes: int | None  # the payload of the broker window (stored in it: sends shifted by the ack lag)
    wire_bytes: int | None = None  # producer out (client statistics)
    client_fill: BatchFill | None = None
    phases: Mapping[str, float | None] = field(default_factory=dict)
    driver_steal_pct: float | None = None  # the highest steal a driver's host measured (remote hosts)
    e2e_na: str = ""  # why end-to-end latency cannot stand ('' when it can)
    coordinator: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    samples: tuple[SecondSample, ...] = ()  # the per-second sampler's (empty: none ran)
    drain: Mapping[str, Any] = field(
        default_factory=dict
    )  # a consumer group's drain, from an own schedule (RunResult.drain)


class DriverPool(Protocol):
    """Runs one repetition's drivers; opens and closes the broker window at its method's instants."""

    def run(self, req: RunRequest, jobs: Jobs, window: Window) -> PoolResult: ...


@dataclass(frozen=True)
class StoredInfo:
    """What the brokers stored for the run's topic."""

    stored_bytes: int | None = None
    batches: int | None = None
    uncompressed_bytes: int | None = None
    codecs: tuple[str, ...] = ()
    fill: BatchFill | None = None
    source: str | None = None


def assemble(
    req: RunRequest,
    readback: str | None,
    pool: PoolResult,
    window: Window,
    brokers: Sequence[BrokerInfo],
    stored: StoredInfo,
    steal_injected: bool,
) -> RunResult:
    """The one RunResult of a repetition, from whichever pool ran it."""
    pres, cres = pool.producer, pool.consumer
    fixed = req.rate is not None
    n_delivered, payload, n_errors = delivered(pres)
    cpu = [*pool.client_cpu, *window.broker_cpu(brokers, pool.broker_window_bytes)]
    # The request's steal source is the run's steal; the drivers' own hosts count too unless a
    # test injected the steal (then its figure is the run's, on every path).
    steals = [x for x in (window.steal_pct, None if steal_injected else pool.driver_steal_pct) if x is not None]
    e2e = None if (cres is None or pool.e2e_na) else cres.get("e2e")
    hists = {"service": pres.get("service"), "delay": pres.get("delay"), "corrected": pres.get("corrected"), "e2e": e2e}
    return RunResult(
        messages_sent=int(pres["sent"]),
        messages_acked=n_delivered,
        payload_bytes=payload,
        elapsed_s=float(pres["send_seconds"]),
        target_rate=req.rate,
        achieved_rate=float(pres["achieved_rate"]) if fixed else float(pres["delivered_rate"]),
        delivery_errors=n_errors,
        latency_service=latency_summary(pres.get("service")),
        latency_delay=latency_summary(pres.get("delay")),
        latency_corrected=latency_summary(pres.get("corrected")),
        latency_e2e=latency_summary(e2e),
        latency_e2e_na=pool.e2e_na,
        consumed=int(cres["unique"]) if cres else None,
        lost=int(cres["lost"]) if cres else None,
        duplicated=int(cres["duplicates"]) if cres else None,
        cpu=tuple(cpu),
        steal_pct=max(steals) if steals else None,
        producer_wire_bytes=int(pool.wire_bytes) if pool.wire_bytes is not None else None,
        consumer_wire_bytes=None,
        stored_bytes=stored.stored_bytes,
        stored_batches=stored.batches,
        stored_uncompressed_bytes=stored.uncompressed_bytes,
        stored_codecs=stored.codecs,
        topic_compression_readback=readback,
        stored_source=stored.source,
        batch_fill=stored.fill,
        client_fill=pool.client_fill,
        latency_phases=dict(pool.phases),
        client=dict(pres.get("client") or {}),
        histograms={k: h["encoded"] for k, h in hists.items() if h and h.get("encoded")},
        notes=pool.notes,
        coordinator=dict(pool.coordinator),
        nic_bytes=window.nic_bytes(),
        nic_window_payload_bytes=payload if window.nic else None,
        series=tuple(series.assemble_rows(pres, cres, pool.samples, req.steady_skip_s)),
        hlog=series.hlog_of(pres, cres, f"[kbench: {req.topic}, {req.cell.cell_id}]"),
        kafka_bytes=window.kafka_bytes(),
        drain=dict(pool.drain),
    )
