"""A progress line with an ETA: runs done of total, current cell, elapsed and remaining time.

The ETA is the planned seconds still to run, scaled by the ratio of actual to planned
seconds observed so far (so set-up overheads such as topic creation are included).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from kbench.model.text import raw, terminal_safe

__all__ = ["Progress", "fmt_duration"]


def fmt_duration(s: float) -> str:
    s = max(0, int(round(s)))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}h{m:02d}m{sec:02d}s" if h else (f"{m}m{sec:02d}s" if m else f"{sec}s")


@dataclass
class Progress:
    total_runs: int
    planned_s: float  # planned seconds of all runs still to do at start
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    clock: Callable[[], float] = time.monotonic
    width: int = 24
    #: when set, each line goes here instead of the stream (a live terminal status shows it)
    sink: Callable[[str], None] | None = None
    done_runs: int = 0
    done_planned_s: float = 0.0
    _t0: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        self._t0 = self.clock()
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def eta_s(self) -> float | None:
        elapsed = self.clock() - self._t0
        remaining = max(0.0, self.planned_s - self.done_planned_s)
        if self.done_planned_s <= 0:
            return remaining if remaining > 0 else None
        return remaining * (elapsed / self.done_planned_s)

    def line(self, label: str) -> str:
        frac = self.done_runs / self.total_runs if self.total_runs else 1.0
        bar = "#" * int(frac * self.width)
        eta = self.eta_s()
        return (
            f"[{bar.ljust(self.width, '.')}] {self.done_runs}/{self.total_runs} runs  {label}  "
            f"elapsed {fmt_duration(self.clock() - self._t0)}  ETA {'?' if eta is None else fmt_duration(eta)}"
        )

    def show(self, label: str) -> None:
        text = self.line(label)
        if self.sink is not None:
            self.sink(text)
            return
        if self._tty:
            text = terminal_safe(text, limit=len(text))
            raw(self.stream).write("\r\x1b[K" + text)  # the erase is kbench's own; the text is filtered
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def advance(self, planned_s: float, label: str) -> None:
        self.done_runs += 1
        self.done_planned_s += planned_s
        self.show(label)

    def finish(self) -> None:
        if self._tty and self.sink is None:
            self.stream.write("\n")
            self.stream.flush()
