"""Run directories as pandas DataFrames: one frame per experiment, machine columns added.

``load(RUN_DIR, ...)`` reads each run directory's ``manifest.json`` and its experiment CSVs
(``A.csv`` … ``F.csv`` written by ``kbench run``, and ``M.csv`` written by
``kbench codecs bench --csv RUN_DIR/M.csv``) and concatenates them across runs.  Every row
gets the columns of :data:`MACHINE_COLUMNS`, taken from the manifest's ``machine`` object,
so runs from several machines can be grouped by ``machine``.

Values are kept as the CSV has them, with ``NA`` read as missing; numeric columns become
floats.  ``_run`` and ``_row`` give each row's run directory index and its 0-based data
row in the CSV, so any figure computed from a frame can be traced back to its source.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, overload

from kbench.engine.csvio import (
    DRIFT,
    MACHINE_COLUMNS,
    TEXT_COLUMNS,
    WARMUP_COLUMN,
    bad_values,
    complete_bytes,
    drifted,
    format_value,
)
from kbench.engine.status import MISSING, Status
from kbench.experiments import registry
from kbench.experiments.spec import CONTROL_COLUMN
from kbench.model import textfile
from kbench.model.csvcell import read_cell
from kbench.reporting.runs import LoadError, Run, machine_label

if TYPE_CHECKING:  # pandas is imported lazily: kbench run does not need it
    import pandas as pd

__all__ = [
    "MACHINE_COLUMNS",
    "LoadError",
    "Run",
    "load",
    "load_runs",
    "machine_label",
    "read_run",
    "unique_dirs",
]


def read_run(path: Path | str, index: int = 0) -> Run:
    """Read one run directory's manifest and list its experiment CSVs."""
    p = Path(path)
    if not p.is_dir():
        raise LoadError(f"{p}: not a directory; give run directories made by kbench run")
    mpath = p / "manifest.json"
    if not mpath.is_file():
        raise LoadError(f"{p}: no manifest.json; give a run directory made by kbench run (or add its manifest)")
    try:  # bounded, an object, nested a few levels (kbench.model.textfile)
        manifest = textfile.loads_json(textfile.read_text(mpath, "manifest"), str(mpath))
    except textfile.TextFileError as e:
        raise LoadError(f"{e}; restore the run's manifest.json") from None
    csvs = {e: p / f"{e}.csv" for e in registry.ids() if (p / f"{e}.csv").is_file()}
    if not csvs:
        raise LoadError(f"{p}: holds no experiment CSV (A.csv … F.csv, M.csv); did the run collect anything?")
    return Run(index=index, path=p, manifest=manifest, csvs=csvs)


def unique_dirs(paths: Sequence[Path | str]) -> list[Path]:
    """``paths`` without repeats: the same directory given twice (or through another path to it)
    is one run, not two."""
    out: list[Path] = []
    seen: set[Path] = set()
    for p in paths:
        key = Path(p).resolve()
        if key not in seen:
            seen.add(key)
            out.append(Path(p))
    return out


def _check_same_run_and_plan(runs: Sequence[Run]) -> None:
    """Refuse copies of one run (same run_id: its rows would count twice) and runs of different
    plans (different cell matrices: pooling them would compare what was not measured alike)."""
    by_id: dict[str, Run] = {}
    for r in runs:
        rid = r.manifest.get("run_id")
        if rid and str(rid) in by_id:
            raise LoadError(f"{r.path} and {by_id[str(rid)].path} hold the same run (run_id {rid}); give it once")
        if rid:
            by_id[str(rid)] = r
    kinds: dict[str, Run] = {}
    for r in runs:
        t = r.manifest.get("transport")
        kind = str(t.get("kind", "")) if isinstance(t, Mapping) else ""
        kinds.setdefault(kind, r)
    if len(kinds) > 1:
        (ka, ra), (kb, rb) = sorted(kinds.items())[:2]
        raise LoadError(
            f"{ra.path} ran on the {ka or 'unknown'} transport and {rb.path} on the {kb or 'unknown'} transport; "
            "a figure pooled over them would mix measurements of different kinds: report each transport's runs separately"
        )
    with_cells = [r for r in runs if isinstance(r.manifest.get("cells"), Mapping)]
    if not with_cells:
        return
    first = with_cells[0]
    for r in with_cells[1:]:
        a, b = first.manifest["cells"], r.manifest["cells"]
        if a != b:
            diff = sorted(set(a) ^ set(b)) or sorted(k for k in a if a[k] != b.get(k))
            raise LoadError(
                f"{first.path} (plan {first.manifest.get('plan_name', '?')}) and {r.path} "
                f"(plan {r.manifest.get('plan_name', '?')}) ran different plans (cell {diff[0]} differs); "
                "pooling them would compare cells not measured alike: report each plan's runs separately"
            )


