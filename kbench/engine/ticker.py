"""A reporting period on its own thread: calls a function every ``every_s`` seconds from
:meth:`Ticker.start` until :meth:`Ticker.stop` (the live status view and the live figures feed)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Ticker"]


@dataclass
class Ticker:
    """Calls ``tick`` every ``every_s`` seconds on a daemon thread named ``name``."""

    tick: Callable[[], None]
    every_s: float
    name: str
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):  # a reporting period: set only by stop()
            self.tick()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Ends the period and waits for a tick under way to finish."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
