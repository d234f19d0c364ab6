"""CPU accounting from /proc: per-process (and per-thread) utime/stime, system steal and iowait.

The counters are read in C (``kbench._native.proc_snapshot`` and the ``ProcSampler`` thread)
and converted from clock ticks to seconds.  Rules (DESIGN.md, experiment D):

- a pid that vanished or could not be read is ``None`` (NA), never 0;
- a counter that went down between two snapshots is flagged ``NEGATIVE`` (reported as
  ``FAILED_CPU_REGRESSED`` by experiments), its delta is kept for inspection.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kbench import _native

__all__ = ["CpuDelta", "ProcCpu", "Sampler", "SamplerResult", "Snapshot", "SystemCpu", "delta", "snapshot"]

OK, NA, NEGATIVE = "OK", "NA", "NEGATIVE"


@dataclass(frozen=True)
class ProcCpu:
    """Cumulative CPU seconds of one process (tid None) or thread; None = NA (gone or unreadable)."""

    pid: int
    tid: int | None
    comm: str | None
    user_s: float | None
    sys_s: float | None

    @property
    def ok(self) -> bool:
        return self.user_s is not None and self.sys_s is not None


@dataclass(frozen=True)
class SystemCpu:
    """Cumulative system-wide CPU seconds from the first line of /proc/stat (all CPUs)."""

    user: float
    nice: float
    system: float
    idle: float
    iowait: float
    irq: float
    softirq: float
    steal: float
    total: float


@dataclass(frozen=True)
class Snapshot:
    t_ns: int
    system: SystemCpu | None
    procs: tuple[ProcCpu, ...]

    def get(self, pid: int, tid: int | None = None) -> ProcCpu | None:
        for p in self.procs:
            if p.pid == pid and p.tid == tid:
                return p
        return None


@dataclass(frozen=True)
class CpuDelta:
    """CPU seconds a process or thread used between two snapshots."""

    pid: int
    tid: int | None
    comm: str | None
    user_s: float | None
    sys_s: float | None
    status: str  # OK, NA (vanished/unreadable at either end) or NEGATIVE (counter went down)

    @property
    def total_s(self) -> float | None:
        if self.user_s is None or self.sys_s is None:
            return None
        return self.user_s + self.sys_s


@dataclass
class SamplerResult:
    start: Snapshot
    end: Snapshot
    deltas: list[CpuDelta]
    series: list[Snapshot] = field(default_factory=list)

    @property
    def elapsed_s(self) -> float:
        return (self.end.t_ns - self.start.t_ns) / 1e9

    def _sys_pct(self, attr: str) -> float | None:
        a, b = self.start.system, self.end.system
        if a is None or b is None or b.total <= a.total:
            return None
        return 100.0 * (getattr(b, attr) - getattr(a, attr)) / (b.total - a.total)

    @property
    def steal_pct(self) -> float | None:
        """% of all CPU time stolen by the hypervisor during the window (None = NA)."""
        return self._sys_pct("steal")

    @property
    def iowait_pct(self) -> float | None:
        return self._sys_pct("iowait")

    def for_pid(self, pid: int) -> CpuDelta | None:
        for d in self.deltas:
            if d.pid == pid and d.tid is None:
                return d
        return None


def _system(d: dict[str, float] | None) -> SystemCpu | None:
    return SystemCpu(**d) if d is not None else None


def _snap(raw: tuple[int, dict[str, float] | None, list[tuple[Any, ...]]]) -> Snapshot:
    t, sysd, recs = raw
    return Snapshot(t, _system(sysd), tuple(ProcCpu(*r) for r in recs))


def snapshot(pids: Iterable[int], threads: bool = False) -> Snapshot:
    """Read the counters of ``pids`` (and their threads) and of the system now."""
    return _snap(_native.proc_snapshot(list(pids), threads=threads))


def delta(a: Snapshot, b: Snapshot) -> list[CpuDelta]:
    """Per process/thread CPU used from ``a`` to ``b``; NA when missing at either end."""
    out: list[CpuDelta] = []
    for p in a.procs:
        q = b.get(p.pid, p.tid)
        if not p.ok or q is None or not q.ok:
            out.append(CpuDelta(p.pid, p.tid, p.comm or (q.comm if q else None), None, None, NA))
            continue
        assert p.user_s is not None and p.sys_s is not None and q.user_s is not None and q.sys_s is not None
        du, ds = q.user_s - p.user_s, q.sys_s - p.sys_s
        out.append(CpuDelta(p.pid, p.tid, q.comm, du, ds, NEGATIVE if du < 0 or ds < 0 else OK))
    return out


class Sampler:
    """Start/end snapshots plus a background C thread sampling every ``interval`` seconds.

    ``with Sampler(pids) as s: ...`` then ``s.result``; or ``start()`` / ``stop()``.
    """

    def __init__(self, pids: Iterable[int], threads: bool = False, interval: float = 1.0) -> None:
        self.pids = list(pids)
        if not self.pids:
            raise ValueError("Sampler needs at least one pid")
        self.threads = threads
        self.interval = interval
        self._native = _native.ProcSampler(self.pids, interval=interval)
        self._start: Snapshot | None = None
        self.result: SamplerResult | None = None

    def start(self) -> Sampler:
        self._start = snapshot(self.pids, self.threads)
        self._native.start()
        return self

    def stop(self) -> SamplerResult:
        if self._start is None:
            raise RuntimeError("Sampler.stop() before start()")
        series = [_snap(s) for s in self._native.stop()]
        end = snapshot(self.pids, self.threads)
        self.result = SamplerResult(self._start, end, delta(self._start, end), series)
        return self.result

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
