"""Tidy CSV results: one file per experiment, rows appended only when complete.

Crash safety: every completed repetition's rows are appended to the experiment CSVs
(write, flush, fsync), then its key ``(cell_id, rep, attempt)`` and status are appended to the
journal ``done.jsonl`` (flush, fsync).  An attempt is done only once it is in the journal.
:func:`reconcile` (run by ``--resume``) drops rows whose key is not in the journal and
any truncated trailing line, rewriting a CSV atomically only when something is dropped.
The columns of each experiment are documented in ``docs/csv-schema.md``.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbench.engine.experiments import RUN_EXPERIMENTS, columns

__all__ = [
    "COLUMNS",
    "JOURNAL",
    "ResultsWriter",
    "STATUSES",
    "attempt_of",
    "format_value",
    "read_done",
    "read_journal",
    "read_rows",
    "reconcile",
]

JOURNAL = "done.jsonl"

#: Status values, most severe last-wins order handled in kbench.engine.rules.
STATUSES = (
    "OK",
    "REJECTED",
    "NA",
    "INVALID",
    "FAILED_CPU_REGRESSED",
    "FAILED_LOSS",
    "FAILED_TOPIC_CONFIG",
    "FAILED_RUN",
)

#: Columns per experiment CSV, from the experiments registry.
COLUMNS: dict[str, tuple[str, ...]] = {e: columns(e) for e in RUN_EXPERIMENTS}


def format_value(v: Any) -> str:
    """CSV text of a value: ``NA`` for None, ``true``/``false``, floats to 7 significant digits."""
    if v is None:
        return "NA"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if v != v:  # NaN
            return "NA"
        return f"{v:.7g}"
    if isinstance(v, (list, tuple, set, frozenset)):
        return "|".join(str(x) for x in v)
    return str(v)


def _fsync_append(path: Path, data: bytes) -> None:
    with path.open("ab") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _csv_line(values: Sequence[str]) -> bytes:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(values)
    return buf.getvalue().encode()


@dataclass
class ResultsWriter:
    """Appends experiment rows and journal entries to a run directory."""

    run_dir: Path

    def csv_path(self, experiment: str) -> Path:
        return self.run_dir / f"{experiment}.csv"

    def append(self, experiment: str, rows: Iterable[Mapping[str, Any]]) -> None:
        cols = COLUMNS[experiment]
        path = self.csv_path(experiment)
        data = b""
        if not path.exists() or path.stat().st_size == 0:
            data += _csv_line(cols)
        for row in rows:
            extra = set(row) - set(cols)
            if extra:
                raise KeyError(f"{experiment}.csv has no column(s) {', '.join(sorted(extra))}")
            data += _csv_line([format_value(row.get(c)) for c in cols])
        _fsync_append(path, data)

    def write_histograms(self, cell_id: str, rep: int, histograms: Mapping[str, str], attempt: int = 1) -> Path | None:
        """``histograms/<cell>-r<rep>.json`` (atomic), written before the repetition's rows; a
        retried repetition's file holds its latest attempt (the one that counts), named inside."""
        if not histograms:
            return None
        d = self.run_dir / "histograms"
        d.mkdir(exist_ok=True)
        path = d / f"{cell_id}-r{rep}.json"
        body = {
            "cell_id": cell_id,
            "rep": rep,
            "attempt": attempt,
            "unit": "ns",
            "encoding": "kbench.Histogram.encode, base64",
            "histograms": dict(histograms),
        }
        atomic_write(path, (json.dumps(body, sort_keys=True) + "\n").encode())
        return path

    def mark_done(self, cell_id: str, rep: int, status: str, attempt: int = 1) -> None:
        line = {"cell_id": cell_id, "rep": rep, "attempt": attempt, "status": status}
        _fsync_append(self.run_dir / JOURNAL, (json.dumps(line) + "\n").encode())


def attempt_of(row: Mapping[str, str]) -> int:
    """A row's attempt number (1 when the column is absent or NA: a first attempt)."""
    v = row.get("attempt", "")
    return int(v) if v not in ("", "NA", None) else 1


def read_journal(run_dir: Path) -> list[tuple[str, int, int, str]]:
    """``(cell_id, rep, attempt, status)`` of every journalled attempt, in run order (a
    truncated last line is ignored; a line without ``attempt`` is attempt 1)."""
    path = run_dir / JOURNAL
    out: list[tuple[str, int, int, str]] = []
    if not path.exists():
        return out
    for line in path.read_bytes().split(b"\n"):
        try:
            d = json.loads(line)
            out.append((str(d["cell_id"]), int(d["rep"]), int(d.get("attempt", 1)), str(d.get("status", ""))))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue  # empty or truncated line
    return out


def read_done(run_dir: Path) -> set[tuple[str, int]]:
    """Keys ``(cell_id, rep)`` of the repetitions with at least one journalled attempt."""
    return {(c, r) for c, r, _, _ in read_journal(run_dir)}


def _complete_lines(data: bytes) -> tuple[list[bytes], bool]:
    """Complete lines of a file, and whether a truncated trailing line was found."""
    lines = data.split(b"\n")
    trailing = lines.pop()  # b"" when the file ends with a newline
    return lines, bool(trailing)


def read_rows(path: Path) -> list[dict[str, str]]:
    """Complete rows of a CSV (a truncated trailing line is skipped)."""
    if not path.exists():
        return []
    lines, _ = _complete_lines(path.read_bytes())
    if not lines:
        return []
    reader = csv.reader(io.StringIO("\n".join(x.decode() for x in lines)))
    rows = list(reader)
    header = rows[0]
    return [dict(zip(header, r)) for r in rows[1:] if len(r) == len(header)]


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` durably: a per-process temporary file, fsynced, renamed
    over ``path``, then the directory fsynced.  A crash leaves the old file or the new one."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with tmp.open("wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)
    dfd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def reconcile(run_dir: Path) -> dict[str, int]:
    """Make a run directory consistent with its journal; returns rows dropped per file."""
    done = {(c, r, a) for c, r, a, _ in read_journal(run_dir)}
    dropped: dict[str, int] = {}
    jpath = run_dir / JOURNAL
    if jpath.exists():
        lines, truncated = _complete_lines(jpath.read_bytes())
        if truncated:
            atomic_write(jpath, b"".join(x + b"\n" for x in lines))
            dropped[JOURNAL] = 1
    for exp in COLUMNS:
        path = run_dir / f"{exp}.csv"
        if not path.exists():
            continue
        lines, truncated = _complete_lines(path.read_bytes())
        if not lines:
            path.unlink()
            continue
        header = lines[0]
        names = next(csv.reader([header.decode()]))
        kept = [header]
        n_drop = int(truncated)
        for line in lines[1:]:
            fields = next(csv.reader([line.decode()]), [])
            row = dict(zip(names, fields))
            try:
                key = (row["cell_id"], int(row["rep"]), attempt_of(row))
            except (KeyError, ValueError):
                n_drop += 1
                continue
            if len(fields) != len(names) or key not in done:
                n_drop += 1
                continue
            kept.append(line)
        if n_drop:
            atomic_write(path, b"".join(x + b"\n" for x in kept))
            dropped[path.name] = n_drop
    return dropped
