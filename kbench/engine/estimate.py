"""How long a plan takes: its planned seconds plus what the runner does around them.

Phases (each an estimate from the plan alone, nothing is run):

- set-up: starting the transport (a local cluster's JVMs, the testbed's namespaces and brokers)
  and the environment gate's sampling window;
- the cluster's warm-up (``warm_cluster``, kbench.engine.warmup): probes per client until two agree,
  at least :data:`SETTLE_PROBES`;
- knee probes: with ``auto_rate_basis = "pipeline"``, short probe repetitions of every distinct
  pipeline whose rate is derived (kbench.engine.knee), about :data:`PROBES_PER_CELL` each, after
  its latency floor's probes (at least :data:`SETTLE_PROBES`);
- warm-ups and repetitions: their planned seconds; an experiment's own run (e.g. G's catch-up,
  which lasts until its backlog is produced and drained, not bounded by ``duration_s``) takes the
  seconds its experiment estimates (``Experiment.own_run_s``, through the registry);
- per-run overhead: each run's topic creation, driver start, consumer assignment and drain, and
  the host-speed probes (kbench.engine.host_speed: the calibration once, one probe before and one
  after each repetition).

The constants are calibrated on committed runs (benchmarks/results/*/manifest.json: started_at
to finished_at); ``tests/test_plan_estimate.py`` checks the estimate against them, within 25 %.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kbench.engine import host_speed, knee
from kbench.engine import plan as plan_mod
from kbench.engine.cell import Cell
from kbench.experiments import registry

__all__ = ["PROBES_PER_CELL", "Estimate", "estimate", "run_s"]

#: Seconds to open a transport: start the cluster (per kind; + per broker beyond the first) ...
SETUP_S: Mapping[str, float] = {"local": 12.0, "testbed": 40.0, "bootstrap": 3.0}
SETUP_PER_EXTRA_BROKER_S: Mapping[str, float] = {"local": 4.0}
#: ... and each run's own overhead: topic creation, driver start, assignment, drain.
PER_RUN_S: Mapping[str, float] = {"local": 1.0, "testbed": 3.5, "bootstrap": 1.5}
#: A driver that is its own process (the Java client's JVM, the Go clients): its start, per run.
DRIVER_START_S = 2.0
#: Probe repetitions per probed pipeline (the knee is usually found at the first or second rate).
PROBES_PER_CELL = 1.5
#: Probes of a settle loop (the cluster's warm-up, a pipeline's floor): two that agree, at least.
SETTLE_PROBES = 2
#: The environment gate's default sampling window (kbench run --gate-sample-s).
GATE_S = 1.0
#: Seconds of one host-speed probe (0.52-0.62 s between the catch-up repetitions of catch-up-2026-12-06).
HOST_PROBE_S = 0.6


@dataclass(frozen=True)
class Estimate:
    """Seconds per phase; ``total_s`` their sum."""

    setup_s: float
    warm_s: float  # the cluster's warm-up probes
    probes_s: float  # the latency floor's and the knee's probes
    warmups_s: float
    repetitions_s: float
    overhead_s: float
    runs: int  # warm-ups + repetitions (probes not counted)
    probes: float

    @property
    def total_s(self) -> float:
        return self.setup_s + self.warm_s + self.probes_s + self.warmups_s + self.repetitions_s + self.overhead_s

    def as_dict(self) -> dict[str, float]:
        return {
            "setup_s": self.setup_s,
            "warm_s": self.warm_s,
            "probes_s": self.probes_s,
            "warmups_s": self.warmups_s,
            "repetitions_s": self.repetitions_s,
            "overhead_s": self.overhead_s,
            "total_s": self.total_s,
        }


def run_s(cell: Cell, planned_s: float) -> float:
    """Seconds of one run of ``cell``: its experiment's own estimate for its own run, else planned."""
    own = registry.own_run_s(cell)
    return planned_s if own is None else own


def _per_run(kind: str, cell: Cell) -> float:
    base = PER_RUN_S.get(kind, 0.0)
    return base + (DRIVER_START_S if base and cell.client != "librdkafka" else 0.0)


def estimate(
    plan: plan_mod.Plan, cells: list[Cell] | None = None, warm: bool = True, floor: bool = True, host: bool = True
) -> Estimate:
    """The plan's time by phase.  The simulated and dry transports run no cluster: their estimate
    is the planned seconds alone.  ``warm``/``floor``/``host`` False: leave out the cluster's
    warm-up, the floor probes or the host-speed probes (a run made before kbench had them)."""
    cells = plan_mod.expand(plan) if cells is None else cells
    kind = plan.transport.kind
    setup = 0.0
    if kind in SETUP_S:
        setup = SETUP_S[kind] + SETUP_PER_EXTRA_BROKER_S.get(kind, 0.0) * max(0, plan.transport.brokers - 1) + GATE_S
    wup = int(plan.warmup)
    overhead = sum(_per_run(kind, c) * (plan.repetitions + wup) for c in cells)
    if host and not host_speed.unprobed_why(plan.premises.host_drift_pct, kind, plan.transport.workers):
        overhead += HOST_PROBE_S * (host_speed.CALIBRATION_PROBES + 2 * plan.repetitions * len(cells))
    probes = 0.0
    probes_s = 0.0
    if plan.auto_rate_basis == "pipeline":
        probed = knee.probe_cells(cells)
        each = PROBES_PER_CELL + (SETTLE_PROBES if floor else 0)
        probes = each * len(probed)
        probes_s = sum(each * (plan.knee_probe_s + _per_run(kind, c)) for c in probed)
    warm_s = 0.0
    if warm and plan.premises.warm_cluster and kind in SETUP_S:
        first = {c.client: c for c in cells if not registry.own_run(c)}  # one series per client (warmup.warm_cells)
        warm_s = sum(SETTLE_PROBES * (plan.knee_probe_s + _per_run(kind, c)) for c in first.values())
    return Estimate(
        setup_s=setup,
        warm_s=warm_s,
        probes_s=probes_s,
        warmups_s=sum(wup * run_s(c, plan.warmup_s) for c in cells),
        repetitions_s=sum(plan.repetitions * run_s(c, plan.duration_s) for c in cells),
        overhead_s=overhead,
        runs=len(cells) * (plan.repetitions + wup),
        probes=probes,
    )
