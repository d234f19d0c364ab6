"""Every number of a report, with where it came from: the ledger behind ``provenance.json``.

A report never formats a number itself: it asks the :class:`Ledger` for a :class:`Fig`,
which records the operation (``median`` of these CSV cells, ``ratio`` of those two figures,
a manifest value …), the value and the exact text printed.  ``provenance.json`` holds the
ledger; :func:`verify` re-reads the run directories, recomputes every figure from the raw
CSV cells and manifest values and checks that it prints the same text.  So a report can be
audited number by number, and a number that does not come from the inputs cannot appear.
"""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["Fig", "Ledger", "FORMATS", "fmt", "verify"]

#: Unit constants the ``scale`` operation may use (named, never typed into a report).
UNITS: dict[str, float] = {"B->GiB": 1 / (1 << 30), "B->MiB": 1 / (1 << 20), "us->ms": 1e-3, "frac->pct": 100.0}


def _auto(v: float) -> str:
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 100:
        return f"{v:,.0f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


#: How each format prints a value.
FORMATS: dict[str, Callable[[float], str]] = {
    "auto": _auto,
    "int": lambda v: f"{v:,.0f}",
    "pct": lambda v: f"{v:+.0f}%",
    "pct1": lambda v: f"{v:.1f}%",
    "x": lambda v: f"{_auto(v)}×",
    "f3": lambda v: f"{v:.3f}",
    "f2": lambda v: f"{v:.2f}",
}


def fmt(value: float | None, kind: str = "auto") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "NA"
    return FORMATS[kind](float(value))


class Fig(NamedTuple):
    """One printed number: its index in the ledger, value and text (``NA`` if missing)."""

    id: int
    value: float | None
    text: str

    def __str__(self) -> str:
        return self.text

    @property
    def ok(self) -> bool:
        return self.value is not None and self.value == self.value


_new_fig = tuple.__new__


def _median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs))


AGG: dict[str, Callable[[Sequence[float]], float]] = {
    "median": _median,
    "min": lambda xs: float(min(xs)),
    "max": lambda xs: float(max(xs)),
    "count": lambda xs: float(len(xs)),
}


def _derive(op: str, vals: Sequence[float], unit: str | None = None) -> float:
    if op == "ratio":
        return vals[0] / vals[1]
    if op == "pct_change":  # from a to b, in %
        return (vals[1] - vals[0]) / vals[0] * 100
    if op == "share_pct":  # a as % of b
        return vals[0] / vals[1] * 100
    if op == "sum":
        return float(sum(vals))
    if op == "spread_pct":  # (max - min) / min over the figures, in %
        return (max(vals) - min(vals)) / min(vals) * 100
    if op == "diff":
        return vals[1] - vals[0]
    if op == "scale":
        assert unit is not None
        return vals[0] * UNITS[unit]
    raise ValueError(f"unknown operation {op}")


@dataclass
class Ledger:
    """The figures of one report and the row sets they were computed from.

    A row set is ``(experiment, gids)``: positions in the run-ordered concatenation of the
    experiment's CSV rows (``_gid`` in :func:`kbench.reporting.frames.frames`)."""

    sets: list[tuple[str, list[int]]] = field(default_factory=list)
    figs: list[tuple[Any, ...]] = field(default_factory=list)  # (op, format, text, a, b)
    _set_ids: dict[tuple[str, bytes], int] = field(default_factory=dict)

    def _add(self, value: float | None, kind: str, op: str, a: Any, b: Any) -> Fig:
        text = "NA" if value is None or value != value else FORMATS[kind](value)
        figs = self.figs
        figs.append((op, kind, text, a, b))
        return _new_fig(Fig, (len(figs) - 1, value, text))

    def row_set(self, experiment: str, gids: Any) -> int:
        """The id of a set of rows (``gids``: ints or an integer numpy array)."""
        import numpy as np

        arr = np.asarray(gids, dtype=np.int64)
        key = (experiment, arr.tobytes())
        sid = self._set_ids.get(key)
        if sid is None:
            sid = len(self.sets)
            self.sets.append((experiment, arr.tolist()))
            self._set_ids[key] = sid
        return sid

    def agg(
        self, op: str, values: Sequence[float], set_id: int, column: str, kind: str = "auto", value: float | None = None
    ) -> Fig:
        """``op`` (median, min, max, count) of ``column`` over the rows of ``set_id``
        (``value``: the result when the caller computed it already)."""
        if value is None:
            value = float(len(values)) if op == "count" else (AGG[op](values) if len(values) else None)
        return self._add(value, kind, op, set_id, column)

    def manifest(self, value: Any, run: int, path: str, kind: str = "auto") -> Fig:
        """A manifest value (``path`` like ``machine/physical_cores``)."""
        v = None if value is None or isinstance(value, bool) else float(value)
        return self._add(v, kind, "manifest", run, path)

    def derive(self, op: str, args: Sequence[Fig], kind: str = "auto", unit: str | None = None) -> Fig:
        """A figure computed from other figures (ratio, pct_change, sum, spread_pct, diff, scale)."""
        value: float | None = None
        if args and all(a.ok for a in args):
            try:
                value = _derive(op, [a.value for a in args], unit)  # type: ignore[misc]
            except ZeroDivisionError:
                value = None
        return self._add(value, kind, op, [a.id for a in args], unit)

    def as_dict(self, run_dirs: Sequence[str]) -> dict[str, Any]:
        """``figures``: ``[op, format, text, a, b]`` each, where (a, b) is (set id, column)
        for median/min/max/count, (run index, path) for manifest, (figure ids, unit) otherwise."""
        return {"runs": list(run_dirs), "sets": [[e, g] for e, g in self.sets], "figures": [list(f) for f in self.figs]}

    def texts(self) -> set[str]:
        return {f[2] for f in self.figs}