def load_runs(paths: Sequence[Path | str]) -> list[Run]:
    """Read several run directories (at least one; a directory given twice counts once).
    Raises :class:`LoadError` for copies of one run and for runs of different plans."""
    if not paths:
        raise LoadError("no run directory given; give one or more RUN_DIRs made by kbench run")
    runs = [read_run(p, i) for i, p in enumerate(unique_dirs(paths))]
    _check_same_run_and_plan(runs)
    return runs


def _exclude_bad_values(df: pd.DataFrame, raw: bytes, path: Path) -> pd.DataFrame:
    """Rows :func:`bad_values` finds in the CSV's text (the rule ``--verify`` applies to the same
    text) become INVALID with its reason; numeric columns holding stray text turn numeric."""
    import pandas as pd

    cand = [c for c in df.columns if c not in TEXT_COLUMNS and not pd.api.types.is_numeric_dtype(df[c])]
    text = list(csv.DictReader(io.StringIO(raw.decode("utf-8", "replace"), newline="")))
    bad = bad_values(text, path.name)
    for i, why in bad.items():
        if i >= len(df):
            continue
        df.loc[df.index[i], "status"] = "INVALID"
        df.loc[df.index[i], "reason"] = why
    for c in cand:
        num = pd.to_numeric(df[c], errors="coerce")
        if num.notna().any():
            df[c] = num
    return df


def _check_rows(df: pd.DataFrame, path: Path) -> None:
    """Refuse what no run writes: a status kbench does not define, and a row given twice (the same
    cell, repetition, attempt and role: it would count twice in every median and n)."""
    known = {s.value for s in Status}
    for i, s in enumerate(df["status"].fillna(MISSING)):  # the status NA reads as missing here
        if s not in known:
            raise LoadError(
                f"{path}: row {i + 1} has status {s!r}, which kbench never writes (it writes "
                f"{', '.join(sorted(known))}); restore the file from the run"
            )
    key = [c for c in ("cell_id", "rep", "attempt", "role") if c in df.columns]
    if len(key) >= 2:
        dup = df.duplicated(subset=key, keep="first")
        if dup.any():
            i = int(dup.to_numpy().nonzero()[0][0])
            first = df[key].iloc[:i].eq(df[key].iloc[i]).all(axis=1).to_numpy().nonzero()[0][0]
            raise LoadError(
                f"{path}: row {i + 1} repeats row {first + 1} (same {', '.join(key)}): one repetition "
                "counted twice; remove the copy or restore the file from the run"
            )


def _check_schema(df: pd.DataFrame, raw: bytes, path: Path, exp: str) -> None:
    """Refuse a file of another schema, or of two: a CSV another command wrote over the run's
    (its header lacks what every kbench ``exp``.csv has), and rows appended under a header of
    another schema (their field counts differ from the header's).  Runs of another kbench
    version lacking a column added since (``rate``, ``attempt``), or holding one added later,
    are read as they are."""
    missing = [c for c in registry.get(exp).required_columns if c not in df.columns]
    if missing:
        raise LoadError(
            f"{path}: no column {', '.join(missing)}, which every kbench {exp}.csv has; it was written by another "
            f"command: restore the run's own {exp}.csv, or move this file out of the run directory"
        )
    rows = (r for r in csv.reader(io.StringIO(raw.decode("utf-8", "replace"))) if r)
    width = len(next(rows, []))
    for i, r in enumerate(rows):
        if len(r) != width:
            raise LoadError(
                f"{path}: row {i + 1} has {len(r)} fields, the header {width}: rows of another schema were "
                f"appended to this file; restore the run's own {exp}.csv"
            )


def _add_plan_rate(df: pd.DataFrame, run: Run) -> None:
    """CSVs written before the ``rate`` column: the plan's rate of each cell from the manifest,
    so cells at different rates are not pooled."""
    cells = run.manifest.get("cells")
    if "rate" in df.columns or "cell_id" not in df.columns or not isinstance(cells, Mapping):
        return
    rates = {cid: format_value(c.get("rate")) for cid, c in cells.items() if isinstance(c, Mapping)}
    df["rate"] = df["cell_id"].map(lambda cid: rates.get(cid, "NA"))


