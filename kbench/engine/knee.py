"""The pipeline's knee: ``rate = "auto"`` from the saturation of the whole pipeline as A runs it.

A saturated cell (B) measures the producer alone: no consumer runs, and on a machine whose roles
share CPUs the pipeline (producer, brokers and consumer together) saturates well below it.  With
``auto_rate_basis = "pipeline"`` the runner, once the saturated cells are measured, runs short
probe repetitions of every cell whose rate is derived — as A runs it, producer and consumer at a
fixed rate — at falling fractions (:data:`PROBE_FRACTIONS`) of the slowest saturated median, and
takes per cell the highest probe rate whose repetition passes A's saturation check
(:func:`passes`) and whose corrected p99 stays within the plan's ``knee_factor`` × the pipeline's
latency floor.  The floor is measured first, per pipeline, at the lowest probe fraction, by probes
repeated until two agree (kbench.engine.floor).  The knee is the lowest of the per-cell knees
(a later cell's probes start at the lowest knee found so far: above it they cannot lower the
minimum); ``"auto"`` is ``auto_rate_fraction`` × the knee and ``"auto:F"`` is F × the knee
(docs/methodology.md).  Every A repetition of a derived-rate cell is then held to
``knee_factor`` × its pipeline's floor (``ABOVE_KNEE``, :func:`floor_of`).

The probes are not repetitions: no CSV row, only the manifest's ``rate_derivation.probes``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from kbench.engine import floor as floor_mod
from kbench.engine import rules
from kbench.engine.cell import Cell
from kbench.engine.status import Status
from kbench.engine.transports.base import RunResult, TransportError
from kbench.experiments import registry

__all__ = ["FLOOR_FRACTION", "PROBE_FRACTIONS", "derive", "floor_of", "passes", "pipeline_key", "probe_cells"]

#: The probe rates, as fractions of the slowest saturated median: from the producer's own
#: saturation down, about 30 % apart, to 5 % (below which the run is not worth calling a load).
PROBE_FRACTIONS = (1.0, 0.7, 0.5, 0.35, 0.25, 0.18, 0.12, 0.08, 0.05)
#: The latency floor's probe rate, as a fraction of the slowest saturated median (the lowest probe).
FLOOR_FRACTION = PROBE_FRACTIONS[-1]

#: One probe repetition: (cell, rate msgs/s, probe number) -> its measurements.
ProbeRun = Callable[[Cell, float, int], RunResult]


def passes(cell: Cell, res: RunResult, bound_ms: float) -> tuple[bool, str]:
    """Whether a probe repetition ran below the knee: it held its rate (within the rules'
    tolerance), delivered everything, and A's saturation check finds none of its three signals
    above ``bound_ms``; with the reasons when it did not."""
    if res.latency_delay is None:
        return False, "send delay not measured: the saturation check cannot pass"
    why = registry.premise_reasons(res, float(cell.linger_ms), bound_ms)  # A's saturation signals
    v = rules.judge(cell, res, steal_limit_pct=float("inf"))  # steal is the machine's, not the load's
    if v.status in (Status.REJECTED, Status.FAILED_LOSS, Status.FAILED_TOPIC_CONFIG):
        why.append(v.reason)
    return (not why), "; ".join(why)


def pipeline_key(c: Cell) -> tuple[Any, ...]:
    """What makes a pipeline: every setting but the rate, the experiments and the control mark."""
    return (
        c.client,
        c.codec,
        c.corpus,
        c.batch_size,
        c.linger_ms,
        c.partitions,
        c.acks,
        c.topic_compression,
        tuple(sorted(c.topic_config.items())),
        c.key_policy,
    )


def probe_cells(cells: Sequence[Cell]) -> list[Cell]:
    """One cell per distinct pipeline among the cells whose rate is derived: cells that differ
    only in their rate (a sweep of fractions) or experiments share a knee."""
    out: dict[tuple[Any, ...], Cell] = {}
    for c in cells:
        if c.saturated or isinstance(c.rate, (int, float)):
            continue
        out.setdefault(pipeline_key(c), c)
    return list(out.values())


def floor_of(derivation: Mapping[str, Any], cell: Cell, cells: Sequence[Cell]) -> float | None:
    """The latency floor (µs) of ``cell``'s pipeline recorded in a run's ``rate_derivation``
    (None: no floor measured for it, e.g. a fixed-rate cell or the producer basis)."""
    floors = derivation.get("floors_us")
    if not isinstance(floors, Mapping) or cell.saturated or isinstance(cell.rate, (int, float)):
        return None
    key = pipeline_key(cell)
    rep = next((c.cell_id for c in probe_cells(cells) if pipeline_key(c) == key), None)
    v = floors.get(rep) if rep is not None else None
    return float(v) if isinstance(v, (int, float)) else None


def _at(run: Callable[[Cell, float], RunResult], cell: Cell, rate: float, _n: int) -> RunResult:
    return run(cell, rate)


def within_floor(res: RunResult, floor_us: float | None, factor: float) -> str:
    """Why a probe's corrected p99 is above ``factor`` × the floor ('' when within, or no floor)."""
    c = res.latency_corrected
    if floor_us is None or c is None or c.p99_us <= factor * floor_us:
        return ""
    return (
        f"corrected p99 {c.p99_us / 1000:.2f} ms > knee_factor {factor:g} × floor {floor_us / 1000:.2f} ms "
        f"= {factor * floor_us / 1000:.2f} ms (past the latency knee)"
    )


