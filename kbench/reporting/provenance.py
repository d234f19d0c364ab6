"""Every number of a report, with where it came from: the ledger behind ``provenance.json``.

A report never formats a number itself: it asks the :class:`Ledger` for a :class:`Fig`,
which records the operation (``median`` of these CSV cells, ``ratio`` of those two figures,
a manifest value …), the value and the exact text printed.  ``provenance.json`` holds the
ledger; :func:`verify` re-reads the run directories and checks, for every figure:

- that its rows are exactly the rows its selection (``where``: the cell's labels, the machine,
  ``status = OK`` for a measurement) picks from the CSVs today, and that each has a value in
  the figure's column: a row whose status changed, or an eligible row added, fails;
- that recomputing it from the raw CSV cells and manifest values prints the same text;

and, given the report's markdown, that every number printed in it is a ledger figure or a
label copied verbatim from the inputs (a hand-typed number fails).  So a report can be
audited number by number, and a number that does not come from the inputs cannot appear.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from kbench.engine import judge, stats
from kbench.engine.csvio import (
    TEXT_COLUMNS,
    number,
)
from kbench.reporting.document import md_text
from kbench.reporting.formats import FORMATS, UNITS, fmt
from kbench.reporting.provenance_tables import (
    NUMBER,
    RunTables,
    canon,
    check_rows,
    report_literals,
)

__all__ = [
    "FORMATS",
    "Fig",
    "Ledger",
    "RunTables",
    "canon",
    "fmt",
    "manifest_path",
    "manifest_value",
    "untraceable_numbers",
    "verify",
]


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
    if op == "product":
        return float(math.prod(vals))
    if op == "const":  # a named constant of the method (a unit price, a default budget)
        assert unit is not None and not vals
        return UNITS[unit]
    if op == "spread_pct":  # (max - min) / min over the figures, in %
        return (max(vals) - min(vals)) / min(vals) * 100
    if op == "diff":
        return vals[1] - vals[0]
    if op == "holm":  # the Holm-adjusted p of the family's figure number ``unit``
        assert unit is not None
        return stats.holm(vals)[int(unit)]
    if op == "scale":
        assert unit is not None
        return vals[0] * UNITS[unit]
    raise ValueError(f"unknown operation {op}")


@dataclass
class Ledger:
    """The figures of one report and the row sets they were computed from.

    A row set is ``(experiment, gids, where)``: positions in the run-ordered concatenation of
    the experiment's CSV rows (``_gid`` in :func:`kbench.reporting.frames.frames`) and the
    selection they are (column → CSV text; ``machine`` is the manifest's machine label): the
    rows equal to ``where`` on every column that have a value in the figure's column."""

    sets: list[tuple[str, list[int], dict[str, str]]] = field(default_factory=list)
    figs: list[tuple[Any, ...]] = field(default_factory=list)  # (op, format, text, a, b)
    _set_ids: dict[tuple[str, bytes, str], int] = field(default_factory=dict)

    def _add(self, value: float | None, kind: str, op: str, a: Any, b: Any) -> Fig:
        text = "NA" if value is None or value != value else FORMATS[kind](value)
        figs = self.figs
        figs.append((op, kind, text, a, b))
        return _new_fig(Fig, (len(figs) - 1, value, text))

    def row_set(self, experiment: str, gids: Any, where: Mapping[str, str]) -> int:
        """The id of a set of rows (``gids``: ints or an integer numpy array) selected by
        ``where`` (column → text, e.g. ``{"codec": "zstd:3", "status": "OK"}``)."""
        import numpy as np

        arr = np.asarray(gids, dtype=np.int64)
        sel = {str(k): str(v) for k, v in where.items()}
        key = (experiment, arr.tobytes(), json.dumps(sel, sort_keys=True))
        sid = self._set_ids.get(key)
        if sid is None:
            sid = len(self.sets)
            self.sets.append((experiment, arr.tolist(), sel))
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

    def two_sample(
        self, op: str, sets: tuple[int, int], column: str, values: tuple[Any, Any], conf: float, kind: str
    ) -> Fig:
        """A figure of a comparison (:data:`kbench.engine.stats.TWO_SAMPLE_OPS`) of ``column``
        between two row sets, whose values are ``values``."""
        return self._add(stats.two_sample(op, values[0], values[1], conf), kind, op, list(sets), [column, conf])

    def rule(self, value: float, run: int, key: str, kind: str = "g") -> Fig:
        """A number of the run's verdict rule (:func:`kbench.engine.judge.rule_value` of its plan)."""
        return self._add(value, kind, "rule", run, key)

    def derive(self, op: str, args: Sequence[Fig], kind: str = "auto", unit: str | None = None) -> Fig:
        """A figure computed from other figures (ratio, pct_change, sum, spread_pct, diff, scale)."""
        value: float | None = None
        if args and all(a.ok for a in args):
            try:
                value = _derive(op, [a.value for a in args], unit)  # type: ignore[misc]
            except ZeroDivisionError:
                value = None
        return self._add(value, kind, op, [a.id for a in args], unit)

    def constant(self, name: str, kind: str = "auto") -> Fig:
        """A named constant of the method (:data:`UNITS`): printed from its name, never typed."""
        return self._add(UNITS[name], kind, "const", [], name)

    def as_dict(self, run_dirs: Sequence[str]) -> dict[str, Any]:
        """``figures``: ``[op, format, text, a, b]`` each, where (a, b) is (set id, column)
        for median/min/max/count, (run index, path) for manifest, (figure ids, unit) otherwise."""
        return {
            "runs": list(run_dirs),
            "sets": [[e, g, w] for e, g, w in self.sets],
            "figures": [list(f) for f in self.figs],
        }

    def texts(self) -> set[str]:
        return {f[2] for f in self.figs}


def manifest_path(*parts: str) -> str:
    """A path into a manifest from its keys, as a JSON Pointer writes them (``/`` in a key is
    ``~1``, ``~`` is ``~0``): a corpus named ``orders/v2`` is one key, not two."""
    return "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


def manifest_value(man: Mapping[str, Any], path: str) -> Any:
    cur: Any = man
    for raw in path.split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(cur, str) and cur.startswith("{"):  # a JSON object kept as text (transport extras)
            try:
                cur = json.loads(cur)
            except ValueError:
                return None
        if isinstance(cur, Mapping):
            cur = cur.get(part)
        elif isinstance(cur, list):
            cur = cur[int(part)]
        else:
            return None
    return cur


#: A number as a report prints it (thousands separators, a sign, a unit sign after it).


def untraceable_numbers(markdown: str, prov: Mapping[str, Any], run_dirs: Sequence[Path | str]) -> list[str]:
    """Numbers printed in ``markdown`` that are neither a ledger figure nor an input label."""
    return _untraceable(markdown, prov, RunTables([Path(p) for p in run_dirs]))


def _untraceable(md: str, prov: Mapping[str, Any], tables: RunTables) -> list[str]:
    literals, numeric = report_literals(tables)
    text = md
    for lit in literals:
        text = text.replace(md_text(lit), " ")

    def norm(tok: str) -> str:  # a unit sign after a figure is text, not part of the number
        return tok.rstrip("%×").lstrip("+-−")

    allowed = {norm(v) for v in numeric}
    for t in (f[2] for f in prov["figures"]):
        allowed.update(norm(x) for x in NUMBER.findall(t))
    return sorted({tok for tok in NUMBER.findall(text) if norm(tok) not in allowed})


def _set_values(
    tables: RunTables,
    sets: Sequence[Any],
    sid: int,
    col: str,
    checked: dict[Any, str | None],
    problems: list[str],
    what: str,
) -> list[float] | None:
    """The values of ``col`` in the recorded row set ``sid`` (None: a cell is not a number), its
    rows checked against its selection (``what``: the figure, its text, and ``op`` for the check)."""
    exp, gids, *rest = sets[sid]
    if not exp:  # "": a group with no row at all (an NA figure)
        return []
    head = what.split(", ")[0]
    if not rest or not isinstance(rest[0], Mapping):
        problems.append(f"{head}): its rows' selection is not recorded; re-run kbench report")
    else:
        if (sid, col) not in checked:
            checked[(sid, col)] = check_rows(tables, exp, gids, rest[0], col)
        if checked[(sid, col)]:
            problems.append(f"{what} of {exp}.{col}): {checked[(sid, col)]}")
    if col in TEXT_COLUMNS:  # a count of rows (status …)
        return [0.0] * len(gids)
    xs = [number(tables.table(exp)[g][col]) for g in gids]
    if any(x is None for x in xs):
        problems.append(f"{head}): a source cell of {exp}.{col} is not a number")
        return None
    return [x for x in xs if x is not None]


def verify(
    prov: Mapping[str, Any], run_dirs: Sequence[Path | str] | None = None, markdown: str | None = None
) -> list[str]:
    """Check every figure of a ``provenance.json`` against the run directories' raw files: its
    rows are the rows its selection picks today, and it recomputes to the printed text; and,
    with ``markdown`` (the report's ``report.md``), that every number printed is accounted for.

    Returns the list of problems (empty when every printed number is reproduced)."""
    dirs = [Path(p) for p in (run_dirs if run_dirs is not None else prov["runs"])]
    tables = RunTables(dirs)
    checked: dict[tuple[int, str], str | None] = {}
    values: list[float | None] = []
    problems: list[str] = []
    for i, entry in enumerate(prov["figures"]):
        op, kind, text, a, b = entry
        f = {"op": op, "f": kind, "t": text}
        if op in AGG:
            f.update(set=a, col=b)
        elif op in ("manifest", "rule"):
            f.update(run=a, path=b)
        else:
            f.update(args=a, unit=b)
        v: float | None
        try:
            if op in AGG:
                xs = _set_values(
                    tables, prov["sets"], f["set"], f["col"], checked, problems, f"figure {i} ({f['t']}, {op}"
                )
                if xs is None:
                    values.append(None)
                    continue
                v = float(len(xs)) if op == "count" else (AGG[op](xs) if xs else None)
            elif op == "manifest":
                raw = manifest_value(tables.manifest(f["run"]), f["path"])
                v = None if raw is None else float(raw)
            elif op == "rule":
                plan = tables.manifest(f["run"]).get("plan")
                v = judge.rule_value(judge.rule_from_plan(plan if isinstance(plan, Mapping) else {}), f["path"])
            elif op in stats.TWO_SAMPLE_OPS:
                col, conf = f["unit"]
                sa, sb = (
                    _set_values(tables, prov["sets"], s, col, checked, problems, f"figure {i} ({f['t']}, {op}")
                    for s in f["args"]
                )
                v = None if sa is None or sb is None else stats.two_sample(op, sa, sb, float(conf))
            else:
                args = [values[a] for a in f["args"]]
                try:
                    v = None if any(a is None for a in args) else _derive(op, args, f.get("unit"))
                except ZeroDivisionError:
                    v = None  # as the ledger does: a change from 0 is NA, not a number
        except (KeyError, IndexError, ValueError, ZeroDivisionError, OSError, TypeError) as e:
            problems.append(f"figure {i} ({f['t']}): cannot recompute ({e})")
            values.append(None)
            continue
        values.append(v)
        if fmt(v, f["f"]) != f["t"]:
            problems.append(f"figure {i}: recomputed {fmt(v, f['f'])!r} but the report prints {f['t']!r}")
    if markdown is not None:
        problems += [
            f"report.md prints {tok!r}, which is no ledger figure and no input label"
            for tok in _untraceable(markdown, prov, tables)
        ]
    return problems
