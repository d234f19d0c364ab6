"""Tidy CSV results: one file per experiment, rows appended only when complete.

Crash safety: every completed repetition's rows are appended to the experiment CSVs
(write, flush, fsync), then its key ``(cell_id, rep)`` is appended to the journal
``done.jsonl`` (flush, fsync).  A repetition is done only once it is in the journal.
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

__all__ = [
    "COLUMNS",
    "JOURNAL",
    "ResultsWriter",
    "STATUSES",
    "format_value",
    "read_done",
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

CELL_COLUMNS: tuple[str, ...] = (
    "cell_id",
    "rep",
    "sweep",
    "client",
    "codec",
    "corpus",
    "batch_size",
    "linger_ms",
    "partitions",
    "acks",
    "topic_compression",
    "target_rate_msgs",
    "achieved_rate_msgs",
    "rate_error_pct",
    "messages",
)
TAIL_COLUMNS: tuple[str, ...] = ("status", "reason")

_LAT = ("p50_us", "p95_us", "p99_us", "p999_us", "max_us")

COLUMNS: dict[str, tuple[str, ...]] = {
    "A": CELL_COLUMNS
    + tuple(f"corrected_{p}" for p in _LAT)
    + tuple(f"service_{p}" for p in _LAT)
    + (
        "delay_p99_us",
        "delay_max_us",
        "e2e_p50_us",
        "e2e_p99_us",
        "e2e_max_us",
        "out_of_range",
        "lost",
        "duplicated",
        "delivery_errors",
    )
    + TAIL_COLUMNS,
    "B": CELL_COLUMNS
    + (
        "payload_mb_per_s",
        "producer_wire_mb_per_s",
        "service_p50_us",
        "service_p99_us",
        "latency_flag",
        "lost",
        "duplicated",
        "delivery_errors",
    )
    + TAIL_COLUMNS,
    "C": CELL_COLUMNS
    + (
        "payload_bytes",
        "stored_bytes",
        "ratio",
        "batch_ratio",
        "corpus_entropy_bits",
        "corpus_sha256",
        "corpus_near_random",
        "stored_batches",
        "stored_codecs",
    )
    + TAIL_COLUMNS,
    "D": CELL_COLUMNS
    + (
        "role",
        "pid",
        "usr_pct",
        "sys_pct",
        "cpu_s",
        "payload_gb",
        "cpu_s_per_gb",
        "wire_bytes",
        "wire_source",
        "steal_pct",
    )
    + TAIL_COLUMNS,
    "E": CELL_COLUMNS
    + (
        "batches",
        "records_per_batch_p50",
        "records_per_batch_p90",
        "records_per_batch_max",
        "bytes_per_batch_p50",
        "bytes_per_batch_p90",
        "bytes_per_batch_max",
        "fill_source",
        "client_records_per_batch_p50",
        "client_records_per_batch_p90",
        "client_batch_bytes_p50",
        "client_batch_bytes_p90",
        "payload_bytes",
        "stored_bytes",
        "ratio",
    )
    + TAIL_COLUMNS,
    "F": CELL_COLUMNS
    + (
        "producer_codec",
        "stored_codecs",
        "recompressed",
        "broker_usr_pct",
        "broker_sys_pct",
        "broker_cpu_s_per_gb",
        "payload_bytes",
        "stored_bytes",
    )
    + TAIL_COLUMNS,
}


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

    def write_histograms(self, cell_id: str, rep: int, histograms: Mapping[str, str]) -> Path | None:
        """``histograms/<cell>-r<rep>.json`` (atomic), written before the repetition's rows."""
        if not histograms:
            return None
        d = self.run_dir / "histograms"
        d.mkdir(exist_ok=True)
        path = d / f"{cell_id}-r{rep}.json"
        body = {
            "cell_id": cell_id,
            "rep": rep,
            "unit": "ns",
            "encoding": "kbench.Histogram.encode, base64",
            "histograms": dict(histograms),
        }
        atomic_write(path, (json.dumps(body, sort_keys=True) + "\n").encode())
        return path

    def mark_done(self, cell_id: str, rep: int, status: str) -> None:
        _fsync_append(
            self.run_dir / JOURNAL, (json.dumps({"cell_id": cell_id, "rep": rep, "status": status}) + "\n").encode()
        )


def read_done(run_dir: Path) -> set[tuple[str, int]]:
    """Keys of the repetitions in the journal (a truncated last line is ignored)."""
    path = run_dir / JOURNAL
    out: set[tuple[str, int]] = set()
    if not path.exists():
        return out
    for line in path.read_bytes().split(b"\n"):
        try:
            d = json.loads(line)
            out.add((str(d["cell_id"]), int(d["rep"])))
        except (ValueError, KeyError, TypeError):
            continue  # empty or truncated line
    return out


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
    done = read_done(run_dir)
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
                key = (row["cell_id"], int(row["rep"]))
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
