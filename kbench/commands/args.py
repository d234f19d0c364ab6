"""Argument types shared by the commands."""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["key_value"]


def key_value(example: str) -> Callable[[str], tuple[str, str]]:
    """An argparse ``type`` for ``key=value`` (whitespace around either side dropped); the
    error names ``example`` (e.g. ``-X linger.ms=5``)."""

    def parse(text: str) -> tuple[str, str]:
        if "=" not in text or text.startswith("="):
            raise argparse.ArgumentTypeError(f"'{text}' is not key=value (e.g. {example})")
        k, v = text.split("=", 1)
        return k.strip(), v.strip()

    return parse
