"""A plan's expansion into cells (one per combination of a sweep's axes, stable ids) and the
checks on the expanded plan: its time budget and where a catch-up drain may run."""

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
from kbench.model import limits

__all__ = [
    "check_budget",
    "check_catch_up_pool",
    "expand",
]


def expand(plan: Plan) -> list[Cell]:
    """Every cell of every sweep, in a deterministic order (ids are stable for a plan)."""
    cells: list[Cell] = []
    for s in plan.sweeps:
        combos = itertools.product(
            s.codec, s.corpus, s.batch_size, s.linger_ms, s.partitions, s.acks, s.rate, s.topic_compression, s.client
        )
        catch = list(itertools.product(s.consumers, s.fetch_max_bytes, s.max_partition_fetch_bytes, s.fetch_min_bytes))
        for j, ((c, corp, bs, lg, p, a, r, tc, cl), (k, fmx, mpf, fmn)) in enumerate(itertools.product(combos, catch)):
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
                    consumers=k,
                    backlog_bytes=s.backlog_bytes,
                    fetch_max_bytes=fmx,
                    max_partition_fetch_bytes=mpf,
                    fetch_min_bytes=fmn,
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


def check_catch_up_pool(sweeps: Sequence[Sweep], workers: str | None) -> None:
    """A catch-up drain (G's backlog_bytes) runs on this machine's driver pool: DaskPool runs timed
    repetitions only, so a plan (or ``--workers``) putting one on Dask workers is refused."""
    for i, s in enumerate(sweeps):
        if workers is not None and s.backlog_bytes > 0:
            raise PlanError(
                f"sweep[{i}].backlog_bytes: a catch-up drain runs on this machine's driver pool, not on Dask "
                "workers; drop transport.workers (--workers) or run this sweep in a plan of its own"
            )