def derive(
    producer: Mapping[str, Any],
    cells: Sequence[Cell],
    run: ProbeRun,
    bound_ms: float,
    fraction: float,
    log: Callable[[str], None] = lambda _: None,
    knee_factor: float = 2.0,
    floor_max_ms: float = 50.0,
) -> dict[str, Any]:
    """The derivation on the pipeline's basis, from the producer-only one (:func:`runner.derive_rate`)."""
    saturation = float(producer["saturated_medians_msgs"][producer["min_cell"]])
    probes: list[dict[str, Any]] = []
    knees: dict[str, float | None] = {}
    floors: dict[str, dict[str, Any]] = {}
    counter = [0]

    def numbered(cell: Cell, rate: float) -> RunResult:
        counter[0] += 1
        return run(cell, rate, counter[0])

    low = math.inf  # the lowest knee so far: a later pipeline's probes start at or below it
    for cell in probe_cells(cells):
        knees[cell.cell_id] = None
        floor_rate = round(saturation * FLOOR_FRACTION, 3)
        fl = floor_mod.settle(
            partial(_at, numbered, cell, floor_rate),
            floor_max_ms,
            floor_mod.FLOOR_PROBES,
            log=log,
            what=f"floor {cell.cell_id}",
        )
        floors[cell.cell_id] = {**fl.as_dict(), "rate_msgs": floor_rate}
        floor_us = fl.floor_us
        for f in PROBE_FRACTIONS:
            rate = round(saturation * f, 3)
            if rate > low:
                continue
            try:
                res = numbered(cell, rate)
                ok, why = passes(cell, res, bound_ms)
                above = within_floor(res, floor_us, knee_factor)
                if above:
                    ok, why = False, "; ".join(x for x in (why, above) if x)
            except TransportError as e:
                ok, why = False, f"probe failed: {e}"
            probes.append({"cell": cell.cell_id, "codec": cell.codec, "rate_msgs": rate, "passed": ok, "reason": why})
            log(f"knee probe {cell.cell_id} at {rate:g} msgs/s ({f:g} x saturation): {'passed' if ok else why}")
            if ok:
                knees[cell.cell_id] = rate
                low = min(low, rate)
                break
    out: dict[str, Any] = {
        **producer,
        "method": (
            "auto: the pipeline's knee, times auto_rate_fraction; the knee is the lowest over the derived-rate cells of "
            "the highest probe rate (F x the min over saturated cells of the median achieved msgs/s, F in "
            f"{', '.join(f'{f:g}' for f in PROBE_FRACTIONS)}) whose short repetition, producer and consumer at that rate, "
            f"passed A's saturation check with a corrected p99 within knee_factor {knee_factor:g} x the pipeline's latency "
            f"floor (its p99 at {FLOOR_FRACTION:g} x saturation, probed until two probes agree within "
            f"x{floor_mod.AGREE_FACTOR:g} and below floor_max_ms {floor_max_ms:g}); a later cell's probes start at the "
            "lowest knee so far"
        ),
        "knee_factor": knee_factor,
        "floors_us": {c: f["floor_us"] for c, f in floors.items()},
        "floor_probes": floors,
        "basis": "pipeline",
        "producer_saturation_msgs": saturation,
        "probes": probes,
        "knees_msgs": knees,
    }
    found = {c: k for c, k in knees.items() if k is not None}
    if len(found) == len(knees) and found:
        lowest = min(found, key=lambda c: found[c])
        knee = found[lowest]
        out["knee_cell"] = lowest
    else:
        knee = round(saturation * PROBE_FRACTIONS[-1], 3)
        missing = sorted(c for c, k in knees.items() if k is None) or ["(no cell to probe)"]
        out["fallback"] = (
            f"no probe rate passed the saturation check for {', '.join(missing)} down to "
            f"{PROBE_FRACTIONS[-1]:g} x saturation; the lowest probe rate {knee:g} msgs/s stands for the knee "
            "(each A repetition still says whether it saturated)"
        )
    out["knee_msgs"] = knee
    out["basis_msgs"] = knee
    out["rate_msgs"] = round(knee * fraction, 3)
    return out


def summary(man: Mapping[str, Any]) -> list[str]:
    """The run's premises in a few console lines, from its manifest: the topology chosen, the
    cluster's warm-up, each pipeline's latency floor and the knee (empty when none was recorded)."""
    out = []
    topo = man.get("topology")
    if isinstance(topo, Mapping) and topo.get("summary"):
        out.append(f"topology: {topo['summary']}")
    warm = man.get("warm_up")
    if isinstance(warm, Mapping):
        for cid, w in (warm.get("cells") or {}).items():
            out.append(f"cluster warm-up ({cid}): {w.get('summary', '')}")
    rd = man.get("rate_derivation")
    floors = rd.get("floor_probes") if isinstance(rd, Mapping) else None
    if isinstance(rd, Mapping) and isinstance(floors, Mapping) and floors:
        cells = man.get("cells") if isinstance(man.get("cells"), Mapping) else {}
        parts = []
        for cid, f in floors.items():
            c = cells.get(cid, {}) if isinstance(cells, Mapping) else {}
            us = f.get("floor_us")
            fig = "NA" if us is None else f"{us / 1000:.2f} ms" + ("" if f.get("settled") else " (not settled)")
            parts.append(f"{c.get('codec', cid)}/{c.get('corpus', '')} {fig}")
        out.append(
            f"latency floor (corrected p99 at {FLOOR_FRACTION:g} x saturation): {', '.join(parts)}; "
            f"knee {rd.get('knee_msgs', 0):g} msgs/s; A at {rd.get('rate_msgs', 0):g} msgs/s, "
            f"each A p99 held to knee_factor {rd.get('knee_factor', 0):g} x its floor"
        )
    return out
