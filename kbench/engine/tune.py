"""A cell's warm-up tuned by the experiments (docs/architecture.md): after the warm-up, each
experiment's tuning (kbench.experiments.spec.Tuning, through the registry) may propose the cell's
next setting from the warm-up's result; it is recorded in the manifest, logged, and the warm-up
runs again with it, until the tuning is content or its rounds are spent.  Every later request of
the cell applies what was recorded (kbench.engine.session.request)."""

from __future__ import annotations

import dataclasses

from kbench.engine.cell import Cell
from kbench.engine.session import Session, request
from kbench.engine.transports.base import RunResult
from kbench.experiments import registry

__all__ = ["tune_warm_up"]


def tune_warm_up(s: Session, run_id: str, cell: Cell, target: float | None, res: RunResult) -> RunResult:
    """The cell's warm-up (its result ``res``) run again while a tuning asks for it; the last result."""
    for t in registry.tunings():
        rounds = 1
        while rounds <= t.max_rounds:
            ran = registry.tuned(cell, s.man)
            step = t.step(ran, res)
            if step is None:
                break
            entry, line = step
            s.man[t.key] = {**s.man.get(t.key, {}), cell.cell_id: entry}
            s.save()
            s.log(f"{cell.cell_id}: {line}")
            req = request(s, run_id, cell, target, None)
            res = s.transport.run(dataclasses.replace(req, topic=f"{req.topic}{rounds}"))
            rounds += 1
    return res
