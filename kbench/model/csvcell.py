"""The one rule for a CSV text cell a spreadsheet would evaluate (formula injection, OWASP).

A text cell whose first character is ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is
written with a leading single quote (``'=cmd|...`` instead of ``=cmd|...``), as OWASP recommends;
a text cell that itself starts with ``'`` gets one too, so the rule reads back exactly
(:func:`read_cell` removes one leading quote).  Numbers are not text: ``-3.2`` and ``-1e-05``
stay numbers.  Every CSV kbench writes goes through :func:`safe_cell` (run CSVs, ``sim -o``,
``codecs bench -o``, ``inspect -o``, ``advise -o``) and every CSV kbench reads through
:func:`read_cell`; documented in ``docs/csv-schema.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

__all__ = ["FORMULA_STARTS", "read_cell", "safe_cell", "safe_row"]

#: First characters that make a spreadsheet evaluate a cell.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def safe_cell(value: object) -> object:
    """``value`` as written to a CSV cell: text a spreadsheet would evaluate gets a leading ``'``."""
    if not isinstance(value, str) or not value:
        return value
    if value[0] == "'" or (value[0] in FORMULA_STARTS and not _is_number(value)):
        return "'" + value
    return value


def safe_row(row: Mapping[str, object]) -> dict[str, object]:
    return {k: safe_cell(v) for k, v in row.items()}


def read_cell(text: str) -> str:
    """A cell's text as it was before :func:`safe_cell`."""
    return text[1:] if text.startswith("'") else text
