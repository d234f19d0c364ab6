"""Tidy CSV results: one file per experiment, rows appended only when complete.

Crash safety: every completed repetition's rows are appended to the experiment CSVs
(write, flush, fsync), then its key ``(cell_id, rep, attempt)`` and status are appended to the
journal ``done.jsonl`` (flush, fsync).  An attempt is done only once it is in the journal.
:func:`reconcile` (run by ``--resume``) treats the CSVs as the record: a missing or damaged
journal is rebuilt from complete CSV rows (never the other way round); rows of an incomplete
repetition and a truncated trailing line are dropped, each file rewritten atomically and only
when something changes.
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

from kbench.engine import series
from kbench.engine.csvio import format_value, read_rows
from kbench.experiments import registry
from kbench.model.csvcell import safe_cell

__all__ = [
    "JOURNAL",
    "SERIES",
    "ResultsWriter",
    "format_value",
    "read_done",
    "Reconciled",
    "attempt_of",
    "read_journal",
    "read_rows",
    "reconcile",
]

JOURNAL = "done.jsonl"
#: The time series: one row per second per role per repetition (kbench.engine.series).
SERIES = "series.csv"


def _fsync_append(path: Path, data: bytes) -> None:
    # O_NOFOLLOW: a run appends to its own files, never through a symbolic link out of its directory
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "ab") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _csv_line(values: Sequence[str]) -> bytes:
    # One row is one line (the crash-safety rules are line-based): no newline inside a field.
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(
        [safe_cell(v.replace("\r", " ").replace("\n", " ")) for v in values]  # formula-looking text quoted
    )
    return buf.getvalue().encode()


@dataclass
class ResultsWriter:
    """Appends experiment rows and journal entries to a run directory."""

    run_dir: Path

    def csv_path(self, experiment: str) -> Path:
        return self.run_dir / f"{experiment}.csv"

    def append(self, experiment: str, rows: Iterable[Mapping[str, Any]]) -> None:
        cols = registry.columns(experiment)
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

    def write_hlog(self, cell_id: str, rep: int, text: str, attempt: int = 1) -> Path | None:
        """``histograms/<cell>-r<rep>.hlog`` (atomic): the repetition's interval histograms as an
        HdrHistogram interval log; a retried repetition's file holds its latest attempt."""
        if not text:
            return None
        d = self.run_dir / "histograms"
        d.mkdir(exist_ok=True)
        path = d / f"{cell_id}-r{rep}.hlog"
        atomic_write(path, f"#[kbench: cell {cell_id}, rep {rep}, attempt {attempt}]\n{text}".encode())
        return path

    def append_series(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Append one repetition's series rows to ``series.csv`` (before its experiment rows, so the
        journal entry that makes it done comes after both)."""
        path = self.run_dir / SERIES
        data = b"" if path.exists() and path.stat().st_size else _csv_line(series.COLUMNS)
        for row in rows:
            extra = set(row) - set(series.COLUMNS)
            if extra:
                raise KeyError(f"{SERIES} has no column(s) {', '.join(sorted(extra))}")
            data += _csv_line([format_value(row.get(c)) for c in series.COLUMNS])
        _fsync_append(path, data)

    def mark_done(
        self, cell_id: str, rep: int, status: str, attempt: int = 1, host: Mapping[str, Any] | None = None
    ) -> None:
        """Journal one attempt (``host``: its host-speed probes, kbench.engine.host_speed)."""
        line: dict[str, Any] = {"cell_id": cell_id, "rep": rep, "attempt": attempt, "status": status}
        if host is not None:
            line["host_speed"] = dict(host)
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


@dataclass
class Reconciled:
    """What :func:`reconcile` changed: rows dropped per file, journal entries restored from CSVs."""

    dropped: dict[str, int]
    restored: list[tuple[str, int, int]]

    @property
    def changed(self) -> bool:
        return bool(self.dropped or self.restored)


def _csv_keys(path: Path) -> tuple[bytes, list[tuple[bytes, tuple[str, int, int] | None, str]], int]:
    """A CSV's header, its complete lines with their (cell_id, rep, attempt) key (None when unusable) and
    status, and the number of truncated trailing lines (0 or 1).  A line cut inside a quoted field
    is a truncated trailing line too."""
    lines, truncated = _complete_lines(path.read_bytes())
    if not lines:
        return b"", [], int(truncated)
    header = lines[0]
    names = next(csv.reader([header.decode("utf-8", "replace")]), [])
    out: list[tuple[bytes, tuple[str, int, int] | None, str]] = []
    for line in lines[1:]:
        try:
            fields = next(csv.reader([line.decode()]), [])
            row = dict(zip(names, fields))
            key = (row["cell_id"], int(row["rep"]), attempt_of(row)) if len(fields) == len(names) else None
        except (KeyError, ValueError, csv.Error):
            key, row = None, {}
        out.append((line, key, row.get("status", "")))
    return header, out, int(truncated)


class HeaderError(ValueError):
    """A CSV of a run directory whose header is not its experiment's (docs/csv-schema.md)."""


