"""Parsing of human-written sizes ("16KiB", "1MiB", "16384") for the command line."""

from __future__ import annotations

import re

__all__ = ["parse_size"]

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


def parse_size(text: str) -> int:
    """Bytes from '16384', '16KiB', '1MiB', '4MB'; ValueError naming the accepted forms."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"bad size '{text}'; write bytes or a number with KiB/MiB/GiB (or kB/MB/GB), e.g. 16KiB")
    num, mult = m.group(1), _UNITS[m.group(2).lower()]
    return int(num) * mult if "." not in num else int(float(num) * mult)
