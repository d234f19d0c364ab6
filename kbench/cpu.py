"""Cumulative CPU counters of a process from ``/proc/<pid>/stat`` (utime, stime in seconds).

A vanished or unreadable pid gives ``None`` (reported as ``NA``, never 0).  This reads two
numbers per pid per run (start and end of the steady window), not a hot path.
INTEGRATION POINT: the C sampler of the real-Kafka issue (``kbench._native.proc_snapshot``)
replaces :func:`read_pid_cpu` where it exists.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PidCpu", "delta", "read_pid_cpu"]

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class PidCpu:
    pid: int
    utime_s: float
    stime_s: float


def read_pid_cpu(pid: int, proc: Path = Path("/proc")) -> PidCpu | None:
    """utime and stime of ``pid`` (all its threads, live and exited) or None if unreadable."""
    try:
        text = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    # comm (field 2) may hold spaces and parentheses: split after the last ')'.
    rest = text[text.rfind(")") + 2 :].split()
    try:
        return PidCpu(pid, int(rest[11]) / _TICK, int(rest[12]) / _TICK)
    except (IndexError, ValueError):
        return None


def delta(a: PidCpu | None, b: PidCpu | None) -> tuple[float | None, float | None, bool]:
    """(usr_s, sys_s, regressed) between two readings; None when either is missing."""
    if a is None or b is None:
        return None, None, False
    du, ds = b.utime_s - a.utime_s, b.stime_s - a.stime_s
    return du, ds, (du < 0 or ds < 0)
