"""What an experiment is: its columns, units, label axes, verdict metric, and its behaviour
(the rows it derives from a repetition, its report section, threats and plots).

The label axes are every plan axis a CSV row carries: two rows that differ in any of them belong
to different cells and are never pooled; two cells are compared by a verdict only when they differ
in exactly the experiment's compared axis.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kbench.engine.cell import TRAFFIC_AXES, Cell
from kbench.engine.status import Verdict
from kbench.engine.transports.base import RunRequest, RunResult
from kbench.model.corpus import Corpus
from kbench.model.stats import SATURATED_FLAG

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from kbench.engine.transports.measure import JobInputs, Jobs

__all__ = [
    "AnswerCell",
    "CELL_COLUMNS",
    "CONTROL_COLUMN",
    "DEFAULT_SATURATION_BOUND_MS",
    "Experiment",
    "LABELS",
    "M_LABELS",
    "Metric",
    "PlotSpec",
    "RowInput",
    "SATURATED_FLAG",
    "TAIL_COLUMNS",
    "Tuning",
    "rate_error_pct",
    "row_columns",
]

#: A's unsaturated check (docs/methodology.md): the producer's send delay p99, the queue wait
#: beyond linger.ms and the consumer's lag must each stay below this many milliseconds (the
#: plan's ``saturation_bound_ms`` overrides it).
DEFAULT_SATURATION_BOUND_MS = 20.0

#: Every plan axis a CSV row carries (``rate`` is the plan's rate: msgs/s, ``saturated``,
#: ``auto`` or ``auto:F``).  Rows equal on all of these (and on the machine) are repetitions of one cell.
LABELS: tuple[str, ...] = (
    "client",  # the producer's client driver (docs/drivers.md)
    *TRAFFIC_AXES,
    "key_policy",
    "topic_compression",
    "control_of",  # an A/A control's rows: the baseline cell it repeats (empty on every other row)
)
#: The column naming the baseline cell an A/A control repeats (docs/methodology.md §5): a control
#: is the baseline cell run again with identical settings, its cell id ``<baseline>-aa``.  As a
#: label it keeps the control's rows apart from the baseline's; a verdict never takes it as a candidate.
CONTROL_COLUMN = "control_of"
#: Label axes of the in-memory micro-benchmark (M).
M_LABELS: tuple[str, ...] = ("codec", "level", "block_size", "corpus")

CELL_COLUMNS: tuple[str, ...] = (
    "cell_id",
    "rep",
    "attempt",  # 1 for a repetition's first run; 2, 3, ... for its retries (a retried status before: status.RETRY_STATUSES)
    "sweep",
    *LABELS,
    "target_rate_msgs",
    "achieved_rate_msgs",
    "rate_error_pct",
    "messages",
)
TAIL_COLUMNS: tuple[str, ...] = ("status", "reason")


@dataclass(frozen=True)
class Metric:
    """A metric column, its unit and whether lower is better."""

    column: str
    unit: str
    lower_is_better: bool
    #: How the end-of-run table shows a cell's median, min and max of it (None: median [min–max];
    #: F's recompressed flag: true/false, mixed when its repetitions differ).
    shown: Callable[[float, float | None, float | None], str] | None = None


@dataclass(frozen=True)
class RowInput:
    """One repetition's inputs to the rows of every experiment its cell feeds."""

    cell: Cell
    rep: int
    res: RunResult
    corpus: Corpus
    corpus_entropy: float
    replication_factor: int
    verdict: Verdict
    attempt: int = 1
    saturation_bound_ms: float = DEFAULT_SATURATION_BOUND_MS  # A's unsaturated check (the plan's bound)
    #: A below the latency knee: the cell's pipeline's latency floor (µs; None: not measured) and the
    #: plan's knee_factor; a corrected p99 above their product is ABOVE_KNEE (kbench.engine.knee).
    knee_floor_us: float | None = None
    knee_factor: float = 2.0


@dataclass(frozen=True)
class AnswerCell:
    """One experiment's part of the report's answer: for ``codec`` against ``baseline`` on
    ``corpus`` (on ``machine``), the text of the column ``column`` (every number in it a ledger
    figure).  ``qualifier`` names the other labels that vary (e.g. the rate), "" when none."""

    machine: str
    corpus: str
    codec: str
    baseline: str
    column: str
    text: str
    qualifier: str = ""


@dataclass(frozen=True)
class PlotSpec:
    """One plot of an experiment: file name, caption, the drawing function (a frame → a figure,
    or None when the frame has nothing to draw) and its place among the report's plots."""

    name: str
    caption: str
    draw: Callable[[pd.DataFrame], Figure | None]
    rank: int


@dataclass(frozen=True)
class Tuning:
    """An experiment's tuning of a cell by its warm-up (G: its backlog sized from the measured
    drain rate): after the cell's warm-up, ``step`` proposes the next tuning from the warm-up's
    result; the runner records it in the manifest under ``key`` (cell id -> entry), logs its line
    and runs the warm-up again with it, at most ``max_rounds`` times (kbench.engine.tune).  Every
    request of the cell runs the cell as ``apply`` makes it from its recorded entry."""

    key: str
    #: (the cell, its recorded entry or None) -> the cell it runs as
    apply: Callable[[Cell, Mapping[str, Any] | None], Cell]
    #: (the cell as it ran, its warm-up's result) -> (the next entry, a log line), None: tuned enough
    step: Callable[[Cell, RunResult], tuple[dict[str, Any], str] | None]
    max_rounds: int


