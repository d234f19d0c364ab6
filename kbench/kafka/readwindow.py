"""A consumer's phases and its reading window (:class:`kbench.kafka.drivers.ConsumerResult`).

The group join (subscribe to the first assignment) and the wait for the first fetch are phases
of their own, never inside a rate: records/s and bytes/s are over the first record .. the last,
and CPU per record over the steady window the C loop measured (``cpu_window``: the end of the
first batch that read records .. the end of the last, process and loop thread apart)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kbench.kafka.drivers import ConsumerResult

__all__ = ["ReadWindow", "read_window"]


@dataclass(frozen=True)
class ReadWindow:
    join_s: float | None  # subscribe .. first assignment (0 in assign mode; None: never assigned)
    first_record_s: float | None  # start (subscribe or assign) .. first record; None: no record
    read_s: float  # first record .. last record
    records_per_s: float | None  # (records - 1) / read_s; None without a window
    mb_per_s: float | None  # value bytes, 10^6 per MB, the same way
    cpu_window_s: float  # the steady CPU window's wall time (0: none)
    loop_us_per_record: float | None  # the loop thread over the CPU window
    client_us_per_record: float | None  # the rest of the process (librdkafka's threads) over it

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def read_window(r: ConsumerResult) -> ReadWindow:
    """The phases and rates of one consumer run (see the module's docstring)."""
    join = (r.assigned_ns - r.start_ns) / 1e9 if r.assigned_ns else None
    first = (r.first_ns - r.start_ns) / 1e9 if r.records else None
    read = (r.last_ns - r.first_ns) / 1e9 if r.records > 1 else 0.0
    rate = (r.records - 1) / read if read > 0 else None
    mbs = r.bytes * (r.records - 1) / r.records / read / 1e6 if read > 0 else None
    n = r.win_records
    loop = r.win_loop_cpu_ns / n / 1e3 if n > 0 else None
    client = max(0, r.win_proc_cpu_ns - r.win_loop_cpu_ns) / n / 1e3 if n > 0 else None
    return ReadWindow(join, first, read, rate, mbs, r.win_ns / 1e9, loop, client)
