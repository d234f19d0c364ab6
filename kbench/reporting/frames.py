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

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:  # pandas is imported lazily: kbench run does not need it
    import pandas as pd

__all__ = [
    "EXPERIMENTS",
    "MACHINE_COLUMNS",
    "LoadError",
    "Run",
    "load",
    "load_runs",
    "machine_label",
    "read_run",
]

#: Experiments whose CSVs a run directory may hold (M: ``kbench codecs bench --csv``).
EXPERIMENTS: tuple[str, ...] = ("A", "B", "C", "D", "E", "F", "M")

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

#: Columns that are text even when they look numeric.
TEXT_COLUMNS = frozenset(
    {
        "cell_id",
        "sweep",
        "client",
        "codec",
        "corpus",
        "acks",
        "topic_compression",
        "status",
        "reason",
        "role",
        "latency_flag",
        "corpus_sha256",
        "stored_codecs",
        "wire_source",
        "fill_source",
        "producer_codec",
        "experiment",
        "pid",
        "corpus_near_random",
        "recompressed",
        "warmup",
        "level",
    }
    | set(MACHINE_COLUMNS)
)


class LoadError(ValueError):
    """A run directory cannot be read; the message names the problem and the fix."""


@dataclass(frozen=True)
class Run:
    """One run directory: its manifest and the CSV paths it holds."""

    index: int
    path: Path
    manifest: Mapping[str, Any]
    csvs: Mapping[str, Path] = field(default_factory=dict)

    @property
    def machine(self) -> Mapping[str, Any]:
        m = self.manifest.get("machine")
        return m if isinstance(m, Mapping) else {}

    @property
    def label(self) -> str:
        return machine_label(self.machine)


def machine_label(machine: Mapping[str, Any]) -> str:
    """The name a machine is grouped under: its ``label`` if the manifest has one, else
    ``arch cpu_model logical_cores vCPU/physical_cores cores #hostname_hash``."""
    if machine.get("label"):
        return str(machine["label"])
    if not machine:
        return "unknown machine"
    return (
        f"{machine.get('arch', '?')} {machine.get('cpu_model', '?')} "
        f"{machine.get('logical_cores', '?')} vCPU/{machine.get('physical_cores', '?')} cores "
        f"#{str(machine.get('hostname_hash', ''))[:6]}"
    )


def read_run(path: Path | str, index: int = 0) -> Run:
    """Read one run directory's manifest and list its experiment CSVs."""
    p = Path(path)
    if not p.is_dir():
        raise LoadError(f"{p}: not a directory; give run directories made by kbench run")
    mpath = p / "manifest.json"
    if not mpath.is_file():
        raise LoadError(f"{p}: no manifest.json; give a run directory made by kbench run (or add its manifest)")
    try:
        manifest = json.loads(mpath.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise LoadError(f"{mpath}: not valid JSON ({e}); restore the run's manifest.json") from None
    if not isinstance(manifest, dict):
        raise LoadError(f"{mpath}: not a JSON object; restore the run's manifest.json")
    csvs = {e: p / f"{e}.csv" for e in EXPERIMENTS if (p / f"{e}.csv").is_file()}
    if not csvs:
        raise LoadError(f"{p}: holds no experiment CSV (A.csv … F.csv, M.csv); did the run collect anything?")
    return Run(index=index, path=p, manifest=manifest, csvs=csvs)


def load_runs(paths: Sequence[Path | str]) -> list[Run]:
    """Read several run directories (at least one)."""
    if not paths:
        raise LoadError("no run directory given; give one or more RUN_DIRs made by kbench run")
    return [read_run(p, i) for i, p in enumerate(paths)]


def _ends_mid_line(path: Path) -> bool:
    with path.open("rb") as f:
        f.seek(0, 2)
        if f.tell() == 0:
            return False
        f.seek(-1, 2)
        return f.read(1) != b"\n"


def _read_csv(run: Run, exp: str) -> pd.DataFrame:
    """One CSV, all rows (M warm-ups included), text columns as text, ``NA`` as missing."""
    import pandas as pd

    path = run.csvs[exp]
    try:
        df = pd.read_csv(path, dtype={c: str for c in TEXT_COLUMNS}, na_values=["NA", ""], keep_default_na=False)
    except pd.errors.EmptyDataError:
        raise LoadError(f"{path}: empty; remove it or re-run the experiment") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as e:
        raise LoadError(
            f"{path}: not a CSV kbench can read ({str(e).splitlines()[0]}); restore it from the run"
        ) from None
    if len(df) and _ends_mid_line(path):  # an interrupted run's last row is incomplete: not data
        df = df.iloc[:-1]
    need = ("status",) if exp != "M" else ("status", "codec", "ratio")
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise LoadError(f"{path}: no column {', '.join(missing)}; is this a kbench {exp}.csv?")
    for c in df.columns:
        if c in TEXT_COLUMNS:
            df[c] = df[c].fillna("NA")
        elif df[c].dtype == object:  # a numeric column holding text: keep it as text
            df[c] = df[c].fillna("NA").astype(str)
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
    for exp in EXPERIMENTS:
        parts = [_read_csv(r, exp) for r in runs if exp in r.csvs]
        if not parts:
            continue
        df = pd.concat(parts, ignore_index=True, sort=False) if len(parts) > 1 else parts[0]
        for c in df.columns:
            if df[c].dtype == object:
                df[c] = df[c].fillna("NA")
        df["_gid"] = range(len(df))
        if exp == "M" and "warmup" in df.columns:
            df = df[df["warmup"].str.lower() != "true"].reset_index(drop=True)
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
    if exp not in EXPERIMENTS:
        raise LoadError(f"unknown experiment '{experiment}'; use one of {', '.join(EXPERIMENTS)}")
    return fr.get(exp, pd.DataFrame())
