"""CPU accounting from /proc: per-process (and per-thread) utime/stime, system steal and iowait.

The counters are read in C (``kbench._native.proc_snapshot`` and the ``ProcSampler`` thread)
and converted from clock ticks to seconds.  Rules (DESIGN.md, experiment D):

- a pid that vanished or could not be read is ``None`` (NA), never 0;
- a counter that went down between two snapshots is flagged ``NEGATIVE`` (reported as
  ``FAILED_CPU_REGRESSED`` by experiments), its delta is kept for inspection.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kbench import _native

__all__ = [
    "CpuDelta",
    "FixedSteal",
    "ProcCpu",
    "Sampler",
    "SamplerResult",
    "Snapshot",
    "StealSource",
    "SystemCpu",
    "delta",
    "injected_steal",
    "parse_system",
    "parse_vmstat",
    "snapshot",
    "steal_pct",
    "system_cpu",
]

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


#: What reads the system's cumulative CPU counters for a steal figure: live ``/proc/stat`` by
#: default (:func:`system_cpu`); a test passes :class:`FixedSteal` to say "steal was X %".
StealSource = Callable[[], SystemCpu | None]


#: The method's steal limit (seed 000): a repetition with more CPU steal is INVALID; a plan may
#: accept more (``max_steal_pct``) and every table and report then says so.
STEAL_LIMIT_PCT = 1.0


#: The least CPU time (all CPUs together, seconds) a steal figure is computed over.  /proc/stat
#: counts in clock ticks (10 ms at USER_HZ 100): below one CPU-second a single tick of steal is
#: already 1 % or more, the default limit, so a shorter window (``--gate-sample-s 0``, a window of a
#: few ticks) reads as "cannot tell", never as 100 % steal.
STEAL_MIN_WINDOW_CPU_S = 1.0


def steal_pct(a: SystemCpu | None, b: SystemCpu | None) -> float | None:
    """The one steal rule: % of all CPU time stolen by the hypervisor from ``a`` to ``b``;
    None when it cannot tell (a side unreadable, or less than :data:`STEAL_MIN_WINDOW_CPU_S` of
    CPU time passed)."""
    if a is None or b is None or b.total - a.total < STEAL_MIN_WINDOW_CPU_S:
        return None
    return 100.0 * (b.steal - a.steal) / (b.total - a.total)


def parse_system(text: str, clk_tck: float = 100.0) -> SystemCpu | None:
    """The ``cpu`` line of a ``/proc/stat`` text as seconds (None when absent or short)."""
    for line in text.splitlines():
        if line.startswith("cpu "):
            try:
                vals = [int(x) / clk_tck for x in line.split()[1:9]]
            except ValueError:
                return None
            if len(vals) < 8:
                return None
            # total: user..steal (guest time is already inside user)
            user, nice, system, idle, iowait, irq, softirq, steal = vals
            return SystemCpu(user, nice, system, idle, iowait, irq, softirq, steal, total=sum(vals))
    return None


def parse_vmstat(text: str) -> dict[str, int]:
    """/proc/vmstat's text as counters by name (a line that is not ``name number`` is left out)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        try:
            out[name] = int(value)
        except ValueError:
            continue
    return out


def system_cpu() -> SystemCpu | None:
    """The live system counters (the default :data:`StealSource`)."""
    return snapshot([]).system


@dataclass
class FixedSteal:
    """A :data:`StealSource` whose counters advance so that any window shows exactly ``pct``
    % steal (or None when ``pct`` is None: steal not measurable).  For tests, and recorded as
    injected wherever it is used."""

    pct: float | None
    _calls: int = 0

    def __call__(self) -> SystemCpu | None:
        if self.pct is None:
            return None
        self._calls += 1
        t = 1000.0 * self._calls
        st = t * self.pct / 100.0
        return SystemCpu(
            user=t - st, nice=0.0, system=0.0, idle=0.0, iowait=0.0, irq=0.0, softirq=0.0, steal=st, total=t
        )

    def describe(self) -> str:
        return "injected: not measurable" if self.pct is None else f"injected: {self.pct:g}%"


#: Environment variable read by the command line only: a steal figure to inject instead of
#: measuring (a number, or ``none`` for "not measurable").  Tests use it; every run that uses
#: it says so in its manifest and tables.
INJECT_ENV = "KBENCH_INJECT_STEAL_PCT"


def injected_steal(environ: Mapping[str, str] | None = None) -> FixedSteal | None:
    """The :class:`FixedSteal` that :data:`INJECT_ENV` asks for, or None when it is unset."""
    v = (os.environ if environ is None else environ).get(INJECT_ENV)
    if v is None or v == "":
        return None
    if v.lower() == "none":
        return FixedSteal(None)
    try:
        return FixedSteal(float(v))
    except ValueError:
        raise ValueError(f"{INJECT_ENV}={v!r} is not a number; give a percentage or 'none'") from None


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

    @property
    def steal_pct(self) -> float | None:
        """% of all CPU time stolen by the hypervisor during the window (None = NA)."""
        return steal_pct(self.start.system, self.end.system)

    @property
    def iowait_pct(self) -> float | None:
        a, b = self.start.system, self.end.system
        if a is None or b is None or b.total <= a.total:
            return None
        return 100.0 * (b.iowait - a.iowait) / (b.total - a.total)

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
