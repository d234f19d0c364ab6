"""Warm before measuring (docs/methodology.md §2): the cluster, and each client's driver.

- The cluster: before the first measured run, short probes of the plan's first cell at a low
  fixed rate (:data:`WARM_RATE_MSGS`, producer and consumer running, every broker leading and
  following partitions) are repeated until two successive corrected p99s agree and sit below the
  plan's ``floor_max_ms`` (kbench.engine.floor.settle) — detected, not a fixed sleep.  A three-
  broker cluster on two CPUs answers its first seconds with acknowledgement latencies of seconds
  (three JVMs compiling, replicas settling): this is what catches it.  One series per client the
  plan uses, so that every client's library is loaded and its connections made too.
- A driver: each repetition starts a fresh driver process, so the steady window opens only once
  the driver is warm: at least :data:`CLIENT_WARM_S` seconds into the repetition for the client
  (the plan's ``steady_skip_s`` when larger; at most half the repetition).
- A repetition that saturated only while still warming — its per-second p99 fell from its first
  in-window second and then held flat — is ``WARMING``, not ``SATURATED`` (:func:`still_warming`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from kbench.engine import floor
from kbench.engine.cell import Cell
from kbench.engine.transports.base import RunResult

__all__ = [
    "CLIENT_WARM_S",
    "MEASURING",
    "WARM_RATE_MSGS",
    "steady_skip_s",
    "still_warming",
    "warm_cells",
    "warm_cluster",
]

#: The transports whose runs are measurements of a Kafka cluster (the others have nothing to warm).
MEASURING = ("local", "bootstrap", "testbed")
#: The cluster warm-up's fixed rate: low enough for any topology this tool runs to carry it.
WARM_RATE_MSGS = 1000.0
#: Seconds from a repetition's start before a client's driver is warm.  Java: the JVM interprets the
#: producer's send path until the JIT has compiled it (C1 after ~1,500 invocations, C2 after ~10,000;
#: at a few thousand msgs/s that is the first one to two seconds, during which send delay reaches
#: tens of ms — all four Java repetitions of a 4 s plan with no skip came out SATURATED).  The native
#: drivers (librdkafka, the Go clients) have no such phase beyond connecting, which the plan's own
#: ``steady_skip_s`` covers.
CLIENT_WARM_S: Mapping[str, float] = {"java": 2.0}
#: A first in-window second's p99 this many times the settled p99 marks a warming repetition.
WARMING_RATIO = 2.0
#: The settled half's spread: its max within this factor of its median.
SETTLED_SPREAD = 1.5


def steady_skip_s(plan_skip_s: float, client: str, duration_s: float) -> float:
    """Seconds of a repetition left out of its steady window: the plan's, at least the client's
    warm-up but never more than half the repetition (a shorter window is the minimum-window rule's
    to judge: kbench.engine.window)."""
    return max(plan_skip_s, min(CLIENT_WARM_S.get(client, 0.0), duration_s / 2))


def warm_cells(cells: Sequence[Cell]) -> list[Cell]:
    """The cells the cluster warm-up probes: the first cell of each client (the caller leaves out
    the cells that are an experiment's own run, e.g. G's catch-up: kbench.engine.session)."""
    out: dict[str, Cell] = {}
    for c in cells:
        out.setdefault(c.client, c)
    return list(out.values())


def _probe(run: Callable[[Cell], RunResult], cell: Cell, _n: int) -> RunResult:
    return run(cell)


def warm_cluster(
    cells: Sequence[Cell],
    probe: Callable[[Cell, float, int], RunResult],
    max_ms: float,
    log: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Probe each client's first cell at :data:`WARM_RATE_MSGS` until its latency settles; the
    manifest's ``warm_up`` entry (per cell: its probes' p99s and whether they settled)."""
    out: dict[str, Any] = {"rate_msgs": WARM_RATE_MSGS, "cells": {}}
    n = [0]

    def numbered(cell: Cell) -> RunResult:
        n[0] += 1
        return probe(cell, WARM_RATE_MSGS, n[0])

    for cell in warm_cells(cells):
        s = floor.settle(partial(_probe, numbered, cell), max_ms, log=log, what=f"cluster warm-up ({cell.client})")
        out["cells"][cell.cell_id] = s.as_dict()
        log(f"cluster warm-up with {cell.cell_id} ({cell.client}): {s.describe()}")
    out["settled"] = all(v["settled"] for v in out["cells"].values())
    return out


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if f == f else None


def still_warming(series: Sequence[Mapping[str, Any]], settled_max_us: float = math.inf) -> str:
    """Why a repetition's per-second producer p99 says it was still warming ('' when it does not):
    its first in-window second ≥ :data:`WARMING_RATIO` × the median of the window's second half,
    that half flat (max ≤ :data:`SETTLED_SPREAD` × its median) and healthy (its median at most
    ``settled_max_us``: a window that settled into queueing is saturated, not warming)."""
    rows = sorted(
        (r for r in series if r.get("role") == "producer" and str(r.get("in_window")) == "1"),
        key=lambda r: float(r.get("second", 0)),
    )
    p99s = [p for r in rows if (p := _num(r.get("p99_us"))) is not None]
    if len(p99s) < 3:
        return ""
    late = p99s[len(p99s) // 2 :]
    settled = statistics.median(late)
    if settled <= 0 or p99s[0] < WARMING_RATIO * settled or max(late) > SETTLED_SPREAD * settled:
        return ""
    if settled > settled_max_us:
        return ""
    return (
        f"still warming: per-second p99 {p99s[0] / 1000:.1f} ms in the window's first second, settling at "
        f"{settled / 1000:.1f} ms over its second half (lengthen steady_skip_s, or a warm-up)"
    )