def _manifest_value(man: Mapping[str, Any], path: str) -> Any:
    cur: Any = man
    for part in path.split("/"):
        if isinstance(cur, Mapping):
            cur = cur.get(part)
        elif isinstance(cur, list):
            cur = cur[int(part)]
        else:
            return None
    return cur


def _num(text: str) -> float | None:
    if text in ("", "NA"):
        return None
    if text in ("true", "false", "True", "False"):
        return 1.0 if text.lower() == "true" else 0.0
    try:
        return float(text)
    except ValueError:
        return None


def verify(prov: Mapping[str, Any], run_dirs: Sequence[Path | str] | None = None) -> list[str]:
    """Recompute every figure of a ``provenance.json`` from the run directories' raw files.

    Returns the list of problems (empty when every printed number is reproduced)."""
    dirs = [Path(p) for p in (run_dirs if run_dirs is not None else prov["runs"])]
    tables: dict[str, list[dict[str, str]]] = {}
    manifests: dict[int, Mapping[str, Any]] = {}

    def rows(exp: str) -> list[dict[str, str]]:
        if exp not in tables:
            tables[exp] = []
            for d in dirs:
                p = d / f"{exp}.csv"
                if p.is_file():
                    text = p.read_text()
                    if text and not text.endswith("\n"):  # an interrupted run's incomplete last row
                        text = text[: text.rfind("\n") + 1]
                    tables[exp].extend(csv.DictReader(io.StringIO(text, newline="")))
        return tables[exp]

    values: list[float | None] = []
    problems: list[str] = []
    for i, entry in enumerate(prov["figures"]):
        op, kind, text, a, b = entry
        f = {"op": op, "f": kind, "t": text}
        if op in AGG:
            f.update(set=a, col=b)
        elif op == "manifest":
            f.update(run=a, path=b)
        else:
            f.update(args=a, unit=b)
        v: float | None
        try:
            if op in AGG:
                exp, gids = prov["sets"][f["set"]]
                table = rows(exp)
                if op == "count":
                    v = float(len(gids))
                else:
                    xs = [_num(table[g][f["col"]]) for g in gids]
                    if any(x is None for x in xs):
                        problems.append(f"figure {i} ({f['t']}): a source cell of {exp}.{f['col']} is not a number")
                        values.append(None)
                        continue
                    v = AGG[op]([x for x in xs if x is not None]) if xs else None
            elif op == "manifest":
                if f["run"] not in manifests:
                    manifests[f["run"]] = json.loads((dirs[f["run"]] / "manifest.json").read_text())
                raw = _manifest_value(manifests[f["run"]], f["path"])
                v = None if raw is None else float(raw)
            else:
                args = [values[a] for a in f["args"]]
                v = None if any(a is None for a in args) else _derive(op, args, f.get("unit"))  # type: ignore[arg-type]
        except (KeyError, IndexError, ValueError, ZeroDivisionError, OSError, TypeError) as e:
            problems.append(f"figure {i} ({f['t']}): cannot recompute ({e})")
            values.append(None)
            continue
        values.append(v)
        if fmt(v, f["f"]) != f["t"]:
            problems.append(f"figure {i}: recomputed {fmt(v, f['f'])!r} but the report prints {f['t']!r}")
    return problems
