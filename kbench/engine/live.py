"""What a run is doing right now: the figures of the repetition in progress, shared by the
terminal status, the 5-second log line and the Prometheus endpoint (``kbench run --metrics-port``).

A :class:`LiveBoard` is written by the runner (which repetition, its end and status) and by the
transport while a repetition runs (:class:`LiveFigures`, each second from the drivers' own
reports: kbench.engine.transports.live_feed); readers take a consistent copy (:meth:`snapshot`).
A figure nobody measured stays None and is shown as "n/a", never as 0.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["LiveBoard", "LiveFigures", "LiveSnapshot"]


@dataclass(frozen=True)
class LiveFigures:
    """One second of the repetition in progress (None: not measured by this transport)."""

    msgs_s: float | None = None  # records acknowledged per second (the producer's statistics)
    mb_s: float | None = None  # payload MB (10^6 bytes) per second
    p50_ms: float | None = None  # the producer's request round trip p50 (last statistics window)
    p99_ms: float | None = None
    producer_cpu_pct: float | None = None  # % of one core, over the last second
    consumer_cpu_pct: float | None = None  # summed over the consumers (a group's members)
    broker_cpu_pct: float | None = None  # summed over the brokers
    source: str = ""  # where the figures came from
    stage: str = ""  # a repetition made of stages (G: backlog, write-back, drain): the one in progress


@dataclass(frozen=True)
class LiveSnapshot:
    """A consistent copy of the board."""

    label: str  # the repetition in progress ("fixed-000 rep 2/3"), or the last event
    phase: str  # starting | warm-up | running | done
    reps_done: int
    reps_total: int
    rep_elapsed_s: float
    run_elapsed_s: float
    figures: LiveFigures
    last_status: str  # the status of the last repetition that ended ("" before the first)
    last_label: str
    statuses: dict[str, int]  # repetitions ended, by status

    def as_dict(self) -> dict[str, Any]:
        f = self.figures
        return {
            "label": self.label,
            "phase": self.phase,
            "reps_done": self.reps_done,
            "reps_total": self.reps_total,
            "rep_elapsed_s": round(self.rep_elapsed_s, 1),
            "run_elapsed_s": round(self.run_elapsed_s, 1),
            "msgs_s": f.msgs_s,
            "mb_s": f.mb_s,
            "p50_ms": f.p50_ms,
            "p99_ms": f.p99_ms,
            "producer_cpu_pct": f.producer_cpu_pct,
            "consumer_cpu_pct": f.consumer_cpu_pct,
            "broker_cpu_pct": f.broker_cpu_pct,
            "figures_source": f.source,
            "stage": f.stage,
            "last_status": self.last_status,
            "last_label": self.last_label,
            "statuses": dict(self.statuses),
        }


def _na(v: float | None, fmt: str) -> str:
    return "n/a" if v is None else format(v, fmt)


def describe(s: LiveSnapshot) -> str:
    """One plain line of a snapshot (the log line, the non-terminal output)."""
    f = s.figures
    last = f"; last {s.last_label} {s.last_status}" if s.last_status else ""
    stage = f" [{f.stage}]" if f.stage else ""
    phase = "" if s.label.endswith(s.phase) else f" {s.phase}"  # "x-000 warm-up", not "x-000 warm-up warm-up"
    return (
        f"{s.reps_done}/{s.reps_total} {s.label}{phase}{stage} {s.rep_elapsed_s:.0f}s: "
        f"{_na(f.msgs_s, ',.0f')} msgs/s {_na(f.mb_s, '.2f')} MB/s, RTT p50 {_na(f.p50_ms, '.1f')} "
        f"p99 {_na(f.p99_ms, '.1f')} ms, CPU producer {_na(f.producer_cpu_pct, '.0f')} % consumer "
        f"{_na(f.consumer_cpu_pct, '.0f')} % broker {_na(f.broker_cpu_pct, '.0f')} %"
        f"{f' ({f.source})' if f.source else ''}{last}"
    )


@dataclass
class LiveBoard:
    """The live state of one ``kbench run`` (thread-safe)."""

    reps_total: int = 0
    clock: Callable[[], float] = time.monotonic
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _label: str = "starting"
    _phase: str = "starting"
    _done: int = 0
    _t_run: float = 0.0
    _t_rep: float = 0.0
    _figures: LiveFigures = field(default_factory=LiveFigures)
    _last_status: str = ""
    _last_label: str = ""
    _statuses: dict[str, int] = field(default_factory=dict)
    #: called with each repetition's end (snapshot): the log line and the view's own line
    listeners: list[Callable[[LiveSnapshot], None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._t_run = self._t_rep = self.clock()

    def begin(self, label: str, phase: str = "running") -> None:
        """A repetition (or warm-up) starts: its figures start empty."""
        with self._lock:
            self._label, self._phase, self._t_rep = label, phase, self.clock()
            self._figures = LiveFigures()

    def update(self, figures: LiveFigures) -> None:
        """The transport's figures of the last second."""
        with self._lock:
            self._figures = figures

    def merge(self, **kw: Any) -> None:
        """Set some figures, keep the others."""
        with self._lock:
            self._figures = replace(self._figures, **kw)

    def end(self, label: str, status: str, counted: bool = True) -> None:
        """A repetition ended with ``status``; ``counted``: it is one of ``reps_total``."""
        with self._lock:
            self._last_status, self._last_label, self._phase = status, label, "done"
            if counted:
                self._done += 1
                self._statuses[status] = self._statuses.get(status, 0) + 1
        snap = self.snapshot()
        for f in list(self.listeners):
            f(snap)

    def add_total(self, n: int) -> None:
        with self._lock:
            self.reps_total += n

    def snapshot(self) -> LiveSnapshot:
        now = self.clock()
        with self._lock:
            return LiveSnapshot(
                label=self._label,
                phase=self._phase,
                reps_done=self._done,
                reps_total=self.reps_total,
                rep_elapsed_s=now - self._t_rep,
                run_elapsed_s=now - self._t_run,
                figures=self._figures,
                last_status=self._last_status,
                last_label=self._last_label,
                statuses=dict(self._statuses),
            )
