"""Experiment G's own cell axes: which cells are catch-up runs (a backlog produced, then drained
by a consumer group) and the consumer's fetch settings a cell's axes make."""

from __future__ import annotations

from kbench.engine.cell import Cell

__all__ = ["catch_up", "fetch_props"]


def catch_up(cell: Cell) -> bool:
    """A backlog is produced, then drained by a consumer group (``backlog_bytes`` > 0)."""
    return cell.backlog_bytes > 0


def fetch_props(cell: Cell) -> dict[str, str]:
    """The consumer's fetch settings as client properties.  librdkafka refuses a
    ``fetch.max.bytes`` below ``message.max.bytes`` (default 1000000; a consumer sends only small
    requests): that is lowered with it, to at least librdkafka's minimum 1000."""
    return {
        "message.max.bytes": str(max(1000, min(1000000, cell.fetch_max_bytes))),
        "fetch.max.bytes": str(cell.fetch_max_bytes),
        "max.partition.fetch.bytes": str(cell.max_partition_fetch_bytes),
        "fetch.min.bytes": str(cell.fetch_min_bytes),
    }
