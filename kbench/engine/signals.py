"""SIGTERM and SIGHUP end a run as SIGINT (Ctrl-C) does.

A run stopped by ``kill``, a closed terminal or a scheduler's timeout must leave what Ctrl-C
leaves: the manifest ``interrupted``, the cluster stopped, network namespaces removed, and a line
saying how to resume.  :func:`as_interrupt` turns both signals into :class:`KeyboardInterrupt`
for the ``with`` block (the handlers before it are restored after it), so that the one
interruption path of :func:`kbench.engine.runner.execute` runs for all three.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["SIGNALS", "as_interrupt"]

#: The signals that end a run like SIGINT.
SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


@contextmanager
def as_interrupt() -> Iterator[None]:
    before = {s: signal.signal(s, _interrupt) for s in SIGNALS}
    try:
        yield
    finally:
        for s, h in before.items():
            signal.signal(s, h)
