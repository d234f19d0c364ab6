"""Experiment G's backlog sized from the measured drain rate, so that a drain lasts at least
:data:`MIN_DRAIN_S` (docs/methodology.md §4): a drain of a fraction of a second is start-up and
scheduling, not the consumer group's rate.

The cell's warm-up drains its planned ``backlog_bytes``; a drain shorter than
``MIN_DRAIN_S × RESIZE_BELOW`` is resized from its bytes per second to ``rate × MIN_DRAIN_S × MARGIN``
(never below the plan's, at most :func:`backlog_cap`: :data:`MEMORY_SHARE` of the machine's memory,
and never over :data:`MAX_BACKLOG_BYTES`), and the warm-up runs again with it
until a drain lasts long enough (at most :data:`MAX_SIZINGS` warm-ups).  A warm-up that only just
passes MIN_DRAIN_S is resized too: the repetitions after it drain faster than a warm-up.  The manifest's ``backlog`` entry records each cell's
sizing; every repetition of the cell runs with it (its rows' ``backlog_bytes`` say so).  The
runner reaches this through the registry (Experiment.tuning, run by kbench.engine.tune).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from kbench.engine.cell import Cell
from kbench.engine.machine import memory_total
from kbench.engine.transports.base import RunResult
from kbench.experiments.g_axes import axis, catch_up
from kbench.experiments.spec import Tuning

__all__ = [
    "CATCH_UP_RUN_S",
    "MARGIN",
    "MAX_BACKLOG_BYTES",
    "MAX_SIZINGS",
    "MEMORY_SHARE",
    "backlog_cap",
    "MIN_DRAIN_S",
    "RESIZE_BELOW",
    "TUNING",
    "next_size",
    "sized",
]

#: The drain the sizing aims at, at least (the catch-up plan's min_window_s, 5 s, judges it: a
#: shorter drain is SHORT_WINDOW).
MIN_DRAIN_S = 5.0
#: The drain the sizing aims at, over MIN_DRAIN_S: a warm-up's rate underestimates a warm drain's,
#: and a two-member group shares the 2-vCPU VM with the broker: in
#: benchmarks/results/catch-up-2026-12-04e its repetitions drained lz4 up to 2.07x faster than the
#: warm-up the backlog was sized from (1.5 then left two drains at 3.6 and 4.6 s).
MARGIN = 2.5
#: A warm-up drain shorter than MIN_DRAIN_S x RESIZE_BELOW is resized (a two-member group of the
#: 2-vCPU VM drained 8 GiB of ``none`` in 5.6 s at its warm-up and in 4.7 s at a repetition).
RESIZE_BELOW = 1.25
#: The largest backlog sized (disk and the time to produce it); a drain still shorter is SHORT_WINDOW.
#: A two-member group of the 2-vCPU VM drains ``none`` at up to 1.8 GB/s: 5 s x 1.5 of it is 14 GB.
MAX_BACKLOG_BYTES = 16 << 30
#: The largest share of the machine's memory (MemTotal) a sized backlog may take, in payload
#: bytes (uncompressed, the broker's log holds about that much; compressed, less).  The drain is
#: meant to read the backlog from the page cache, beside the members' pre-fetch queues (up to
#: 1 GiB each) and the broker: on the 24 GiB VM a 17.2 GB uncompressed backlog left 235-700 MB
#: free as the drain began, and the drain read 0.7-3.0 GB back from disk while kswapd scanned up
#: to 650,000 pages (benchmarks/README.md, "The uncompressed drains and memory").
MEMORY_SHARE = 0.5
#: Warm-ups of a catch-up cell spent on sizing its backlog, at most.
MAX_SIZINGS = 3
#: Seconds of one catch-up run, warm-up or repetition (kbench.engine.estimate): producing the
#: backlog, sized so that a drain lasts MIN_DRAIN_S x MARGIN, writing it back to disk, reading it
#: into the page cache, draining it, and the deleted topic's files removed.  (T - 13 s of set-up -
#: 42 s of per-run overhead) / 42 over the three catch-up runs of 2026-12-05 on disks that write
#: 260-520 MB/s, which differ by how fast their warm-ups drained (the backlogs are sized from
#: that): catch-up-2026-12-05c (since replaced; backlogs of 6.4-12.6 GB, T = 2,540 s: 59 s per
#: run), catch-up-2026-12-05d (since replaced; 6.2-12.6 GB, T = 3,128 s: 73 s) and
#: catch-up-2026-12-05e (since replaced; 4.5-12.6 GB, on a fresh VM, with the page-in; T = 2,435 s:
#: 57 s); their mean.  catch-up-2026-12-06 (5.9-12.6 GB, with the host-speed probes; 43 runs, one
#: a retry, T = 2,617 s: 60 s) is within it.
CATCH_UP_RUN_S = 63.0


def backlog_cap(memory_bytes: int | None) -> int:
    """The largest backlog sized on a machine with ``memory_bytes`` of memory (None: unknown, so
    :data:`MAX_BACKLOG_BYTES`)."""
    if not memory_bytes or memory_bytes <= 0:
        return MAX_BACKLOG_BYTES
    return min(MAX_BACKLOG_BYTES, int(memory_bytes * MEMORY_SHARE))


def next_size(res: RunResult, current: int, cap: int = MAX_BACKLOG_BYTES) -> int | None:
    """The backlog a drain of ``MIN_DRAIN_S × MARGIN`` needs, from a drain of ``current`` bytes,
    at most ``cap`` (None: this drain lasted ``MIN_DRAIN_S × RESIZE_BELOW`` or longer, measured
    nothing to size from, or ``current`` is already at the cap)."""
    span, nbytes = res.drain.get("span_s"), res.drain.get("bytes")
    if not isinstance(span, (int, float)) or not isinstance(nbytes, (int, float)) or span <= 0 or nbytes <= 0:
        return None
    if span >= MIN_DRAIN_S * RESIZE_BELOW:
        return None
    want = int(math.ceil(nbytes / span * MIN_DRAIN_S * MARGIN))
    nxt = min(cap, max(current, want))
    return nxt if nxt > current else None


def sized(cell: Cell, sizing: Mapping[str, Any]) -> Cell:
    """``cell`` with the backlog its sizing recorded (``sizing``: the manifest's ``backlog``)."""
    entry = sizing.get(cell.cell_id)
    return _apply(cell, entry if isinstance(entry, Mapping) else None)


def _apply(cell: Cell, entry: Mapping[str, Any] | None) -> Cell:
    if not catch_up(cell) or entry is None:
        return cell
    b = entry.get("backlog_bytes")
    if not isinstance(b, int) or b <= 0:
        return cell
    return dataclasses.replace(cell, extras={**cell.extras, "backlog_bytes": int(b)})


def _step(cell: Cell, res: RunResult) -> tuple[dict[str, Any], str] | None:
    """After a catch-up cell's warm-up (``cell`` with the backlog it drained): the backlog its next
    warm-up drains, with the drain it was sized from, and the log line saying so."""
    if not catch_up(cell):
        return None
    cur = axis(cell, "backlog_bytes")
    cap = backlog_cap(memory_total())
    nxt = next_size(res, cur, cap)
    if nxt is None:
        return None
    capped = f" (the cap: {MEMORY_SHARE:.0%} of memory, at most {MAX_BACKLOG_BYTES >> 30} GiB)" if nxt == cap else ""
    line = f"drain of {cur} bytes took {res.drain.get('span_s')} s; backlog sized to {nxt} bytes{capped}"
    return {"backlog_bytes": nxt, "from": dict(res.drain)}, line


#: G's tuning of a catch-up cell by its warm-ups (the manifest's ``backlog`` entry).
TUNING = Tuning(key="backlog", apply=_apply, step=_step, max_rounds=MAX_SIZINGS)
