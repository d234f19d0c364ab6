"""The narrow interface between the runner and whatever moves the records.

A :class:`Transport` is opened once per run (a local cluster is started, a bootstrap
cluster is reached, the simulator is prepared), reports what it runs on
(:class:`TransportInfo`), and runs one measurement at a time (:meth:`Transport.run`)
returning a :class:`RunResult`.  The runner owns the method (order, warm-ups,
repetitions, rules); transports own the measuring, which happens in C.

Implementations: ``kbench.engine.transports.kafka`` (local or bootstrap cluster),
``kbench.engine.transports.simulated`` (the brokerless simulated transport) and
``kbench.engine.transports.dry`` (a plumbing check: stored bytes computed by the C codecs,
timings synthetic and flagged as such).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kbench.engine.cell import Cell
from kbench.engine.live import LiveFigures
from kbench.kafka.procstat import StealSource
from kbench.model.corpus import Corpus

__all__ = [
    "BatchFill",
    "BrokerInfo",
    "CpuSample",
    "LatencySummary",
    "RunRequest",
    "RunResult",
    "Transport",
    "TransportError",
    "TransportInfo",
]


class TransportError(RuntimeError):
    """A transport could not start or run a cell; the message says why."""


@dataclass(frozen=True)
class BrokerInfo:
    broker_id: int
    version: str | None = None  # Kafka version the broker reports (None: unknown)
    pid: int | None = None  # local pid, when known (broker CPU is NA otherwise)
    log_dir: str | None = None
    default_compression: str | None = None  # the broker's compression.type
    metrics_url: str | None = None  # Prometheus endpoint (broker CPU, version, bytes), credentials removed
    version_source: str = ""  # where version came from: local cluster, metrics, --broker-version


@dataclass(frozen=True)
class TransportInfo:
    kind: str
    bootstrap: str | None = None
    brokers: tuple[BrokerInfo, ...] = ()
    kafka_version: str | None = None
    client: str = ""  # e.g. "librdkafka 2.0.2"
    extra: Mapping[str, str] = field(default_factory=dict)

    @property
    def log_dirs(self) -> list[str]:
        return [b.log_dir for b in self.brokers if b.log_dir]


@dataclass(frozen=True)
class RunRequest:
    """One measured (or warm-up) run of a cell."""

    cell: Cell
    topic: str
    corpus: Corpus
    rate: float | None  # msgs/s; None = saturated
    duration_s: float
    steady_skip_s: float
    replication_factor: int = 1
    min_insync_replicas: int | None = None
    client_properties: Mapping[str, str] = field(default_factory=dict)
    warmup: bool = False
    #: Where the run's steal counters come from (None: the live ``/proc/stat``); tests inject one.
    steal_source: StealSource | None = field(default=None, compare=False)
    #: Where the transport sends the live figures of the run while it runs (kbench.engine.live), if anywhere.
    live: Callable[[LiveFigures], None] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class LatencySummary:
    """Percentiles of one latency histogram, in microseconds."""

    count: int
    p50_us: float
    p95_us: float
    p99_us: float
    p999_us: float
    max_us: float
    out_of_range: int = 0


@dataclass(frozen=True)
class CpuSample:
    """CPU of one role over its steady window; ``None`` fields mean unreadable (NA).

    ``window_payload_bytes`` is the uncompressed payload of exactly that window (producer:
    delivered in it; consumer: fetched in it; broker: stored in it): what CPU-s/GB divides by.
    """

    role: str  # producer, consumer, broker-<id>
    usr_s: float | None
    sys_s: float | None
    wall_s: float
    regressed: bool = False  # a counter went backwards
    pid: int | None = None
    note: str = ""
    total_s: float | None = None  # usr+sys when the source cannot split them (thread CPU clocks)
    source: str = ""  # where the counters came from, e.g. "/proc/<pid>/stat", "metrics: process_cpu_seconds_total"
    #: a broker's own counters over the window (metrics endpoint): bytes_in, bytes_out, produce_conversions
    broker_counters: Mapping[str, float | None] = field(default_factory=dict)
    #: producer only: usr+sys of the load generator (every thread but the client library's) and of
    #: the client library's threads (librdkafka's rdk:*), over the same window; None = not split
    loadgen_s: float | None = None
    client_s: float | None = None
    window_payload_bytes: int | None = None  # payload of the role's CPU window (None: not measured)


@dataclass(frozen=True)
class BatchFill:
    """Distribution of records and bytes per stored batch."""

    batches: int
    records_p50: float
    records_p90: float
    records_max: float
    bytes_p50: float
    bytes_p90: float
    bytes_max: float
    source: str = ""  # "inspector", "librdkafka-stats", "sim"


@dataclass(frozen=True)
class RunResult:
    """What one run measured.  ``None`` means not measured by this transport."""

    messages_sent: int
    messages_acked: int
    payload_bytes: int  # uncompressed record values acknowledged
    elapsed_s: float  # producing window, first send to last ack
    target_rate: float | None
    achieved_rate: float  # acked msgs/s over elapsed_s
    delivery_errors: int = 0
    latency_service: LatencySummary | None = None
    latency_delay: LatencySummary | None = None
    latency_corrected: LatencySummary | None = None
    latency_e2e: LatencySummary | None = None
    consumed: int | None = None
    lost: int | None = None
    duplicated: int | None = None
    cpu: tuple[CpuSample, ...] = ()
    steal_pct: float | None = None
    producer_wire_bytes: int | None = None  # producer out (client statistics)
    consumer_wire_bytes: int | None = None  # consumer in (client statistics)
    stored_bytes: int | None = None  # bytes of the partitions' log segments
    stored_batches: int | None = None
    stored_uncompressed_bytes: int | None = None  # the stored batches' bytes once decompressed
    stored_codecs: tuple[str, ...] = ()  # codecs seen in stored batches
    topic_compression_readback: str | None = None  # topic compression.type read back
    stored_source: str | None = None  # where stored bytes/codecs came from (segment files, DescribeLogDirs + inference)
    batch_fill: BatchFill | None = None
    client_fill: BatchFill | None = None  # the producer's own view (librdkafka statistics, last interval)
    histograms: Mapping[str, str] = field(default_factory=dict)  # name -> base64 of Histogram.encode()
    #: Where producer latency goes (µs medians): queue (linger/batch-fill wait), compress, request
    #: (transmit queue + round trip); kbench.kafka.rdstats.  Empty when not measured.
    latency_phases: Mapping[str, float | None] = field(default_factory=dict)
    #: Why end-to-end latency is NA although a consumer ran (e.g. a worker's clock is not
    #: synchronised, docs/distributed.md); '' when it stands or was not measured.
    latency_e2e_na: str = ""
    #: Drivers on Dask workers: placement, hosts, start skew, collection time (docs/distributed.md).
    coordinator: Mapping[str, Any] = field(default_factory=dict)
    client: Mapping[str, Any] = field(default_factory=dict)  # the driver's client object (docs/drivers.md)
    #: Each role's NIC (tx, rx) bytes over the whole repetition (testbed hosts; empty: not
    #: measured), and the repetition's delivered payload (what NIC bytes per GB divide by).
    nic_bytes: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    nic_window_payload_bytes: int | None = None
    #: Each broker role's own byte counters over the same span as ``nic_bytes`` (BytesIn, BytesOut,
    #: ReplicationBytesIn, ReplicationBytesOut from its metrics endpoint, and their source).
    kafka_bytes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    synthetic: bool = False  # timings are not measurements (dry transport)
    #: The host-speed probe's drift from the run's calibration over this attempt (%, signed: the
    #: mean of the probes before and after it, the part further from the baseline,
    #: kbench.engine.host_speed), and which part; None: not probed.  Set by the runner, not the transport.
    host_drift_pct: float | None = None
    host_drift_part: str = ""
    notes: tuple[str, ...] = ()
    #: The repetition's time series (kbench.engine.series.assemble_rows: one row per second per
    #: role, without cell_id/rep/attempt/breaks) and its interval histograms as an HdrHistogram
    #: interval log ('' when no driver gave intervals).  Empty: not measured by this transport.
    series: tuple[Mapping[str, Any], ...] = ()
    hlog: str = ""
    #: A consumer group's drain of a stored backlog, filled by an experiment's own schedule that
    #: drains one (G's catch-up, kbench/experiments/g_drain.py): consumers, records, payload bytes,
    #: span_s (first fetched record to last record, any member; the judged window, engine/window),
    #: lost, duplicated, and per member its records, bytes and CPU (usr_s, sys_s, app_s: the loop
    #: thread, client_s: librdkafka's threads).  Empty otherwise.
    drain: Mapping[str, Any] = field(default_factory=dict)


class Transport(Protocol):
    """What the runner needs from a transport."""

    kind: str

    def open(self) -> TransportInfo:
        """Start or reach what the runs need; called once before any run."""
        ...

    def run(self, req: RunRequest) -> RunResult:
        """Run one cell: fresh topic, producer + consumer + sampler; return its measurements."""
        ...

    def close(self) -> None:
        """Stop what :meth:`open` started (only that)."""
        ...
