"""Per-second CPU of every role and NIC bytes of every emulated host, sampled by the runner.

One thread reads, at each whole second of CLOCK_MONOTONIC (the boundaries of the drivers'
intervals, docs/drivers.md section 4.4), every role's process CPU from ``/proc/<pid>/stat`` (the C
reader of :mod:`kbench.kafka.procstat`: the same counters as a role's window) and, on the testbed,
every host's NIC counters; once more at :meth:`PerSecond.stop`.  It runs in the runner's process,
outside every measured one, so it is the same for every client's driver; a read costs well under a
millisecond of the runner's CPU per second (NIC counters: a few ms on the testbed).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kbench.kafka import procstat

__all__ = ["PerSecond", "SecondSample"]


@dataclass(frozen=True)
class SecondSample:
    """Cumulative counters read at ``t_ns`` (monotonic): CPU (user_s, sys_s) by role (None:
    unreadable or gone) and NIC (tx_bytes, rx_bytes) by host."""

    t_ns: int
    cpu: Mapping[str, tuple[float, float] | None]
    nic: Mapping[str, tuple[int, int]]


@dataclass
class PerSecond:
    """Samples roles' CPU (``pids``: role → pid, more may be added while it runs) and ``nic``."""

    pids: dict[str, int]
    nic: Callable[[], Mapping[str, tuple[int, int]]] | None = None
    width_ns: int = 1_000_000_000
    samples: list[SecondSample] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _thread: threading.Thread | None = None

    def add(self, role: str, pid: int) -> None:
        with self._lock:
            self.pids[role] = pid

    def _sample(self) -> None:
        with self._lock:
            pids = dict(self.pids)
        snap = procstat.snapshot(pids.values())
        t = time.monotonic_ns()
        cpu: dict[str, tuple[float, float] | None] = {}
        for role, pid in pids.items():
            c = snap.get(pid)
            cpu[role] = (c.user_s, c.sys_s) if c is not None and c.user_s is not None and c.sys_s is not None else None
        try:
            nic = dict(self.nic()) if self.nic else {}
        except OSError:
            nic = {}
        self.samples.append(SecondSample(t, cpu, nic))

    def _loop(self) -> None:
        while True:
            now = time.monotonic_ns()
            nxt = (now // self.width_ns + 1) * self.width_ns
            if self._stop.wait((nxt - now) / 1e9):  # a measurement schedule; set only by stop()
                return
            self._sample()

    def start(self) -> PerSecond:
        self._sample()
        self._thread = threading.Thread(target=self._loop, name="kbench-persecond", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> list[SecondSample]:
        """Stop the thread, take the last sample (once), return them all (in time order)."""
        if not self._stop.is_set():
            self._stop.set()
            if self._thread is not None:
                self._thread.join()
            self._sample()
        return list(self.samples)
