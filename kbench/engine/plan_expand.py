"""A plan's expansion into cells (one per combination of a sweep's axes, stable ids) and the
checks on the expanded plan: its time budget and the cells that run only on this machine."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from kbench.engine import control
from kbench.engine.cell import Cell
from kbench.engine.plan_schema import (
    Plan,
    PlanError,
    Sweep,
)
from kbench.experiments import registry
from kbench.model import limits

__all__ = [
    "check_budget",
    "check_local_only",
    "expand",
]


def expand(plan: Plan) -> list[Cell]:
    """Every cell of every sweep, in a deterministic order (ids are stable for a plan)."""
    cells: list[Cell] = []
    for s in plan.sweeps:
        combos = itertools.product(
            s.codec, s.corpus, s.batch_size, s.linger_ms, s.partitions, s.acks, s.rate, s.topic_compression, s.client
        )
        names = list(s.extras)
        own = [dict(zip(names, v)) for v in itertools.product(*s.extras.values())]  # the experiments' axes
        for j, ((c, corp, bs, lg, p, a, r, tc, cl), extras) in enumerate(itertools.product(combos, own)):
            cells.append(
                Cell(
                    cell_id=f"{s.name}-{j:03d}",
                    sweep=s.name,
                    experiments=s.experiments,
                    codec=str(c),
                    spec=c,
                    corpus=corp,
                    batch_size=bs,
                    linger_ms=lg,
                    partitions=p,
                    acks=a,
                    rate=r,
                    topic_compression=tc,
                    topic_config=s.topic_config,
                    key_policy=s.key_policy,
                    client=cl,
                    extras=extras,
                )
            )
    return control.add(plan.sweeps, cells)


def check_budget(plan: Plan) -> None:
    """Refuse a plan whose planned time exceeds limits.MAX_PLAN_S, or whose fixed-rate cells
    would send less than one message per repetition (the cell count is checked before, in parse)."""
    cells = expand(plan)
    for c in cells:
        if isinstance(c.rate, float) and c.rate * plan.duration_s < 1:
            raise PlanError(
                f"sweep.rate: {c.rate:g} msgs/s x duration_s {plan.duration_s:g} s = {c.rate * plan.duration_s:.3g} "
                f"messages per repetition (cell {c.cell_id}); at least 1 is needed: raise the rate or the duration"
            )
    per_cell = plan.repetitions * plan.duration_s + (plan.warmup_s if plan.warmup else 0.0)
    total = len(cells) * per_cell
    if total > limits.MAX_PLAN_S:
        raise PlanError(
            f"plan: {len(cells)} cells x {plan.repetitions} repetitions x {plan.duration_s:g} s (+ warm-ups) = "
            f"{total:.3g} s planned, above the limit of {limits.MAX_PLAN_S} s (7 days); "
            "lower repetitions, duration_s or the sweeps"
        )


def check_local_only(sweeps: Sequence[Sweep], workers: str | None) -> None:
    """Cells an experiment runs only on this machine's driver pool (its own schedule: DaskPool runs
    timed repetitions only; the experiment's ``local_only``, through the registry): a plan (or
    ``--workers``) putting them on Dask workers is refused with the experiment's reason."""
    for i, s in enumerate(sweeps):
        why = registry.local_only(s.extras) if workers is not None else ""
        if why:
            raise PlanError(f"sweep[{i}].{why}")