def _check_header(path: Path, header: bytes, want: Sequence[str]) -> None:
    """Refuse to resume into a CSV another command or version wrote: rows appended under a
    foreign header would make one file of two schemas."""
    got = next(csv.reader([header.decode("utf-8", "replace")]), []) if header else list(want)
    if got != list(want):
        extra = [c for c in got if c not in want][:3]
        missing = [c for c in want if c not in got][:3]
        detail = "; ".join(
            x
            for x in (
                f"columns kbench does not write: {', '.join(extra)}" if extra else "",
                f"missing: {', '.join(missing)}" if missing else "",
                "the same columns in another order" if not extra and not missing else "",
            )
            if x
        )
        raise HeaderError(
            f"{path}: its header is not this kbench's {path.name} header ({detail}); it was written by another "
            "command or version: restore the run's own file, or start a new run directory"
        )


def reconcile(run_dir: Path, expected: Mapping[str, Sequence[str]] | None = None) -> Reconciled:
    """Make a run directory's journal agree with its CSVs, which are the record.

    A repetition is complete when each experiment it feeds (``expected``: cell_id -> experiments;
    by default every CSV holding a row of that cell) has a complete row for it.  Complete
    repetitions missing from the journal (deleted, damaged, or killed between the rows and the
    journal entry) are restored into it; rows of incomplete repetitions and truncated trailing
    lines are dropped, and their journal entries removed so they run again.  Files are rewritten
    atomically and only when something changes."""
    parsed = {}
    for exp in registry.run_experiments():
        path = run_dir / f"{exp}.csv"
        if path.exists():
            parsed[exp] = _csv_keys(path)
            _check_header(path, parsed[exp][0], registry.columns(exp))
    present: dict[str, dict[tuple[str, int, int], str]] = {
        exp: {k: st for _, k, st in rows if k is not None} for exp, (_, rows, _) in parsed.items()
    }
    cells: dict[str, set[str]] = {}
    for exp, keys in present.items():
        for cid, _, _ in keys:
            cells.setdefault(cid, set()).add(exp)
    complete: dict[tuple[str, int, int], str] = {}
    for keys in present.values():
        for key, status in keys.items():
            need = set(expected[key[0]]) if expected is not None and key[0] in expected else cells[key[0]]
            if all(key in present.get(e, {}) for e in need):
                complete.setdefault(key, status)
    dropped: dict[str, int] = {}
    for exp, (header, rows, truncated) in parsed.items():
        path = run_dir / f"{exp}.csv"
        kept = [line for line, key, _ in rows if key is not None and key in complete]
        n_drop = truncated + len(rows) - len(kept)
        if not kept and not rows:
            if not header:
                path.unlink()
            elif truncated:
                atomic_write(path, header + b"\n")
            if truncated:
                dropped[path.name] = n_drop
            continue
        if n_drop:
            atomic_write(path, b"".join(x + b"\n" for x in [header, *kept]))
            dropped[path.name] = n_drop
    # The series: only the rows of complete repetitions (its rows come before theirs).
    spath = run_dir / SERIES
    if spath.exists():
        header, srows, truncated = _csv_keys(spath)
        _check_header(spath, header, series.COLUMNS)
        kept = [line for line, key, _ in srows if key is not None and key in complete]
        n_drop = truncated + len(srows) - len(kept)
        if n_drop:
            atomic_write(spath, b"".join(x + b"\n" for x in [header, *kept]) if header else b"")
            dropped[SERIES] = n_drop
    # The journal: exactly the complete repetitions, in the order they were journaled.
    jpath = run_dir / JOURNAL
    journaled: list[tuple[str, int, int]] = []
    bad = 0
    if jpath.exists():
        for line in jpath.read_bytes().split(b"\n"):
            if not line:
                continue
            try:
                d = json.loads(line)
                journaled.append((str(d["cell_id"]), int(d["rep"]), int(d.get("attempt", 1))))
            except (ValueError, KeyError, TypeError):
                bad += 1
    seen = set(journaled)
    restored = [k for k in sorted(complete) if k not in seen]
    stale = [k for k in journaled if k not in complete]
    if bad or restored or stale or len(seen) != len(journaled):
        order = [k for k in dict.fromkeys(journaled) if k in complete] + restored
        body = b"".join(
            (json.dumps({"cell_id": c, "rep": r, "attempt": a, "status": complete[(c, r, a)]}) + "\n").encode()
            for c, r, a in order
        )
        atomic_write(jpath, body)
        if bad or stale:
            dropped[JOURNAL] = bad + len(stale)
    return Reconciled(dropped, restored)
