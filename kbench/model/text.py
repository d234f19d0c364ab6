"""Text from outside (corpus names, a server's reason phrase, file names) made safe to print.

:func:`terminal_safe` is the one rule for anything kbench prints to a terminal that it did not
write itself: control characters (C0 but tab, DEL, C1 — so no escape sequence) are removed and
the text is shortened to :data:`MAX_SHOWN` characters, marked with an ellipsis.
"""

from __future__ import annotations

import io
import re
from typing import TextIO

__all__ = ["MAX_SHOWN", "SafeStream", "raw", "terminal_safe"]

#: Characters of an outside text shown at most.
MAX_SHOWN = 200

_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def terminal_safe(text: str, limit: int = MAX_SHOWN) -> str:
    """``text`` without control characters, at most ``limit`` characters (an ellipsis marks a cut)."""
    clean = _CONTROL.sub("", text)
    return clean if len(clean) <= limit else clean[: limit - 1] + "…"


#: Control characters removed from everything kbench prints (line breaks, tabs and the carriage
#: return of a progress line kept): no escape sequence from a name or a server reaches a terminal.
_STREAM_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


class SafeStream(io.TextIOBase):
    """A text stream that writes through to ``inner`` without control characters (kbench's
    standard output and error while a command runs: :func:`kbench.cli.main`)."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, s: str) -> int:
        self.inner.write(_STREAM_CONTROL.sub("", s) if s else s)
        return len(s)

    def flush(self) -> None:
        self.inner.flush()

    def isatty(self) -> bool:
        return self.inner.isatty()

    def fileno(self) -> int:
        return self.inner.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.inner, "encoding", "utf-8")

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def raw(stream: TextIO) -> TextIO:
    """The stream under a :class:`SafeStream` (else ``stream`` itself): for kbench's *own* escape
    sequences only — the live status (rich strips control codes from the texts it shows) and the
    progress line's erase — which the filter would otherwise turn into visible debris."""
    return stream.inner if isinstance(stream, SafeStream) else stream
