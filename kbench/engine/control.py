"""The A/A control: a plan's baseline cell run a second time, with identical settings, as its
own cell interleaved with the rest — the host's noise measured in every run (docs/methodology.md).

A sweep with ``control = true`` gets a copy of its first cell (``control = "<cell id>"``: of that
cell of the sweep).  The copy's ``cell_id`` is ``<baseline>-aa`` and its ``control_of`` names the
baseline; every other setting is the baseline's, so the runner treats it as any cell (own
warm-up, repetitions shuffled with the others, same derived rate).  Its rows carry
``control_of`` (empty for every other row): the report compares the pair and expects no
difference.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Protocol

from kbench.engine.cell import Cell

__all__ = ["FIRST", "KEY_HELP", "SUFFIX", "ControlError", "add", "check", "parse"]

#: The control's cell id is the baseline's plus this.
SUFFIX = "-aa"
#: ``control = true``: the sweep's first cell is the baseline.
FIRST = "first"
KEY_HELP = 'A/A control: true runs the sweep\'s first cell (or "<cell id>": that cell) a second time as "<cell>-aa", interleaved'


class ControlError(ValueError):
    """A ``control`` key is invalid; one line naming the key and the fix."""


class _Sweep(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def control(self) -> str: ...


def parse(where: str, v: Any) -> str:
    """A sweep's ``control`` value: "" (none), :data:`FIRST` or a cell id."""
    if v is False:
        return ""
    if v is True:
        return FIRST
    if isinstance(v, str) and v and v != FIRST:
        return v
    raise ControlError(f'{where}: {v!r} is not a control; write true (the sweep\'s first cell), false or "<cell id>"')


def _baseline(s: _Sweep, mine: Sequence[Cell]) -> Cell | None:
    if not s.control or not mine:
        return None
    if s.control == FIRST:
        return mine[0]
    return next((c for c in mine if c.cell_id == s.control), None)


def add(sweeps: Sequence[_Sweep], cells: Sequence[Cell]) -> list[Cell]:
    """``cells`` with, after each sweep's cells, the control copy of the sweep's baseline cell."""
    out: list[Cell] = []
    for s in sweeps:
        mine = [c for c in cells if c.sweep == s.name]
        out += mine
        base = _baseline(s, mine)
        if base is not None:
            out.append(dataclasses.replace(base, cell_id=base.cell_id + SUFFIX, control_of=base.cell_id))
    out += [c for c in cells if c not in out]
    return out


def check(sweeps: Sequence[_Sweep], cells: Sequence[Cell]) -> None:
    """Every named baseline is a cell of its sweep (raises :class:`ControlError`)."""
    for i, s in enumerate(sweeps):
        if s.control and s.control != FIRST and not any(c.cell_id == s.control for c in cells if c.sweep == s.name):
            ids = ", ".join(c.cell_id for c in cells if c.sweep == s.name and not c.control_of)
            raise ControlError(f"sweep[{i}].control: {s.control!r} is not a cell of sweep {s.name}; use one of {ids}")
