"""SIGTERM and SIGHUP end a run as SIGINT (Ctrl-C) does.

A run stopped by ``kill``, a closed terminal or a scheduler's timeout must leave what Ctrl-C
leaves: the manifest ``interrupted``, the cluster stopped, network namespaces removed, and a line
saying how to resume.  :func:`as_interrupt` turns both signals into :class:`KeyboardInterrupt`
for the ``with`` block (the handlers before it are restored after it), so that the one
interruption path of :func:`kbench.engine.runner.execute` runs for all three.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["SIGNALS", "as_interrupt"]

#: The signals that end a run like SIGINT.
SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def _handler(owner: int) -> Callable[[int, FrameType | None], None]:
    """The handler for the run's process ``owner``.  A child forked while it is installed (pyroute2's
    namespace workers) inherits it: there the signal keeps its default action, so a child told to end
    ends at once, without unwinding the parent's stack copy or running its exit finalizers (which
    would remove the parent's temporary directory)."""

    def _interrupt(signum: int, frame: FrameType | None) -> None:
        if os.getpid() != owner:
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)
            return
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    return _interrupt


@contextmanager
def as_interrupt() -> Iterator[None]:
    handler = _handler(os.getpid())
    before = {s: signal.signal(s, handler) for s in SIGNALS}
    try:
        yield
    finally:
        for s, h in before.items():
            signal.signal(s, h)
