"""What a producer or consumer run is asked and what it returns: :class:`ProducerSpec` (checked
before any connection), :class:`ProducerResult`, :class:`ConsumerResult` and their defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbench._native import Histogram

__all__ = [
    "ConsumerResult",
    "DEFAULT_HEADER_SAMPLE",
    "DEFAULT_TICK_S",
    "KEY_POLICIES",
    "MODES",
    "ProducerResult",
    "ProducerSpec",
    "RunPair",
    "SERIES_INTERVAL_S",
]


MODES = ("fixed-rate", "saturated")


#: One record in this many carries the ``kb`` latency header: at 1000 the header adds under 0.1 %
#: to the stored bytes even of 130-byte log lines compressed 7x (benchmarks/stored_bytes_vs_kcat.py).
DEFAULT_HEADER_SAMPLE = 1000


#: Minimum time between two wakes of the fixed-rate loop (benchmarks/pacing_cpu.py).  A wake
#: costs ~40–50 µs of CPU on the 2-vCPU VM whatever the loop does in it, so at 500 µs the wakes
#: alone held the loop near 10 % of a core from 2,000 msg/s up; at 2 ms, 500 wakes/s at most.
DEFAULT_TICK_S = 2e-3


#: The time series' interval (docs/drivers.md section 4.4): the runner sends it as ``interval_s``.
SERIES_INTERVAL_S = 1.0


KEY_POLICIES = ("none", "round-robin", "random")


@dataclass(frozen=True)
class ProducerSpec:
    """What to produce and how.  ``props`` are librdkafka properties, passed verbatim."""

    topic: str
    props: Mapping[str, str]
    mode: str = "fixed-rate"
    rate: float = 0.0  # messages/s, fixed-rate only
    count: int = 0  # messages (0 = until duration)
    duration: float = 0.0  # seconds (0 = until count)
    keys: str = "none"
    nkeys: int = 0
    partition: int = -1
    stats_path: Path | None = None
    flush_timeout: float = 30.0
    connect_timeout: float = 10.0
    #: False: no ``kb`` header at all (header_sample is then ignored): the bytes equal a
    #: header-less peer's; no end-to-end latency downstream, loss is then checked by count only.
    headers: bool = True
    #: First sequence number in the ``kb`` header: several producers of one run send disjoint
    #: ranges so one consumer's bitmap counts lost/duplicated records across all of them.
    seq_base: int = 0
    #: One message in this many carries the ``kb`` header (1 = every message).
    header_sample: int = DEFAULT_HEADER_SAMPLE
    #: Fixed rate: minimum seconds between two wakes of the loop.
    tick: float = DEFAULT_TICK_S
    #: >= 0: read CPU per thread from this many seconds after the first due time to the end of
    #: the flush (ProducerResult.cpu); < 0: do not.
    cpu_skip: float = -1.0
    #: > 0: record the time series in intervals this long (ProducerResult.intervals); 0: do not.
    interval: float = 0.0
    #: The latency window: service, delay and corrected record only messages due (fixed rate) or
    #: sent (saturated) this many seconds or more after the first due time; 0: every message.
    latency_skip: float = 0.0

    @property
    def effective_header_sample(self) -> int:
        """What the loop uses: 0 (no header) when headers is False."""
        return self.header_sample if self.headers else 0

    def __post_init__(self) -> None:
        if self.header_sample < 1:
            raise ValueError(
                f"header_sample must be >= 1 (one record in N carries the kb header), got {self.header_sample}"
            )
        if not 0 <= self.tick <= 1:
            raise ValueError(f"tick must be within 0..1 s, got {self.tick}")
        if self.mode not in MODES:
            raise ValueError(f"unknown producer mode '{self.mode}'; use one of {', '.join(MODES)}")
        if self.mode == "fixed-rate" and self.rate <= 0:
            raise ValueError("fixed-rate mode needs --rate > 0 (messages per second)")
        if self.count <= 0 and self.duration <= 0:
            raise ValueError("give a message count > 0 or a duration > 0")
        if self.keys not in KEY_POLICIES:
            raise ValueError(f"unknown key policy '{self.keys}'; use one of {', '.join(KEY_POLICIES)}")
        if self.keys != "none" and self.nkeys < 1:
            raise ValueError(f"key policy '{self.keys}' needs nkeys >= 1")


@dataclass
class ProducerResult:
    """Counters and histograms of one producer run (latencies in ns)."""

    mode: str
    sent: int
    delivered: int
    failed: int
    undelivered: int
    bytes: int
    queue_full: int
    stats_count: int
    t0_ns: int
    first_send_ns: int
    last_send_ns: int
    last_due_ns: int
    end_ns: int
    stopped: bool
    delivery_errors: dict[str, int]
    client_errors: dict[str, int]
    service: Histogram
    delay: Histogram | None
    corrected: Histogram | None
    rate: float = 0.0  # target (fixed-rate)
    dr_failed: int = 0
    header_sample: int = 0  # one message in this many carried the kb header (0 = none)
    sampled: int = 0  # messages sent with the kb header
    wakes: int = 0  # fixed rate: times the loop woke up
    tick_ns: int = 0
    #: per-thread CPU over the window (ProducerSpec.cpu_skip), seconds: usr_s/sys_s/wall_s of the
    #: process, client_usr_s/client_sys_s (librdkafka's threads), loadgen_usr_s/loadgen_sys_s (every
    #: other thread), loop_usr_s/loop_sys_s (the loop thread alone), client_threads; None = not taken
    cpu: dict[str, float] | None = None
    #: the time series (ProducerSpec.interval > 0): per interval start_ns, end_ns (CLOCK_MONOTONIC),
    #: sent, acked, failed, bytes and ``hist`` (corrected latency in fixed-rate, else service); None = off
    intervals: list[dict[str, Any]] | None = None

    def counts(self) -> dict[str, Any]:
        """The run's counters and rates, as the CLI and the worker report them."""
        return {
            "sent": self.sent,
            "delivered": self.delivered,
            "failed": self.failed,
            "undelivered": self.undelivered,
            "bytes": self.bytes,
            "achieved_rate": self.achieved_rate,
            "delivered_rate": self.delivered_rate,
        }

    @property
    def send_seconds(self) -> float:
        """From the first due time (fixed-rate) or first send (saturated) to the last send."""
        start = self.t0_ns if self.mode == "fixed-rate" else self.first_send_ns
        return max(0.0, (self.last_send_ns - start) / 1e9)

    @property
    def achieved_rate(self) -> float:
        """Messages/s actually sent.  Fixed-rate: (sent - 1) / (last send - first due)."""
        if self.sent < 2:
            return 0.0
        return (self.sent - 1) / self.send_seconds if self.send_seconds > 0 else 0.0

    @property
    def delivered_rate(self) -> float:
        """Delivered messages per second of the whole run (first send to end of flush)."""
        span = (self.end_ns - self.first_send_ns) / 1e9
        return self.delivered / span if span > 0 else 0.0

    @property
    def rate_deviation(self) -> float | None:
        """(achieved - target) / target for fixed-rate runs."""
        if self.mode != "fixed-rate" or self.rate <= 0:
            return None
        return (self.achieved_rate - self.rate) / self.rate

    @property
    def latency_comparable(self) -> bool:
        """Saturated-mode latencies are queueing, not service: never compare them."""
        return self.mode == "fixed-rate"


