"""Reading and writing experiment CSV text: the one set of rules every reader uses.

- a value's CSV text (:func:`format_value`): ``NA`` for missing, ``true``/``false``, 7 significant digits;
- a cell's number (:func:`number`): ``NA``/empty → None, ``true``/``false`` → 1/0;
- a file's complete rows only (:func:`complete_bytes`, :func:`read_rows`): an interrupted run's
  truncated last line (even one cut inside a quoted field) is not data;
- a row holding stray text in a numeric column is excluded (:func:`bad_values`), never blanks a column;
- which columns are text (:data:`TEXT_COLUMNS`) and which come from the manifest (:data:`MACHINE_COLUMNS`).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kbench.engine.status import MISSING
from kbench.model.csvcell import read_cell

__all__ = [
    "DRIFT",
    "MACHINE_COLUMNS",
    "TEXT_COLUMNS",
    "WARMUP_COLUMN",
    "bad_values",
    "complete_bytes",
    "drifted",
    "format_value",
    "is_warmup",
    "number",
    "read_rows",
]


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


#: Columns added to every row from the manifest (``machine`` is the grouping label).
MACHINE_COLUMNS: tuple[str, ...] = (
    "machine",
    "arch",
    "cpu_model",
    "physical_cores",
    "logical_cores",
    "memory_bytes",
    "kernel",
    "hostname_hash",
    "run_id",
    "run_dir",
    "plan_name",
    "transport",
)


#: Columns that are text even when they look numeric (labels, statuses, sources).
TEXT_COLUMNS = frozenset(
    {
        "cell_id",
        "sweep",
        "client",
        "codec",
        "corpus",
        "acks",
        "rate",
        "key_policy",
        "topic_compression",
        "status",
        "reason",
        "role",
        "latency_flag",
        "corpus_sha256",
        "stored_codecs",
        "stored_source",
        "cpu_source",
        "wire_source",
        "nic_source",
        "fill_source",
        "producer_codec",
        "experiment",
        "pid",
        "corpus_near_random",
        "recompressed",
        "warmup",
        "level",
        "control_of",
    }
    | set(MACHINE_COLUMNS)
)


#: Numeric columns that may be negative (every other measurement is a count, a size, a time, a
#: rate, a share or a ratio: never below 0).
#: ``phase_fetch_wait_p50_us`` is a difference of medians of two populations (e2e p50 of the sampled
#: records minus the service p50 of all of them, minus one batch's decompression): near zero it can
#: come out negative without any row being wrong
SIGNED_COLUMNS = frozenset({"rate_error_pct", "phase_fetch_wait_p50_us"})


def bad_values(rows: Sequence[Mapping[str, object]], name: str) -> dict[int, str]:
    """Rows (by position) that cannot stand as data, with the reason: stray text in a numeric
    column, and in an OK row a non-finite number (``nan``, ``inf``) or a negative one where none can
    be.  The one rule by which the loader and ``--verify`` exclude a row (INVALID, listed with its
    reason) so one bad cell can neither blank a column nor enter a median."""
    out: dict[int, str] = {}
    cols = [c for c in (rows[0] if rows else {}) if c not in TEXT_COLUMNS]
    for c in cols:
        vals = [r.get(c) for r in rows]
        given = [(i, v) for i, v in enumerate(vals) if v is not None and str(v).strip() not in ("", "NA", "nan")]
        bad = [(i, v) for i, v in given if not _is_float(v)]
        if bad and len(bad) < len(given):  # a numeric column holding stray text
            for i, v in bad:
                out.setdefault(i, f"{c}: {v!r} is not a number ({name} row {i + 1})")
    for i, r in enumerate(rows):
        if str(r.get("status", "")) != "OK" or i in out:
            continue
        for c in cols:
            v = r.get(c)
            t = "" if v is None else str(v).strip()
            if t in ("", MISSING) or not _is_float(t):
                continue
            x = float(t)
            if not math.isfinite(x):
                out[i] = f"{c}: {t!r} is not a finite number in an OK row ({name} row {i + 1})"
                break
            if x < 0 and c not in SIGNED_COLUMNS:
                out[i] = f"{c}: {t} is negative in an OK row, which it cannot be ({name} row {i + 1})"
                break
    return out


#: The status a reader gives the OK rows of a repetition the run flagged ``DRIFT`` (the manifest's
#: ``drift``): excluded from medians and verdicts like any status but OK, listed with the drift line.
DRIFT = "DRIFT"


def drifted(manifest: Mapping[str, object]) -> dict[tuple[str, str], str]:
    """(cell_id, rep) → the drift line of every repetition the run flagged (manifest ``drift``:
    ``"<cell> r<rep>"`` → ``DRIFT: rate drifted +19.8 % …``)."""
    d = manifest.get("drift")
    out = {}
    for k, line in d.items() if isinstance(d, Mapping) else ():
        cell, _, rep = str(k).rpartition(" r")
        if cell:
            out[(cell, rep)] = str(line)
    return out


#: A column whose ``true`` marks a warm-up row: kept in the CSV, never in a figure.
WARMUP_COLUMN = "warmup"


def is_warmup(row: Mapping[str, object]) -> bool:
    return str(row.get(WARMUP_COLUMN, "")).lower() == "true"


def _is_float(v: object) -> bool:
    try:
        float(str(v))
        return True
    except ValueError:
        return False


def number(text: object) -> float | None:
    """A CSV cell's number: None for a missing value (``NA``, empty) or text; booleans as 1/0."""
    t = "" if text is None else str(text).strip()
    if t in ("", MISSING):
        return None
    if t.lower() in ("true", "false"):
        return 1.0 if t.lower() == "true" else 0.0
    try:
        return float(t)
    except ValueError:
        return None


def complete_bytes(data: bytes) -> bytes:
    """A CSV's bytes up to its last newline: an interrupted run's incomplete last line (even one
    cut inside a quoted field) is not data."""
    return data if data.endswith(b"\n") else data[: data.rfind(b"\n") + 1]


def read_rows(path: Path) -> list[dict[str, str]]:
    """Complete rows of a CSV (a truncated trailing line is skipped; a row of another length too)."""
    if not path.exists():
        return []
    text = complete_bytes(path.read_bytes()).decode()
    rows = list(csv.reader(io.StringIO(text, newline="")))
    if not rows:
        return []
    header = rows[0]
    return [dict(zip(header, map(read_cell, r), strict=True)) for r in rows[1:] if len(r) == len(header)]
