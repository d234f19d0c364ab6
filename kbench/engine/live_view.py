"""Showing a :class:`~kbench.engine.live.LiveBoard`: on a terminal a status refreshed each second
(rich), elsewhere a line every :data:`LINE_EVERY_S` seconds; both also as a JSON object per line
in the run's run.log, and one line when each repetition ends with its status."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from kbench.engine.live import LiveBoard, LiveSnapshot, describe
from kbench.engine.ticker import Ticker
from kbench.model.text import raw

__all__ = ["LINE_EVERY_S", "LiveView"]

#: Seconds between two status lines in logs and non-terminal output.
LINE_EVERY_S = 5.0


def _na(v: float | None, fmt: str, unit: str = "") -> str:
    return "n/a" if v is None else format(v, fmt) + unit


def render(s: LiveSnapshot, progress: str = "") -> Group:
    """The terminal status: the run's progress, then the repetition's figures."""
    f = s.figures
    t = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
    for col in ("msgs/s", "MB/s", "RTT p50", "RTT p99", "CPU prod", "CPU cons", "CPU broker"):
        t.add_column(col, justify="right", no_wrap=True)
    t.add_row(
        _na(f.msgs_s, ",.0f"),
        _na(f.mb_s, ".2f"),
        _na(f.p50_ms, ".1f", " ms"),
        _na(f.p99_ms, ".1f", " ms"),
        _na(f.producer_cpu_pct, ".0f", " %"),
        _na(f.consumer_cpu_pct, ".0f", " %"),
        _na(f.broker_cpu_pct, ".0f", " %"),
    )
    stage = f", {f.stage}" if f.stage else ""
    rep = Text(f"{s.label} ({s.phase}{stage}) {s.rep_elapsed_s:.0f} s" + (f"  [{f.source}]" if f.source else ""))
    done = ", ".join(f"{k} {v}" for k, v in sorted(s.statuses.items())) or "none yet"
    head = Text(progress or f"{s.reps_done}/{s.reps_total} repetitions", style="bold")
    tail = Text(f"ended: {done}" + (f"; last {s.last_label} {s.last_status}" if s.last_status else ""))
    return Group(head, rep, t, tail)


@dataclass
class LiveView:
    """Runs while a ``kbench run`` collects: ``start()``, then ``stop()`` (also as a context manager)."""

    board: LiveBoard
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    #: one JSON-able object per call, appended to run.log by the runner (None: no log)
    log: Callable[[dict[str, Any]], None] | None = None
    terminal: bool | None = None  # None: whether ``stream`` is a terminal
    every_s: float = LINE_EVERY_S
    #: on a terminal, stdout too goes above the status (when stdout is that terminal as well)
    redirect_stdout: bool = False
    progress: str = ""
    _ticker: Ticker | None = None
    _live: Live | None = None

    @property
    def on_terminal(self) -> bool:
        if self.terminal is None:
            self.terminal = bool(getattr(self.stream, "isatty", lambda: False)())
        return self.terminal

    def set_progress(self, text: str) -> None:
        self.progress = text

    def _ended(self, s: LiveSnapshot) -> None:
        line = f"ended {s.last_label}: {s.last_status}"
        if self._live is not None:
            self._live.console.print(Text(line))
        else:
            self.stream.write(f"kbench: {line}\n")
            self.stream.flush()
        if self.log is not None:
            self.log({"event": "repetition ended", "label": s.last_label, "status": s.last_status})

    def _line(self) -> None:
        s = self.board.snapshot()
        # nothing planned yet (the plan, corpus and cluster still loading): no figures to give, and a
        # run refused there (a bad corpus) ends with its one error line, not "0/0 starting", and
        # leaves no run.log behind (the run directory it made stays empty, so it is removed)
        if not s.reps_total:
            return
        if self.log is not None:
            self.log({"event": "live", **s.as_dict()})
        if self._live is None:
            self.stream.write(f"kbench: {describe(s)}\n")
            self.stream.flush()

    def start(self) -> LiveView:
        self.board.listeners.append(self._ended)
        if self.on_terminal:
            console = Console(file=raw(self.stream), force_terminal=True)
            self._live = Live(
                get_renderable=lambda: render(self.board.snapshot(), self.progress),
                console=console,
                refresh_per_second=1,
                transient=False,
                redirect_stdout=self.redirect_stdout,
                redirect_stderr=True,
            )
            self._live.start()
        self._ticker = Ticker(self._line, self.every_s, "kbench-live-view")
        self._ticker.start()
        return self

    def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.stop()
        if self._ended in self.board.listeners:
            self.board.listeners.remove(self._ended)
        if self._live is not None:
            self._live.stop()
            self._live = None

    def __enter__(self) -> LiveView:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
