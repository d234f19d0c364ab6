"""Shared by the leak and GIL tests: this process's RSS and a busy-loop pace probe."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


def rss_kib() -> int:
    """This process's resident set size in KiB (VmRSS)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def spin(until: threading.Event, seconds: float | None = None) -> tuple[int, float]:
    """Count busy-loop iterations until ``until`` is set (or ``seconds`` passed): (count, elapsed s)."""
    n, start = 0, time.monotonic()
    while not until.is_set():
        n += 1
        if seconds is not None and n % 1024 == 0 and time.monotonic() - start > seconds:
            break
    return n, time.monotonic() - start


def repeat_for(fn: Callable[[int], object], seconds: float) -> int:
    """Call ``fn(i)`` again and again until ``seconds`` have passed (at least once): the number of
    calls.  A GIL test sized by time, not by work, holds on a fast machine as on a slow one."""
    i, start = 0, time.monotonic()
    while i == 0 or time.monotonic() - start < seconds:
        fn(i)
        i += 1
    return i
