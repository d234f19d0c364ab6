"""Rate derivation: a cell's target msgs/s — its number, or ``rate = "auto"``/``"auto:F"`` derived
once per run from the saturated cells' rows (or the pipeline's knee probed with short runs) and
recorded in the manifest."""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kbench.engine import knee, store
from kbench.engine import plan as plan_mod
from kbench.engine.plan import Cell
from kbench.engine.session import Session, request
from kbench.engine.status import MISSING, RETRY_STATUSES
from kbench.engine.transports.base import RunResult, TransportError
from kbench.experiments import registry

__all__ = ["FRACTIONS_METHOD", "derive_rate", "target_rate"]


def derive_rate(run_dir: Path, saturated_ids: Sequence[str], fraction: float) -> dict[str, Any]:
    """The common rate from the saturated cells' OK rows in this run's CSVs.

    With no OK saturated repetition, it falls back (visibly: ``fallback`` in the derivation,
    shown by the manifest and every table) to the medians of the measured saturated
    repetitions (INVALID or REJECTED: measured, then excluded by a rule); with none measured
    either, it raises a one-line error saying what to change."""
    ok: dict[str, dict[tuple[int, int], float]] = {}
    measured: dict[str, dict[tuple[int, int], float]] = {}
    reasons: set[str] = set()
    for exp in registry.run_experiments():
        for r in store.read_rows(run_dir / f"{exp}.csv"):
            if r["cell_id"] not in saturated_ids or r["achieved_rate_msgs"] in ("", MISSING):
                continue
            key = (int(r["rep"]), store.attempt_of(r))
            if r["status"] == "OK":
                ok.setdefault(r["cell_id"], {})[key] = float(r["achieved_rate_msgs"])
            elif r["status"] in RETRY_STATUSES:  # measured, excluded by a rule of the machine or load
                measured.setdefault(r["cell_id"], {})[key] = float(r["achieved_rate_msgs"])
                reasons.add(r["status"])
    fallback = None
    per_cell = ok
    if not ok:
        if not measured:
            raise TransportError(
                'cannot derive rate = "auto": no saturated repetition measured a rate (see B.csv\'s reasons); '
                "fix the failure, or give the rate in msgs/s in the plan"
            )
        per_cell = measured
        fallback = (
            f"no saturated cell had an OK repetition ({', '.join(sorted(reasons))}); the rate is derived from the "
            "medians of the measured saturated repetitions instead"
        )
    medians = {cid: statistics.median(v.values()) for cid, v in per_cell.items() if v}
    low = min(medians, key=lambda k: medians[k])
    out: dict[str, Any] = {
        "method": "auto: min over saturated cells of the median achieved msgs/s, times auto_rate_fraction",
        "fraction": fraction,
        "saturated_medians_msgs": medians,
        "min_cell": low,
        "rate_msgs": round(medians[low] * fraction, 3),
        "basis": "producer",
        "basis_msgs": medians[low],
    }
    if fallback:
        out["fallback"] = fallback
    return out


#: Appended to the derivation's method once a plan's ``auto:F`` cells are derived.
FRACTIONS_METHOD = '; rate = "auto:F": F times the same minimum (each under fractions)'


def pipeline_derivation(s: Session, run_id: str, cells: Sequence[Cell], producer: dict[str, Any]) -> dict[str, Any]:
    """The derivation on the pipeline's basis: short probes of the derived-rate cells (kbench.engine.knee)."""
    plan = s.plan

    def probe(cell: Cell, rate: float, n: int) -> RunResult:
        req = request(s, run_id, cell, rate, 1)
        return s.transport.run(
            dataclasses.replace(
                req,
                topic=f"kbench-{run_id}-{cell.cell_id}-k{n}",
                duration_s=plan.knee_probe_s,
                steady_skip_s=min(plan.steady_skip_s, plan.knee_probe_s / 2),
            )
        )

    pr = plan.premises
    return knee.derive(
        producer,
        cells,
        probe,
        plan.saturation_bound_ms,
        plan.auto_rate_fraction,
        s.log,
        pr.knee_factor,
        pr.floor_max_ms,
    )


def target_rate(
    s: Session, cell: Cell, saturated_ids: Sequence[str], run_id: str = "", cells: Sequence[Cell] = ()
) -> float | None:
    """The cell's target msgs/s: its number, None when saturated, or the common rate (derived
    from the saturated cells' rows once — on the pipeline basis, from the knee probed with
    ``cells`` — then recorded in the manifest); ``auto:F`` is F × the same basis (the minimum
    saturated median, or the knee), recorded under ``rate_derivation/fractions``."""
    if cell.rate == "saturated":
        return None
    frac = plan_mod.rate_fraction(cell.rate, s.plan.auto_rate_fraction)
    if frac is None:
        return float(cell.rate)
    deriv: dict[str, Any] = s.man.get("rate_derivation", {})
    if deriv.get("rate_msgs") is None:
        deriv = derive_rate(s.run_dir, saturated_ids, s.plan.auto_rate_fraction)
        if s.plan.auto_rate_basis == "pipeline":
            deriv = pipeline_derivation(s, run_id, cells, deriv)
        s.man["rate_derivation"] = deriv
        s.save()
        s.log("common rate derived", derivation=deriv)
    if cell.rate == "auto":
        return float(deriv["rate_msgs"])
    key = str(cell.rate)
    fractions: dict[str, float] = dict(deriv.get("fractions", {}))
    if key not in fractions:
        basis = deriv.get("basis_msgs", deriv["saturated_medians_msgs"][deriv["min_cell"]])
        fractions[key] = round(basis * frac, 3)
        method = str(deriv.get("method", ""))
        more = FRACTIONS_METHOD.replace("minimum", "knee") if deriv.get("basis") == "pipeline" else FRACTIONS_METHOD
        if more not in method:
            method += more
        s.man["rate_derivation"] = {**deriv, "method": method, "fractions": fractions}
        s.save()
        s.log(f"rate {key} derived: {fractions[key]} msgs/s")
    return float(fractions[key])