def _exclude_drift(df: pd.DataFrame, run: Run) -> None:
    """OK rows of a repetition the run flagged DRIFT (csvio.drifted) leave medians and verdicts:
    status DRIFT, the drift line as reason (listed under Excluded data points)."""
    drift = drifted(run.manifest)
    if not drift or "cell_id" not in df.columns or "rep" not in df.columns:
        return
    for i in df.index:
        rep = df.at[i, "rep"]
        rep_t = str(int(rep)) if isinstance(rep, (int, float)) and float(rep).is_integer() else str(rep)
        line = drift.get((str(df.at[i, "cell_id"]), rep_t))
        if line is not None and df.at[i, "status"] == "OK":
            df.at[i, "status"], df.at[i, "reason"] = DRIFT, line


def _read_csv(run: Run, exp: str) -> pd.DataFrame:
    """One CSV, all rows (M warm-ups included), text columns as text, ``NA`` as missing."""
    import pandas as pd

    path = run.csvs[exp]
    raw = complete_bytes(path.read_bytes())
    try:
        df = pd.read_csv(
            io.BytesIO(raw),
            dtype={c: str for c in TEXT_COLUMNS},
            na_values=["NA", ""],
            keep_default_na=False,
        )
    except pd.errors.EmptyDataError:
        raise LoadError(f"{path}: empty; remove it or re-run the experiment") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as e:
        raise LoadError(
            f"{path}: not a CSV kbench can read ({str(e).splitlines()[0]}); restore it from the run"
        ) from None
    _check_schema(df, raw, path, exp)
    _add_plan_rate(df, run)
    if "cell_id" in df.columns and CONTROL_COLUMN not in df.columns:  # runs from before A/A controls
        df[CONTROL_COLUMN] = "NA"
    _check_rows(df, path)
    df = _exclude_bad_values(df, raw, path)
    _exclude_drift(df, run)
    for c in df.columns:
        if c in TEXT_COLUMNS:
            df[c] = df[c].fillna("NA").map(read_cell)  # a formula-looking text was written quoted
        elif df[c].dtype == object:  # a numeric column holding text: keep it as text
            df[c] = df[c].fillna("NA").astype(str).map(read_cell)
    df["_run"] = run.index
    df["_row"] = range(len(df))
    m = run.machine
    df["machine"] = run.label
    for col in ("arch", "cpu_model", "kernel", "hostname_hash"):
        v = m.get(col)
        df[col] = "NA" if v is None else str(v)
    for col in ("physical_cores", "logical_cores", "memory_bytes"):
        v = m.get(col)
        df[col] = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else float("nan")
    df["run_id"] = str(run.manifest.get("run_id", run.path.name))
    df["run_dir"] = str(run.path)
    df["plan_name"] = str(run.manifest.get("plan_name", ""))
    t = run.manifest.get("transport")
    df["transport"] = str(t.get("kind", "")) if isinstance(t, Mapping) else ""
    return df


def frames(runs: Sequence[Run]) -> dict[str, pd.DataFrame]:
    """One DataFrame per experiment present in any of ``runs``.

    ``_gid`` is a row's position in the concatenation, in run order, of the experiment's
    CSV rows (all of them): what :mod:`kbench.reporting.provenance` row sets refer to."""
    import pandas as pd

    out: dict[str, pd.DataFrame] = {}
    for exp in registry.ids():
        parts = [_read_csv(r, exp) for r in runs if exp in r.csvs]
        if not parts:
            continue
        df = pd.concat(parts, ignore_index=True, sort=False) if len(parts) > 1 else parts[0]
        for c in df.columns:
            if df[c].dtype == object:
                df[c] = df[c].fillna("NA")
        df["_gid"] = range(len(df))
        if WARMUP_COLUMN in df.columns:
            df = df[df[WARMUP_COLUMN].str.lower() != "true"].reset_index(drop=True)
        out[exp] = df
    return out


@overload
def load(*run_dirs: Path | str) -> dict[str, pd.DataFrame]: ...


@overload
def load(*run_dirs: Path | str, experiment: str) -> pd.DataFrame: ...


def load(*run_dirs: Path | str, experiment: str | None = None) -> dict[str, pd.DataFrame] | pd.DataFrame:
    """Results of one or more run directories as DataFrames, with machine columns.

    ``load(d1, d2)`` returns ``{"A": frame, "B": frame, ...}`` for the experiments present;
    ``load(d1, d2, experiment="A")`` returns that experiment's frame (empty if absent).
    Rows keep their ``status``/``reason``; filter on ``status == "OK"`` for the measured ones.
    """
    import pandas as pd

    if len(run_dirs) == 1 and isinstance(run_dirs[0], (list, tuple)):
        run_dirs = tuple(run_dirs[0])
    fr = frames(load_runs(list(run_dirs)))
    if experiment is None:
        return fr
    exp = experiment.upper()
    if exp not in registry.ids():
        raise LoadError(f"unknown experiment '{experiment}'; use one of {', '.join(registry.ids())}")
    return fr.get(exp, pd.DataFrame())
