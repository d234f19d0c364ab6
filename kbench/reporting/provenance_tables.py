"""The run directories' CSV rows as ``--verify`` reads them (every row with its run's machine
columns), labels compared by value, and the checks of a figure's rows and of the report's literals."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kbench.engine.csvio import (
    DRIFT,
    TEXT_COLUMNS,
    bad_values,
    complete_bytes,
    drifted,
    format_value,
    is_warmup,
    number,
)
from kbench.experiments.spec import LABELS, M_LABELS
from kbench.model.csvcell import read_cell
from kbench.reporting.runs import machine_label

__all__ = [
    "NUMBER",
    "MISSING_TEXT",
    "RunTables",
    "canon",
    "check_rows",
    "report_literals",
]


NUMBER = re.compile(r"(?<![\w.])[-+−]?\d(?:[\d,]*\d)?(?:\.\d+)?[%×]?")


#: Label texts that mean "no value" (``-`` is how experiment M prints a codec without levels).
MISSING_TEXT = frozenset({"", "NA", "-"})


def canon(text: str | None) -> str:
    """A label as a comparable key: missing → ``NA``, numbers by value (``5000`` == ``5000.0``)."""
    if text is None or text.strip() in MISSING_TEXT:
        return "NA"
    t = text.strip()
    try:
        v = float(t)
    except ValueError:
        return t
    return "NA" if v != v else repr(v)


class RunTables:
    """The run directories' CSV rows as ``verify`` sees them: every row (``_gid`` order), with the
    machine columns of its run's manifest, as :mod:`kbench.reporting.frames` gives the report."""

    def __init__(self, dirs: Sequence[Path]) -> None:
        self.dirs = dirs
        self.rows: dict[str, list[dict[str, str]]] = {}
        self.origin: dict[str, list[tuple[int, int]]] = {}
        self.manifests: dict[int, Mapping[str, Any]] = {}
        self._index: dict[tuple[str, tuple[str, ...]], dict[tuple[str, ...], list[int]]] = {}

    def experiments(self) -> list[str]:
        """The experiments whose CSVs the run directories hold."""
        return sorted({p.stem for d in self.dirs for p in d.glob("*.csv") if p.is_file()})

    def manifest(self, run: int) -> Mapping[str, Any]:
        if run not in self.manifests:
            self.manifests[run] = json.loads((self.dirs[run] / "manifest.json").read_text())
        return self.manifests[run]

    def _machine(self, run: int) -> dict[str, str]:
        try:
            man = self.manifest(run)
        except (OSError, ValueError):
            man = {}
        machine = man.get("machine")
        m: Mapping[str, Any] = machine if isinstance(machine, Mapping) else {}
        out = {k: format_value(m.get(k)) for k in ("arch", "cpu_model", "kernel", "hostname_hash")}
        out.update({k: format_value(m.get(k)) for k in ("physical_cores", "logical_cores", "memory_bytes")})
        t = man.get("transport")
        out.update(
            machine=machine_label(m),
            run_id=str(man.get("run_id", self.dirs[run].name)),
            run_dir=str(self.dirs[run]),
            plan_name=str(man.get("plan_name", "")),
            transport=str(t.get("kind", "")) if isinstance(t, Mapping) else "",
        )
        cells = man.get("cells")
        if isinstance(cells, Mapping):
            out["_rates"] = json.dumps(
                {cid: format_value(c.get("rate")) for cid, c in cells.items() if isinstance(c, Mapping)}
            )
        return out

    def table(self, exp: str) -> list[dict[str, str]]:
        if exp not in self.rows:
            rows: list[dict[str, str]] = []
            origin: list[tuple[int, int]] = []
            for i, d in enumerate(self.dirs):
                p = d / f"{exp}.csv"
                if not p.is_file():
                    continue
                text = complete_bytes(p.read_bytes()).decode()  # an interrupted run's incomplete last row is not data
                extra = self._machine(i)
                rates = json.loads(extra.pop("_rates", "{}"))
                raw = list(csv.DictReader(io.StringIO(text, newline="")))
                bad = bad_values(raw, p.name)  # the loader's rule: stray text excludes its row
                drift = drifted(self.manifest(i)) if (d / "manifest.json").is_file() else {}
                for j, r in enumerate(raw):
                    row = {k: ("NA" if v is None else read_cell(v)) for k, v in r.items() if k is not None}
                    if j in bad:
                        row.update(status="INVALID", reason=bad[j])
                    line = drift.get((row.get("cell_id", ""), row.get("rep", "")))
                    if line is not None and row.get("status") == "OK":  # the loader's rule (frames)
                        row.update(status=DRIFT, reason=line)
                    if "rate" not in row:  # a CSV written before the rate column: the plan's rate
                        row["rate"] = rates.get(row.get("cell_id", ""), "NA")
                    row.update(extra)
                    rows.append(row)
                    origin.append((i, j))
            self.rows[exp], self.origin[exp] = rows, origin
        return self.rows[exp]

    def selected(self, exp: str, where: Mapping[str, str]) -> list[int]:
        """Rows of ``exp`` equal to ``where`` on its columns (M warm-up rows never count)."""
        cols = tuple(sorted(where))
        index = self._index.get((exp, cols))
        if index is None:
            index = {}
            for g, row in enumerate(self.table(exp)):
                if is_warmup(row):
                    continue
                index.setdefault(tuple(canon(row.get(c)) for c in cols), []).append(g)
            self._index[(exp, cols)] = index
        return index.get(tuple(canon(where[c]) for c in cols), [])

    def describe(self, exp: str, g: int) -> str:
        run, j = self.origin[exp][g]
        row = self.rows[exp][g]
        cell = row.get("cell_id") or row.get("codec", "?")
        return (
            f"{self.dirs[run].name}/{exp}.csv row {j + 1} ({cell} rep {row.get('rep', '?')}, {row.get('status', '?')})"
        )


