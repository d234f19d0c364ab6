"""The one rule for sizes written by people (command line and plan files).

A size is a whole number of bytes, written

- as a plain integer: bytes (Kafka's own unit: ``batch.size = 16384``);
- with a binary unit ``KiB``, ``MiB``, ``GiB`` (×1024, ×1024², ×1024³): ``16KiB`` = 16384;
- with a decimal unit ``k``/``kB``, ``M``/``MB``, ``G``/``GB`` (×1000, ×1000², ×1000³): ``16k`` = 16000;
- ``B`` for bytes (``512B``).

Units are case-insensitive; a decimal point is allowed when the result is whole (``1.5MiB``);
anything else is refused with a one-line message naming the accepted forms (docs/cli.md).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

__all__ = ["SIZE_RULE", "parse_size"]

#: The rule in one line, quoted by every error about a size and by ``--help``.
SIZE_RULE = "bytes (16384), binary KiB/MiB/GiB (16KiB = 16384) or decimal k/M/G (16k = 16000)"

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "kib": 1024,
    "m": 1000**2,
    "mb": 1000**2,
    "mib": 1024**2,
    "g": 1000**3,
    "gb": 1000**3,
    "gib": 1024**3,
}


def parse_size(text: str | int, where: str = "size") -> int:
    """Bytes from '16384', '16KiB', '1MiB', '16k', '4MB' (an int is bytes already); ValueError
    ``"{where}: bad size '...'; write ..."`` otherwise.  A sign is kept (``-1k`` = -1000), so the
    caller's range check names the value."""
    if isinstance(text, bool):
        raise ValueError(f"{where}: bad size {text!r}; write {SIZE_RULE}")
    if isinstance(text, int):
        return text
    m = re.fullmatch(r"\s*([-+]?\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"{where}: bad size '{text}'; write {SIZE_RULE}")
    try:
        value = Decimal(m.group(1)) * _UNITS[m.group(2).lower()]
    except InvalidOperation:  # pragma: no cover - the pattern admits only decimal numbers
        raise ValueError(f"{where}: bad size '{text}'; write {SIZE_RULE}") from None
    if value != value.to_integral_value():
        raise ValueError(f"{where}: '{text}' is not a whole number of bytes; write {SIZE_RULE}")
    return int(value)
