"""Experiment G's own sweep axes (a cell's ``extras``): the consumer group's size and fetch
settings and the backlog; which cells are catch-up runs; the consumer's fetch properties a cell's
axes make; the plan keys, their checks, and where such a sweep may run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kbench.engine.cell import Cell
from kbench.engine.plan_schema import GROUP_CLIENTS, PlanError
from kbench.engine.plan_values import as_list, axis_values, bounded, number_value
from kbench.kafka.clients import family as client_family

__all__ = [
    "AXES",
    "AXIS_DEFAULTS",
    "SWEEP_KEYS",
    "axis",
    "catch_up",
    "fetch_props",
    "local_only",
    "sweep_axes",
]

#: The catch-up axes of a sweep with their defaults (Kafka's, one member); ``backlog_bytes`` > 0
#: makes a sweep's cells catch-up runs.
AXIS_DEFAULTS = (
    ("consumers", 1),
    ("fetch_max_bytes", 52428800),
    ("max_partition_fetch_bytes", 1048576),
    ("fetch_min_bytes", 1),
)
_DEFAULTS: dict[str, int] = {**dict(AXIS_DEFAULTS), "backlog_bytes": 0}

#: The catch-up axes a row carries (the cell's extras), besides the labels.
AXES = ("consumers", "backlog_bytes", "fetch_max_bytes", "max_partition_fetch_bytes", "fetch_min_bytes")

#: The plan keys of a [[sweep]] these axes come from (docs/plan-format.md).
SWEEP_KEYS = {
    "consumers": "catch-up: members of the consumer group that drains the backlog, or a list (default 1)",
    "backlog_bytes": "catch-up: payload bytes of the backlog produced before the drain (> 0 makes the cell a catch-up run)",
    "fetch_max_bytes": "catch-up: the consumer's fetch.max.bytes, or a list (default 52428800, Kafka's)",
    "max_partition_fetch_bytes": "catch-up: the consumer's max.partition.fetch.bytes, or a list (default 1048576)",
    "fetch_min_bytes": "catch-up: the consumer's fetch.min.bytes, or a list (default 1)",
}


def axis(cell: Cell, name: str) -> int:
    """The cell's value of one catch-up axis (its default for a cell made without it)."""
    return int(cell.extras.get(name, _DEFAULTS[name]))


def catch_up(cell: Cell) -> bool:
    """A backlog is produced, then drained by a consumer group (``backlog_bytes`` > 0)."""
    return axis(cell, "backlog_bytes") > 0


def fetch_props(cell: Cell) -> dict[str, str]:
    """The consumer's fetch settings as client properties.  librdkafka refuses a
    ``fetch.max.bytes`` below ``message.max.bytes`` (default 1000000; a consumer sends only small
    requests): that is lowered with it, to at least librdkafka's minimum 1000."""
    fmx = axis(cell, "fetch_max_bytes")
    return {
        "message.max.bytes": str(max(1000, min(1000000, fmx))),
        "fetch.max.bytes": str(fmx),
        "max.partition.fetch.bytes": str(axis(cell, "max_partition_fetch_bytes")),
        "fetch.min.bytes": str(axis(cell, "fetch_min_bytes")),
    }


def sweep_axes(w: str, tbl: Mapping[str, Any], clients: Sequence[str]) -> dict[str, tuple[Any, ...]]:
    """A sweep's catch-up axes (its extras): refused when set without a backlog, when a fetch
    size is below librdkafka's smallest, or when a client of the sweep has no consumer group."""
    catch = {
        k: axis_values(f"{w}{k}", [int(number_value(f"{w}{k}", v, integer=True)) for v in as_list(tbl.get(k, d))])
        for k, d in AXIS_DEFAULTS
    }
    if any(v < 1000 for v in catch["fetch_max_bytes"]):
        raise PlanError(f"{w}fetch_max_bytes: must be >= 1000 (librdkafka's smallest message.max.bytes)")
    backlog = int(bounded(f"{w}backlog_bytes", tbl.get("backlog_bytes", 0), "backlog_bytes"))
    if not backlog and any(k in tbl for k in catch):
        raise PlanError(f"{w}backlog_bytes: consumers and fetch settings are catch-up axes; give backlog_bytes > 0")
    if backlog and not {client_family(c) for c in clients} <= set(GROUP_CLIENTS):
        raise PlanError(
            f"{w}client: a catch-up drain (backlog_bytes) needs consumer groups, which only the "
            f"{' and '.join(GROUP_CLIENTS)} drivers have; drop the others"
        )
    return {**{k: tuple(v) for k, v in catch.items()}, "backlog_bytes": (backlog,)}


def local_only(extras: Mapping[str, Sequence[Any]]) -> str:
    """A catch-up drain runs on this machine's driver pool (the Dask pool runs timed repetitions only)."""
    if any(b > 0 for b in extras.get("backlog_bytes", (0,))):
        return (
            "backlog_bytes: a catch-up drain runs on this machine's driver pool, not on Dask "
            "workers; drop transport.workers (--workers) or run this sweep in a plan of its own"
        )
    return ""
