"""The registry: every experiment, in the order the report shows them, one line each.

Everything that needs to know about experiments asks here, at call time (so a test may add one):
the plan (which ids exist, which need a fixed or saturated rate), the rules (the rows of a
repetition), the store (CSV columns), the console tables, the report (sections, threats, plots),
frames and the notebooks' tables.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kbench.engine.cell import Cell
from kbench.engine.transports.base import RunRequest, RunResult
from kbench.engine.transports.measure import JobInputs, Jobs
from kbench.experiments import (
    a_latency,
    b_throughput,
    c_ratio,
    d_cpu,
    e_batch,
    f_recompression,
    g_catchup,
    m_microbench,
)
from kbench.experiments.spec import Experiment, PlotSpec, Tuning

__all__ = [
    "EXPERIMENTS",
    "columns",
    "fixed_rate",
    "get",
    "ids",
    "local_only",
    "needs_stored",
    "own_jobs",
    "own_run",
    "own_run_s",
    "plots",
    "premise_reasons",
    "run_experiments",
    "saturated",
    "short_window_fix",
    "sweep_axes",
    "sweep_keys",
    "tuned",
    "tunings",
]

#: id -> experiment, in report order.  Adding an experiment: one module and one line here.
EXPERIMENTS: dict[str, Experiment] = {
    e.id: e
    for e in (
        a_latency.EXPERIMENT,
        b_throughput.EXPERIMENT,
        c_ratio.EXPERIMENT,
        d_cpu.EXPERIMENT,
        e_batch.EXPERIMENT,
        f_recompression.EXPERIMENT,
        g_catchup.EXPERIMENT,
        m_microbench.EXPERIMENT,
    )
}


def get(experiment: str) -> Experiment:
    return EXPERIMENTS[experiment]


def ids() -> tuple[str, ...]:
    """Every experiment, in report order (the CSVs a run directory may hold)."""
    return tuple(EXPERIMENTS)


def run_experiments() -> tuple[str, ...]:
    """The experiments ``kbench run`` writes."""
    return tuple(k for k, e in EXPERIMENTS.items() if e.in_run)


def fixed_rate() -> frozenset[str]:
    """Experiments that need a fixed rate (msgs/s or "auto")."""
    return frozenset(k for k, e in EXPERIMENTS.items() if e.rate == "fixed")


def saturated() -> frozenset[str]:
    """Experiments that need a saturated producer."""
    return frozenset(k for k, e in EXPERIMENTS.items() if e.rate == "saturated")


def premise_reasons(res: RunResult, linger_ms: float, bound_ms: float) -> list[str]:
    """Why a fixed-rate repetition broke an experiment's premise (every experiment's
    ``premise_check``, in report order; [] when none did): what a knee probe must pass."""
    return [
        r
        for e in EXPERIMENTS.values()
        if e.premise_check is not None
        for r in e.premise_check(res, linger_ms, bound_ms)
    ]


def sweep_axes(where: str, tbl: Mapping[str, Any], clients: Sequence[str]) -> dict[str, tuple[Any, ...]]:
    """The axes the experiments bring to a sweep (each experiment's ``sweep_axes``): axis name ->
    its values (the sweep's ``extras``)."""
    out: dict[str, tuple[Any, ...]] = {}
    for e in EXPERIMENTS.values():
        if e.sweep_axes is not None:
            out.update(e.sweep_axes(where, tbl, clients))
    return out


def sweep_keys() -> dict[str, str]:
    """The plan keys of a [[sweep]] the experiments read (their ``sweep_keys``): key -> help."""
    return {k: v for e in EXPERIMENTS.values() for k, v in e.sweep_keys.items()}


def local_only(extras: Mapping[str, Sequence[Any]]) -> str:
    """Why a sweep with these own axes runs only on this machine's driver pool ("" when it may run
    on Dask workers): the first experiment's ``local_only`` reason."""
    return next((why for e in EXPERIMENTS.values() if e.local_only is not None and (why := e.local_only(extras))), "")


def own_jobs(req: RunRequest, inputs: JobInputs) -> Jobs | None:
    """The first experiment's own jobs for ``req`` (each experiment's ``jobs``; G's backlog and
    drain for a cell with one), None when every experiment leaves it the common jobs."""
    for e in EXPERIMENTS.values():
        own = e.jobs(req, inputs) if e.jobs is not None else None
        if own is not None:
            return own
    return None


def own_run(cell: Cell) -> bool:
    """Whether ``cell`` runs as an experiment's own run (each experiment's ``own_run``)."""
    return any(e.own_run is not None and e.own_run(cell) for e in EXPERIMENTS.values())


def own_run_s(cell: Cell) -> float | None:
    """Seconds of one run of ``cell`` when it is an experiment's own run (None: the plan's)."""
    return next((e.own_run_s for e in EXPERIMENTS.values() if e.own_run is not None and e.own_run(cell)), None)


def short_window_fix(cell: Cell) -> str:
    """What to change when ``cell``'s own run judged too short a window ("" when it is no
    experiment's own run, or its experiment says nothing: kbench.engine.window's own fix)."""
    return next((e.short_window_fix for e in EXPERIMENTS.values() if e.own_run is not None and e.own_run(cell)), "")


def tunings() -> list[Tuning]:
    """Every experiment's tuning of cells by their warm-ups, in report order."""
    return [e.tuning for e in EXPERIMENTS.values() if e.tuning is not None]


def tuned(cell: Cell, manifest: Mapping[str, Any]) -> Cell:
    """``cell`` as it runs: with every tuning its warm-ups recorded in ``manifest`` applied."""
    for t in tunings():
        recorded = manifest.get(t.key, {})
        entry = recorded.get(cell.cell_id) if isinstance(recorded, Mapping) else None
        cell = t.apply(cell, entry if isinstance(entry, Mapping) else None)
    return cell


def needs_stored(experiments: Iterable[str]) -> bool:
    """Whether any of ``experiments`` reads stored bytes."""
    return any(EXPERIMENTS[e].needs_stored for e in experiments)


def columns(experiment: str) -> tuple[str, ...]:
    """The CSV header of an experiment."""
    return EXPERIMENTS[experiment].columns


def plots() -> list[tuple[str, PlotSpec]]:
    """(experiment, plot) for every plot, in the order a report shows them."""
    return sorted(((k, p) for k, e in EXPERIMENTS.items() for p in e.plots), key=lambda kp: kp[1].rank)