def check_rows(tables: RunTables, exp: str, gids: Sequence[int], where: Mapping[str, str], col: str) -> str | None:
    """Why the figure's rows are not the rows ``where`` selects with a value in ``col`` (None if they are)."""
    table = tables.table(exp)
    # A text column (status, latency_flag …: what a count counts) always has a value; a
    # measurement has one when its cell is a number (the report's medians skip NA cells).
    eligible = {
        g for g in tables.selected(exp, where) if col in TEXT_COLUMNS or number(table[g].get(col, "")) is not None
    }
    recorded = set(gids)
    sel = ", ".join(f"{k}={v}" for k, v in where.items())
    stray = sorted(g for g in recorded - eligible if 0 <= g < len(table))
    if len(stray) < len(recorded - eligible):
        return f"uses {exp}.csv rows that no longer exist (the selection {sel})"
    if stray:
        return f"uses {tables.describe(exp, stray[0])}, not a row of {sel} with a {col}" + (
            f" (and {len(stray) - 1} more)" if len(stray) > 1 else ""
        )
    missing = sorted(eligible - recorded)
    if missing:
        return f"misses {tables.describe(exp, missing[0])}, a row of {sel} with a {col}" + (
            f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        )
    return None


def report_literals(tables: RunTables) -> tuple[list[str], set[str]]:
    """Label texts of the inputs that hold a digit: (non-numeric ones, longest first; numeric ones).

    Labels are the CSVs' text columns (cell ids, codecs, rates, reasons …), every manifest value
    and the run directories' names: what a report may copy verbatim.  Measurements are not
    labels: a measured number reaches the report only as a ledger figure."""
    label_cols = set(TEXT_COLUMNS) | set(LABELS) | set(M_LABELS) | {"rep"}
    vals: set[str] = set()
    for exp in tables.experiments():
        for row in tables.table(exp):
            vals.update(v for k, v in row.items() if k in label_cols)

    def walk(x: object) -> None:
        if isinstance(x, dict):
            for k, v in x.items():
                vals.add(str(k))
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
        elif x is not None:
            vals.add(str(x))
            if isinstance(x, bool):
                vals.add(str(x).lower())

    for i, d in enumerate(tables.dirs):
        try:
            walk(tables.manifest(i))
        except (OSError, ValueError):
            pass
        vals.add(d.name)
    with_digit = {v for v in vals if re.search(r"\d", v)}
    numeric = {v for v in with_digit if NUMBER.fullmatch(v)}
    return sorted(with_digit - numeric, key=len, reverse=True), numeric