@dataclass
class ConsumerResult:
    """What the consumer saw (latencies in ns)."""

    records: int
    bytes: int
    unique: int
    duplicates: int
    out_of_range: int
    foreign: int
    no_header: int
    start_ns: int
    first_ns: int
    last_ns: int
    end_ns: int
    partitions: int
    timed_out: bool
    stopped: bool
    errors: dict[str, int]
    e2e: Histogram
    expected: int = 0
    sampled: int = 0  # records with the kb header (the e2e sample)
    samples_expected: int = 0
    samples_missing: int = 0
    sample_duplicates: int = 0
    stored_records: int = -1  # records stored since the start offsets, read at the end (-1: not read)
    #: the time series (``interval`` > 0): per interval start_ns, end_ns, sent (= records), bytes and
    #: ``hist`` (e2e of the sampled records); None = off
    intervals: list[dict[str, Any]] | None = None
    #: Group mode: per partition of the topic, what this member read (partition, start, end,
    #: records, bytes, runs: sorted disjoint [lo, hi) offsets); None when not in a group.
    parts: list[dict[str, Any]] | None = None
    rebalances: int = 0  # group mode: assignments received
    commit_errors: int = 0  # group mode: offset commits that failed
    loop_cpu_ns: int = 0  # CPU of the loop thread over the loop (usr+sys): the rest of the process is the client's
    #: when partitions were first assigned (group mode: the join's end; assign mode: start_ns); 0 = never
    assigned_ns: int = 0
    stats_count: int = 0  # librdkafka statistics emitted (statistics.interval.ms > 0)
    stats: str | None = None  # the last of them (JSON), None = none
    #: ``cpu_window``: the steady window (the end of the first batch that read records .. the end of
    #: the last): its records, wall ns, process CPU ns and loop-thread CPU ns (0 = no window)
    win_records: int = 0
    win_ns: int = 0
    win_proc_cpu_ns: int = 0
    win_loop_cpu_ns: int = 0

    @property
    def lost(self) -> int:
        """Records the consumer did not see: by count, or the missing samples when more.  In a
        group a member reads a share: its loss is known only with every member's parts
        (:func:`kbench.kafka.merge.group_counts`), so a member alone reports the count rule only."""
        if not self.expected:
            return 0
        return max(0, self.expected - self.unique, self.samples_missing)


@dataclass
class RunPair:
    producer: ProducerResult
    consumer: ConsumerResult | None = None
    extra: dict[str, Any] = field(default_factory=dict)
