"""The pipeline's knee: ``rate = "auto"`` from the saturation of the whole pipeline as A runs it.

A saturated cell (B) measures the producer alone: no consumer runs, and on a machine whose roles
share CPUs the pipeline (producer, brokers and consumer together) saturates well below it.  With
``auto_rate_basis = "pipeline"`` the runner, once the saturated cells are measured, runs short
probe repetitions of every cell whose rate is derived — as A runs it, producer and consumer at a
fixed rate — at falling fractions (:data:`PROBE_FRACTIONS`) of the slowest saturated median, and
takes per cell the highest probe rate whose repetition passes A's saturation check
(:func:`passes`).  The knee is the lowest of those over the cells; ``"auto"`` is
``auto_rate_fraction`` × the knee and ``"auto:F"`` is F × the knee (docs/methodology.md).

The probes are not repetitions: no CSV row, only the manifest's ``rate_derivation.probes``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kbench.engine import rules
from kbench.engine.cell import Cell
from kbench.engine.status import Status
from kbench.engine.transports.base import RunResult, TransportError
from kbench.experiments.a_latency import saturation_reasons

__all__ = ["PROBE_FRACTIONS", "derive", "passes", "probe_cells"]

#: The probe rates, as fractions of the slowest saturated median: from the producer's own
#: saturation down, about 30 % apart, to 5 % (below which the run is not worth calling a load).
PROBE_FRACTIONS = (1.0, 0.7, 0.5, 0.35, 0.25, 0.18, 0.12, 0.08, 0.05)

#: One probe repetition: (cell, rate msgs/s, probe number) -> its measurements.
ProbeRun = Callable[[Cell, float, int], RunResult]


def passes(cell: Cell, res: RunResult, bound_ms: float) -> tuple[bool, str]:
    """Whether a probe repetition ran below the knee: it held its rate (within the rules'
    tolerance), delivered everything, and A's saturation check finds none of its three signals
    above ``bound_ms``; with the reasons when it did not."""
    if res.latency_delay is None:
        return False, "send delay not measured: the saturation check cannot pass"
    why = saturation_reasons(res, float(cell.linger_ms), bound_ms)
    v = rules.judge(cell, res, steal_limit_pct=float("inf"))  # steal is the machine's, not the load's
    if v.status in (Status.REJECTED, Status.FAILED_LOSS, Status.FAILED_TOPIC_CONFIG):
        why.append(v.reason)
    return (not why), "; ".join(why)


def probe_cells(cells: Sequence[Cell]) -> list[Cell]:
    """One cell per distinct pipeline among the cells whose rate is derived: cells that differ
    only in their rate (a sweep of fractions) or experiments share a knee."""
    out: dict[tuple[Any, ...], Cell] = {}
    for c in cells:
        if c.saturated or isinstance(c.rate, (int, float)):
            continue
        key = (
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
        out.setdefault(key, c)
    return list(out.values())


def derive(
    producer: Mapping[str, Any],
    cells: Sequence[Cell],
    run: ProbeRun,
    bound_ms: float,
    fraction: float,
    log: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """The derivation on the pipeline's basis, from the producer-only one (:func:`runner.derive_rate`)."""
    saturation = float(producer["saturated_medians_msgs"][producer["min_cell"]])
    probes: list[dict[str, Any]] = []
    knees: dict[str, float | None] = {}
    n = 0
    for cell in probe_cells(cells):
        knees[cell.cell_id] = None
        for f in PROBE_FRACTIONS:
            rate = round(saturation * f, 3)
            n += 1
            try:
                ok, why = passes(cell, run(cell, rate, n), bound_ms)
            except TransportError as e:
                ok, why = False, f"probe failed: {e}"
            probes.append({"cell": cell.cell_id, "codec": cell.codec, "rate_msgs": rate, "passed": ok, "reason": why})
            log(f"knee probe {cell.cell_id} at {rate:g} msgs/s ({f:g} x saturation): {'passed' if ok else why}")
            if ok:
                knees[cell.cell_id] = rate
                break
    out: dict[str, Any] = {
        **producer,
        "method": (
            "auto: the pipeline's knee, times auto_rate_fraction; the knee is the lowest over the derived-rate cells of "
            "the highest probe rate (F x the min over saturated cells of the median achieved msgs/s, F in "
            f"{', '.join(f'{f:g}' for f in PROBE_FRACTIONS)}) whose short repetition, producer and consumer at that rate, "
            "passed A's saturation check"
        ),
        "basis": "pipeline",
        "producer_saturation_msgs": saturation,
        "probes": probes,
        "knees_msgs": knees,
    }
    found = {c: k for c, k in knees.items() if k is not None}
    if len(found) == len(knees) and found:
        low = min(found, key=lambda c: found[c])
        knee = found[low]
        out["knee_cell"] = low
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