RowsFn = Callable[[RowInput], list[dict[str, Any]]]
#: A report section and its threats take the report's context (kbench.reporting.context.ReportContext;
#: typed Any here so that this leaf imports nothing of the reporting layer) and the experiment's frame.
SectionFn = Callable[[Any, "pd.DataFrame"], None]
ThreatsFn = Callable[[Any, "pd.DataFrame"], list[str]]
#: The experiment's columns of the report's answer (one per codec against the baseline).
AnswerFn = Callable[[Any, "pd.DataFrame"], list[AnswerCell]]
FrameFn = Callable[["pd.DataFrame"], "pd.DataFrame"]


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
    needs_stored: bool = False  # reads stored bytes (a remote cluster is asked for them when no segment files)
    compare_metrics: tuple[str, ...] = ()  # the notebooks' per-machine table (kbench.reporting.compare)
    per_core: tuple[str, ...] = ()  # of those, the ones that scale with the CPUs (per vCPU / per core)
    units: Mapping[str, str] = field(default_factory=dict)
    #: The columns a CSV of this experiment must have to be read at all (a run's CSV names each
    #: row's repetition: a file without one was written by another command).
    required_columns: tuple[str, ...] = ("status", "rep")
    # ---- behaviour
    rows: RowsFn | None = None  # the rows one repetition contributes (in_run experiments)
    report_title: str = ""
    section: SectionFn | None = None  # its report section
    threats: ThreatsFn | None = None  # threats to validity its rows show
    answer: AnswerFn | None = None  # its columns of the report's answer (the first section)
    answer_note: str = ""  # how to read those columns (printed under the answer)
    answer_rank: int = 0  # the place of its columns in the answer (ratio, throughput, CPU, latency)
    plots: tuple[PlotSpec, ...] = ()
    #: The notebooks' per-machine frame: derived columns added before the table (e.g. total %).
    compare_frame: FrameFn | None = None
    #: A line printed under its end-of-run console table.
    console_note: str = ""
    #: A sweep's axes (name -> values) -> what this experiment cannot measure in them ("" when fine).
    sweep_check: Callable[[Mapping[str, Sequence[Any]]], str] | None = None
    #: The sweep axes this experiment brings (G: the catch-up drain's): (where, the [[sweep]]
    #: table, its clients) -> axis name -> its values (a tuple; the cells are their product with
    #: the sweep's other axes, each cell carrying its values in ``Cell.extras``), the defaults where
    #: the table is silent.  Read for every sweep, so that a sweep setting them without the
    #: experiment is refused here.  ``sweep_keys``: the plan keys it reads, with their help.
    sweep_axes: Callable[[str, Mapping[str, Any], Sequence[str]], dict[str, tuple[Any, ...]]] | None = None
    sweep_keys: Mapping[str, str] = field(default_factory=dict)
    #: (a sweep's own axes, Sweep.extras) -> why its cells run only on this machine's driver pool
    #: ("" when they may run on Dask workers): such a plan on Dask workers is refused with it.
    local_only: Callable[[Mapping[str, Sequence[Any]]], str] | None = None
    #: The experiment's own driver jobs for a repetition (None from it: the common jobs), with
    #: their schedule on the local pool (G: the backlog, then its drain; kbench/experiments/g_drain.py).
    jobs: Callable[[RunRequest, JobInputs], Jobs | None] | None = None
    #: Why a fixed-rate repetition broke this experiment's premise ([] when it did not): (result,
    #: the cell's linger.ms, the plan's saturation_bound_ms) -> reasons.  The knee's probes must
    #: pass every experiment's check (kbench.engine.knee via the registry).
    premise_check: Callable[[RunResult, float, float], list[str]] | None = None
    #: Whether a cell runs as this experiment's own run (its own jobs, not the common producing
    #: window of ``duration_s``): the cluster's warm-up does not probe such a cell, and each of its
    #: runs, warm-up or repetition, is estimated at ``own_run_s`` seconds (kbench.engine.estimate).
    own_run: Callable[[Cell], bool] | None = None
    own_run_s: float = 0.0
    #: What SHORT_WINDOW's reason says to change when such a run's judged window is too short.
    short_window_fix: str = ""
    #: Its tuning of a cell by the cell's warm-up (None: a warm-up is run once, as planned).
    tuning: Tuning | None = None

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

    @property
    def at_common_rate(self) -> bool:
        """Run by ``kbench run`` at a plan's fixed or derived rate (not only saturated)."""
        return self.in_run and self.rate != "saturated"


def units(*metrics: Metric, **extra: str) -> dict[str, str]:
    return {**{m.column: m.unit for m in metrics}, **extra}


def head(lower_is_better: bool, *columns: tuple[str, str]) -> tuple[Metric, ...]:
    return tuple(Metric(c, u, lower_is_better) for c, u in columns)


LATENCY_PERCENTILES = ("p50_us", "p95_us", "p99_us", "p999_us", "max_us")


def rate_error_pct(res: RunResult) -> float | None:
    """How far the achieved rate was off the target, in % (None without a target)."""
    if res.target_rate:
        return (res.achieved_rate - res.target_rate) / res.target_rate * 100
    return None


def row_columns(cell: Cell, rep: int, res: RunResult | None, target: float | None, attempt: int = 1) -> dict[str, Any]:
    """The columns every row of a repetition starts with: the cell's, the repetition, the attempt,
    the target and (with a result) the achieved rate, its error and the messages acknowledged."""
    row = cell.params()
    row["rep"] = rep
    row["attempt"] = attempt
    row["target_rate_msgs"] = target
    if res is not None:
        row["achieved_rate_msgs"] = res.achieved_rate
        row["rate_error_pct"] = rate_error_pct(res)
        row["messages"] = res.messages_acked
    return row
