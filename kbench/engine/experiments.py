"""The experiments registry: one place that says, for A–F and M, the CSV file, its columns and
units, the label axes that identify a cell, which metric a verdict compares and in which
direction, and what a transport must measure for it.

Every other module (rules, store, verdict, report, compare, plots, the notebooks) reads these
facts from here.  The label axes are every plan axis a CSV row carries: two rows that differ
in any of them belong to different cells and are never pooled; two cells are compared by a
verdict only when they differ in exactly the experiment's compared axis.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kbench.model.microbench import COLUMNS as M_COLUMNS

__all__ = [
    "CELL_COLUMNS",
    "EXPERIMENTS",
    "Experiment",
    "FIXED_RATE",
    "M_LABELS",
    "RUN_EXPERIMENTS",
    "SATURATED",
    "LABELS",
    "Metric",
    "SATURATED_FLAG",
    "TAIL_COLUMNS",
    "columns",
    "get",
]

#: The flag carried by every saturated (B) latency: queueing, not service.
SATURATED_FLAG = "latency-NOT-comparable-saturated"

#: Every plan axis a CSV row carries (``rate`` is the plan's rate: msgs/s, ``saturated`` or
#: ``auto``).  Rows equal on all of these (and on the machine) are repetitions of one cell.
LABELS: tuple[str, ...] = (
    "client",  # the producer's client driver (docs/drivers.md)
    "codec",
    "corpus",
    "batch_size",
    "linger_ms",
    "partitions",
    "acks",
    "rate",
    "key_policy",
    "topic_compression",
)
#: Label axes of the in-memory micro-benchmark (M).
M_LABELS: tuple[str, ...] = ("codec", "level", "block_size", "corpus")

CELL_COLUMNS: tuple[str, ...] = (
    "cell_id",
    "rep",
    "attempt",  # 1 for a repetition's first run; 2, 3, ... for its retries (INVALID or REJECTED before)
    "sweep",
    *LABELS,
    "target_rate_msgs",
    "achieved_rate_msgs",
    "rate_error_pct",
    "messages",
)
TAIL_COLUMNS: tuple[str, ...] = ("status", "reason")

_LAT = ("p50_us", "p95_us", "p99_us", "p999_us", "max_us")


@dataclass(frozen=True)
class Metric:
    """A metric column, its unit and whether lower is better."""

    column: str
    unit: str
    lower_is_better: bool


@dataclass(frozen=True)
class Experiment:
    """Everything the engine and the reports need to know about one experiment."""

    id: str
    title: str
    own_columns: tuple[str, ...]  # the experiment's columns after the cell columns
    compared: tuple[str, ...]  # the axes a verdict compares (cells equal on every other label)
    headline: tuple[Metric, ...]  # the metrics of the end-of-run table; the first one ...
    verdict_on: str  # ... and this one is what pairwise verdicts are drawn on
    #: What a transport must measure for it: RunResult field -> the NA reason when it did not
    #: (None; for ``cpu``, no sample of the role the experiment reads).
    needs: Mapping[str, str]
    row_key: tuple[str, ...] = ()  # columns besides the labels that split a run into rows (D: role)
    labels: tuple[str, ...] = LABELS
    in_run: bool = True  # written by ``kbench run`` (M is written by ``kbench codecs bench``)
    rate: str = "any"  # the rates a sweep may give it: "fixed" (msgs/s or auto), "saturated" or "any"
    compare_metrics: tuple[str, ...] = ()  # the notebooks' per-machine table (kbench.reporting.compare)
    per_core: tuple[str, ...] = ()  # of those, the ones that scale with the CPUs (per vCPU / per core)
    units: Mapping[str, str] = field(default_factory=dict)

    @property
    def csv(self) -> str:
        return f"{self.id}.csv"

    @property
    def columns(self) -> tuple[str, ...]:
        if not self.in_run:
            return self.own_columns
        return CELL_COLUMNS + self.own_columns + TAIL_COLUMNS

    @property
    def verdict_metric(self) -> Metric:
        return next(m for m in self.headline if m.column == self.verdict_on)


def _units(*metrics: Metric, **extra: str) -> dict[str, str]:
    return {**{m.column: m.unit for m in metrics}, **extra}


def _head(lower_is_better: bool, *columns: tuple[str, str]) -> tuple[Metric, ...]:
    return tuple(Metric(c, u, lower_is_better) for c, u in columns)


_A_HEAD = _head(True, ("corrected_p50_us", "µs"), ("corrected_p99_us", "µs"), ("corrected_p999_us", "µs"))
_B_HEAD = _head(False, ("achieved_rate_msgs", "msgs/s"), ("payload_mb_per_s", "MB/s"))
_C_HEAD = _head(False, ("ratio", "x"), ("batch_ratio", "x"), ("corpus_entropy_bits", "bits/B"))
_D_HEAD = _head(True, ("cpu_s_per_gb", "CPU-s/GB"), ("usr_pct", "%"), ("sys_pct", "%"))
_E_HEAD = _head(False, ("ratio", "x"), ("records_per_batch_p50", "rec"), ("bytes_per_batch_p50", "B"))
_F_HEAD = _head(True, ("broker_cpu_s_per_gb", "CPU-s/GB"), ("recompressed", ""))
_M_HEAD = _head(False, ("ratio", "x"), ("compress_mb_s", "MB/s"), ("decompress_mb_s", "MB/s"))

EXPERIMENTS: dict[str, Experiment] = {
    e.id: e
    for e in (
        Experiment(
            id="A",
            title="latency cost of a codec at a common fixed rate",
            own_columns=tuple(f"corrected_{p}" for p in _LAT)
            + tuple(f"service_{p}" for p in _LAT)
            + (
                "delay_p99_us",
                "delay_max_us",
                "e2e_p50_us",
                "e2e_p99_us",
                "e2e_max_us",
                "phase_queue_p50_us",
                "phase_compress_p50_us",
                "phase_request_p50_us",
                "out_of_range",
                "lost",
                "duplicated",
                "delivery_errors",
            ),
            compared=("codec",),
            headline=_A_HEAD,
            verdict_on="corrected_p99_us",
            needs={"latency_corrected": "latency not measured by this transport"},
            rate="fixed",
            compare_metrics=(
                "target_rate_msgs",
                "corrected_p50_us",
                "corrected_p95_us",
                "corrected_p99_us",
                "corrected_p999_us",
            ),
            units=_units(*_A_HEAD, target_rate_msgs="msgs/s", achieved_rate_msgs="msgs/s", rate_error_pct="%"),
        ),
        Experiment(
            id="B",
            title="throughput cost (saturated producer)",
            own_columns=(
                "payload_mb_per_s",
                "producer_wire_mb_per_s",
                "service_p50_us",
                "service_p99_us",
                "latency_flag",
                "lost",
                "duplicated",
                "delivery_errors",
            ),
            compared=("codec",),
            headline=_B_HEAD,
            verdict_on="achieved_rate_msgs",
            needs={},
            rate="saturated",
            compare_metrics=("achieved_rate_msgs", "payload_mb_per_s"),
            per_core=("achieved_rate_msgs",),
            units=_units(*_B_HEAD, producer_wire_mb_per_s="MB/s"),
        ),
        Experiment(
            id="C",
            title="compression ratio vs corpus (stored bytes)",
            own_columns=(
                "payload_bytes",
                "stored_bytes",
                "ratio",
                "batch_ratio",
                "corpus_entropy_bits",
                "corpus_sha256",
                "corpus_near_random",
                "stored_batches",
                "stored_codecs",
                "stored_source",
            ),
            compared=("codec",),
            headline=_C_HEAD,
            verdict_on="ratio",
            needs={"stored_bytes": "stored bytes not measured by this transport"},
            compare_metrics=("corpus_entropy_bits", "payload_bytes", "stored_bytes", "ratio"),
            units=_units(*_C_HEAD, payload_bytes="B", stored_bytes="B"),
        ),
        Experiment(
            id="D",
            title="who pays the CPU (per role, fixed rate)",
            own_columns=(
                "role",
                "pid",
                "usr_pct",
                "sys_pct",
                "cpu_s",
                "payload_gb",
                "cpu_s_per_gb",
                "loadgen_cpu_s",
                "client_cpu_s",
                "loadgen_cpu_s_per_gb",
                "client_cpu_s_per_gb",
                "wire_bytes",
                "wire_source",
                "steal_pct",
                "cpu_source",
                "broker_bytes_in",
                "broker_bytes_out",
                "produce_conversions",
            ),
            compared=("codec",),
            headline=_D_HEAD,
            verdict_on="cpu_s_per_gb",
            needs={"cpu": "this transport measured no CPU"},
            row_key=("role",),
            rate="fixed",
            compare_metrics=("usr_pct", "sys_pct", "total_pct", "cpu_s_per_gb"),
            per_core=("total_pct",),
            units=_units(*_D_HEAD, cpu_s="s", payload_gb="GB", wire_bytes="B", steal_pct="%"),
        ),
        Experiment(
            id="E",
            title="batch-size effect (batch.size x linger.ms x partitions)",
            own_columns=(
                "batches",
                "records_per_batch_p50",
                "records_per_batch_p90",
                "records_per_batch_max",
                "bytes_per_batch_p50",
                "bytes_per_batch_p90",
                "bytes_per_batch_max",
                "fill_source",
                "client_records_per_batch_p50",
                "client_records_per_batch_p90",
                "client_batch_bytes_p50",
                "client_batch_bytes_p90",
                "payload_bytes",
                "stored_bytes",
                "ratio",
                "stored_source",
            ),
            compared=("batch_size", "linger_ms", "partitions"),
            headline=_E_HEAD,
            verdict_on="ratio",
            needs={},
            rate="fixed",
            compare_metrics=("ratio", "records_per_batch_p50", "bytes_per_batch_p50", "batches"),
            units=_units(*_E_HEAD, payload_bytes="B", stored_bytes="B"),
        ),
        Experiment(
            id="F",
            title="broker recompression (topic compression.type vs producer codec)",
            own_columns=(
                "producer_codec",
                "stored_codecs",
                "recompressed",
                "broker_usr_pct",
                "broker_sys_pct",
                "broker_cpu_s_per_gb",
                "payload_bytes",
                "stored_bytes",
                "stored_source",
                "produce_conversions",
            ),
            compared=("topic_compression",),
            headline=_F_HEAD,
            verdict_on="broker_cpu_s_per_gb",
            needs={"cpu": "broker CPU not measured (no local broker pids)"},
            compare_metrics=("broker_cpu_s_per_gb", "broker_usr_pct", "broker_sys_pct"),
            per_core=("broker_usr_pct", "broker_sys_pct"),
            units=_units(*_F_HEAD, broker_usr_pct="%", broker_sys_pct="%"),
        ),
        Experiment(
            id="M",
            title="codec micro-benchmark (in memory)",
            own_columns=M_COLUMNS,
            compared=("codec", "level"),
            headline=_M_HEAD,
            verdict_on="compress_mb_s",
            needs={},
            labels=M_LABELS,
            in_run=False,
            compare_metrics=("ratio", "compress_mb_s", "decompress_mb_s"),
            per_core=("compress_mb_s",),
            units=_units(*_M_HEAD),
        ),
    )
}

#: The experiments ``kbench run`` writes (A–F).
RUN_EXPERIMENTS: tuple[str, ...] = tuple(k for k, e in EXPERIMENTS.items() if e.in_run)
#: Experiments that need a fixed rate (msgs/s or "auto"), and those that need a saturated producer.
FIXED_RATE: frozenset[str] = frozenset(k for k, e in EXPERIMENTS.items() if e.rate == "fixed")
SATURATED: frozenset[str] = frozenset(k for k, e in EXPERIMENTS.items() if e.rate == "saturated")


def get(experiment: str) -> Experiment:
    return EXPERIMENTS[experiment]


def columns(experiment: str) -> tuple[str, ...]:
    """The CSV header of a ``kbench run`` experiment."""
    return EXPERIMENTS[experiment].columns
