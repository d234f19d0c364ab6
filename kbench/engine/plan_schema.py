"""A plan's shape: the keys each table may hold (with their one-line help), the transports, and
the parsed plan's dataclasses (:class:`Plan`, :class:`Sweep`, :class:`TransportDef`,
:class:`CorpusDef`) and :class:`PlanError`."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kbench.engine import control, premises
from kbench.engine.series import DEFAULT_DRIFT_P99_PCT, DEFAULT_DRIFT_RATE_PCT
from kbench.experiments.spec import DEFAULT_SATURATION_BOUND_MS
from kbench.kafka.drivers import DEFAULT_HEADER_SAMPLE
from kbench.kafka.procstat import STEAL_LIMIT_PCT
from kbench.model import codecs
from kbench.model.codecs import CodecSpec
from kbench.model.corpus import DEFAULT_SIZE as DEFAULT_CORPUS_SIZE

__all__ = [
    "ACKS",
    "AUTO_PREFIX",
    "AUTO_RATE_BASES",
    "CORPUS_KEYS",
    "CorpusDef",
    "GROUP_CLIENTS",
    "MAX_DRIFT_PCT",
    "MAX_SATURATION_BOUND_MS",
    "Plan",
    "PlanError",
    "SWEEP_KEYS",
    "Sweep",
    "TOPIC_COMPRESSION",
    "TOP_KEYS",
    "TRANSPORT_KEYS",
    "TRANSPORT_KINDS",
    "TransportDef",
]


TRANSPORT_KINDS = ("local", "bootstrap", "testbed", "sim", "dry")


#: ``rate = "auto:F"``: F × the minimum saturated rate of the run (a sweep of fractions finds the knee).
AUTO_PREFIX = "auto:"


#: The largest ``saturation_bound_ms`` a plan may set (the default is the experiments' own).
MAX_SATURATION_BOUND_MS = 60_000.0


#: The largest ``drift_rate_pct`` / ``drift_p99_pct`` a plan may set.
MAX_DRIFT_PCT = 1000.0


ACKS = ("0", "1", "all", "-1")


TOPIC_COMPRESSION = (*codecs.TOPIC_COMPRESSION, "none")


TOP_KEYS = {
    "name": "a short name for the plan",
    "description": "one line describing the plan",
    "repetitions": "measured repetitions per cell (>= 1; the method asks for >= 3)",
    "warmup": "true to run one discarded warm-up per cell",
    "duration_s": "seconds of each measured repetition",
    "warmup_s": "seconds of the discarded warm-up run",
    "steady_skip_s": "seconds at the start of each repetition left out of the CPU window and of the latency histograms (the steady window; the series keeps every second)",
    "seed": "integer seed of the cell order (random when absent; always recorded)",
    "auto_rate_fraction": 'fraction of the minimum saturated rate used for rate = "auto"',
    "transport": "table: kind, brokers, bootstrap, replication_factor, min_insync_replicas, broker_pids, broker_metrics",
    "client": "table of librdkafka properties passed verbatim to producer and consumer",
    "corpora": "table of named corpora",
    "sweep": "array of [[sweep]] tables",
    "corpus_size": 'bytes of each built-in corpus (or a size string, "4MiB")',
    "max_steal_pct": "CPU steal % above which a repetition is INVALID (default 1, as seed 000)",
    "retries": "extra attempts per cell for INVALID, REJECTED, WARMING or ABOVE_KNEE repetitions (default: repetitions)",
    "saturation_bound_ms": "A: a repetition whose send delay p99, queue wait beyond linger.ms or consumer lag exceeds this is SATURATED (default 20)",
    "drift_rate_pct": "time series: a repetition whose per-second rate drifts by more than this % is flagged DRIFT (default 10)",
    "drift_p99_pct": "time series: a repetition whose per-second p99 drifts by more than this % is flagged DRIFT (default 50)",
    "auto_rate_basis": '"producer" (default: rate = "auto" from the saturated cells) or "pipeline" (from the knee probed with consumers running)',
    "knee_probe_s": 'seconds of each knee probe repetition (auto_rate_basis = "pipeline"; default 3)',
    "alpha": "verdicts: the false-verdict rate of the exact test, Holm-corrected per experiment and metric (default 0.05)",
    "min_effect": "verdicts: table of the smallest shift a verdict names (latency_ms, latency_pct, throughput_pct, cpu_pct, ratio_pct)",
    **premises.KEYS,
}


#: What ``rate = "auto"`` is a fraction of (docs/methodology.md): the producer-only saturated
#: cells, or the pipeline's knee probed as A runs it (kbench.engine.knee).
AUTO_RATE_BASES = ("producer", "pipeline")


TRANSPORT_KEYS = {
    "kind": "local, bootstrap, testbed, sim or dry",
    "brokers": "number of local brokers (1 or 3)",
    "broker_nic_mbit": "testbed: each broker host's NIC rate in Mbit/s, each direction (absent: unshaped)",
    "client_nic_mbit": "testbed: the producer's and the consumer's host NIC rate in Mbit/s (absent: unshaped)",
    "delay_ms": "testbed: one-way delay on every host's NIC (needs the kernel's netem qdisc)",
    "bootstrap": "host:port[,host:port] of an existing cluster",
    "replication_factor": "replication factor of each cell's topic",
    "min_insync_replicas": "min.insync.replicas of each cell's topic",
    "broker_pids": "local pids of the brokers of a bootstrap cluster (for broker CPU)",
    "workers": "Dask scheduler address (tcp://host:8786): run each cell's drivers on Dask workers",
    "producers": "producer drivers per cell on Dask workers (the rate is split among them)",
    "consumers": "consumer drivers per cell (each reads every record; with consumer_group they share the partitions, locally too)",
    "drivers_per_worker": "drivers placed on one Dask worker process (default 1)",
    "broker_metrics": "Prometheus endpoints of the brokers (URL or host:port, one per broker): broker CPU, version, bytes",
    "broker_version": "the brokers' Kafka version, when neither the cluster nor its metrics report it",
    "header_sample": "one record in this many carries the kb latency header (default 1000)",
    "consumer_group": "true: the cell's consumers join one consumer group and share the partitions (default false: each reads every record)",
}


CORPUS_KEYS = {
    "source": "json, logs, random, or file",
    "path": 'path of a corpus file (with source = "file")',
    "format": "lines or lenprefixed",
    "size": 'bytes of a built-in corpus (or a size string, "4MiB")',
    "seed": "seed of a built-in corpus",
}


SWEEP_KEYS = {
    "name": "a short name of the sweep (used in cell ids)",
    "experiments": "list of experiment ids this sweep feeds (A-F)",
    "codec": "codec[:level] or a list of them",
    "corpus": "corpus name (json, logs, random, a [corpora] name, or a file path) or a list",
    "batch_size": 'librdkafka batch.size: bytes or a size string ("64KiB", docs/cli.md), or a list',
    "linger_ms": "linger.ms, or a list",
    "partitions": "topic partitions, or a list",
    "acks": "acks: 0, 1 or all, or a list",
    "rate": 'messages/s (a number), "saturated", "auto", or "auto:F" (F × the minimum saturated rate), or a list',
    "topic_compression": "topic compression.type (producer, none, gzip, snappy, lz4, zstd), or a list",
    "topic_config": "table of extra topic configs",
    "key_policy": "none, round-robin or random",
    "client": "the Kafka client driving the cell: librdkafka or java, or a list",
    "control": control.KEY_HELP,
}


#: The drivers with a consumer-group mode (docs/drivers.md: the job's ``group``).
GROUP_CLIENTS = ("librdkafka", "java")


class PlanError(ValueError):
    """A plan is invalid; the message is one line naming the key and the fix."""


@dataclass(frozen=True)
class TransportDef:
    kind: str = "local"
    brokers: int = 1
    bootstrap: str | None = None
    replication_factor: int = 1
    min_insync_replicas: int | None = None
    broker_pids: tuple[int, ...] = ()
    workers: str | None = None  # Dask scheduler address (docs/distributed.md)
    producers: int = 1
    consumers: int = 1
    drivers_per_worker: int = 1
    broker_metrics: tuple[str, ...] = ()
    broker_version: str | None = None
    header_sample: int = DEFAULT_HEADER_SAMPLE  # one record in this many carries the kb header
    consumer_group: bool = False  # the cell's consumers share the partitions as one consumer group
    #: testbed (docs/testbed.md): NIC rates (Mbit/s, None: unshaped) and a one-way delay per host
    broker_nic_mbit: float | None = None
    client_nic_mbit: float | None = None
    delay_ms: float | None = None


@dataclass(frozen=True)
class CorpusDef:
    name: str
    source: str  # a built-in generator name, or "file"
    path: str | None = None
    format: str = "lines"
    size: int = DEFAULT_CORPUS_SIZE
    seed: int = 1


@dataclass(frozen=True)
class Sweep:
    name: str
    experiments: tuple[str, ...]
    codec: tuple[CodecSpec, ...]
    corpus: tuple[str, ...]
    batch_size: tuple[int, ...]
    linger_ms: tuple[float, ...]
    partitions: tuple[int, ...]
    acks: tuple[str, ...]
    rate: tuple[float | str, ...]
    topic_compression: tuple[str, ...]
    topic_config: Mapping[str, str] = field(default_factory=dict)
    key_policy: str = "none"
    client: tuple[str, ...] = ("librdkafka",)
    #: The experiments' own axes (name -> values; each experiment's ``sweep_axes``): the sweep's
    #: cells are the product of these with the axes above (kbench.engine.plan_expand).
    extras: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    control: str = ""  # the A/A control's baseline (kbench.engine.control): "" none, "first" or a cell id


@dataclass(frozen=True)
class Plan:
    name: str
    description: str
    repetitions: int
    warmup: bool
    duration_s: float
    warmup_s: float
    steady_skip_s: float
    seed: int | None
    auto_rate_fraction: float
    transport: TransportDef
    client: Mapping[str, str]
    corpora: Mapping[str, CorpusDef]
    sweeps: tuple[Sweep, ...]
    source: str = ""  # where it came from: builtin:<name> or a path
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)
    max_steal_pct: float = STEAL_LIMIT_PCT  # a run with more CPU steal is INVALID (seed 000: 1 %)
    retries: int = 0  # extra attempts per cell for retried statuses (status.RETRY_STATUSES)
    saturation_bound_ms: float = DEFAULT_SATURATION_BOUND_MS  # A: the unsaturated check's bound
    drift_rate_pct: float = DEFAULT_DRIFT_RATE_PCT  # the time series' drift bounds (kbench.engine.series)
    drift_p99_pct: float = DEFAULT_DRIFT_P99_PCT
    auto_rate_basis: str = "producer"  # what rate = "auto" is a fraction of (AUTO_RATE_BASES)
    knee_probe_s: float = 3.0  # seconds of each knee probe (auto_rate_basis = "pipeline")
    premises: premises.Premises = field(default_factory=premises.Premises)  # knee factor, min window, warm-up

    @property
    def experiments(self) -> list[str]:
        return sorted({e for s in self.sweeps for e in s.experiments})

    def fingerprint(self) -> str:
        """sha256 of the plan's canonical JSON with secrets redacted (what ``--resume`` checks)."""
        from kbench.engine.redact import redact

        return hashlib.sha256(json.dumps(redact(self.raw), sort_keys=True, default=str).encode()).hexdigest()
