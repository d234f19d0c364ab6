"""The one rule for sizes written by people (command line and plan files).

A size is a whole number of bytes, written

- as a plain integer: bytes (Kafka's own unit: ``batch.size = 16384``);
- with a binary unit ``KiB``, ``MiB``, ``GiB`` (×1024, ×1024², ×1024³): ``16KiB`` = 16384;
- ``B`` for bytes (``512B``).

``k``/``kB``, ``M``/``MB``, ``G``/``GB`` are refused: Kafka's users say "16 KB" for
``batch.size = 16384`` while SI says 16000, so the message offers the two exact spellings
(``16KiB`` = 16384 or ``16000``).  Units are case-insensitive; a decimal point is allowed when the
result is whole (``1.5MiB``); anything else is refused with a one-line message naming the accepted
forms (docs/cli.md).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

__all__ = ["SIZE_RULE", "parse_size"]

#: The rule in one line, quoted by every error about a size and by ``--help``.
SIZE_RULE = "bytes (16384) or binary KiB/MiB/GiB (16KiB = 16384)"

_UNITS = {
    "": 1,
    "b": 1,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
}

#: The ambiguous units (SI ×1000, or ×1024 as Kafka's users say them): refused, naming both readings.
_AMBIGUOUS = {
    "k": ("KiB", 1000),
    "kb": ("KiB", 1000),
    "m": ("MiB", 1000**2),
    "mb": ("MiB", 1000**2),
    "g": ("GiB", 1000**3),
    "gb": ("GiB", 1000**3),
}


def parse_size(text: str | int, where: str = "size") -> int:
    """Bytes from '16384', '16KiB', '1MiB', '512B' (an int is bytes already); ValueError
    ``"{where}: bad size '...'; write ..."`` otherwise ('16k' and '16KB' are ambiguous: the error
    names ``16KiB`` = 16384 and ``16000``).  A sign is kept (``-1KiB`` = -1024), so the caller's
    range check names the value."""
    if isinstance(text, bool):
        raise ValueError(f"{where}: bad size {text!r}; write {SIZE_RULE}")
    if isinstance(text, int):
        return text
    m = re.fullmatch(r"\s*([-+]?\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(text))
    if m and m.group(2).lower() in _AMBIGUOUS:
        num, (binary, factor) = m.group(1), _AMBIGUOUS[m.group(2).lower()]
        as_binary, as_decimal = Decimal(num) * _UNITS[binary.lower()], Decimal(num) * factor
        raise ValueError(
            f"{where}: '{text}' is ambiguous; write {num}{binary} (= {as_binary.normalize():f} bytes, "
            f"what Kafka's users mean) or {as_decimal.normalize():f}"
        )
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"{where}: bad size '{text}'; write {SIZE_RULE}")
    try:
        value = Decimal(m.group(1)) * _UNITS[m.group(2).lower()]
    except InvalidOperation:  # pragma: no cover - the pattern admits only decimal numbers
        raise ValueError(f"{where}: bad size '{text}'; write {SIZE_RULE}") from None
    if value != value.to_integral_value():
        raise ValueError(f"{where}: '{text}' is not a whole number of bytes; write {SIZE_RULE}")
    return int(value)
