"""Cross-machine comparison tables for notebooks: medians per machine, per vCPU and per
physical core, and the spread across machines.

Input: one experiment's frame from :func:`kbench.reporting.frames.load` (several run directories,
grouped by the ``machine`` column).  Only OK rows count.  Extensive quantities
(throughput, CPU %) get ``… per vCPU`` and ``… per core`` columns — divided by the
machine's ``logical_cores`` and ``physical_cores`` from its manifest; intensive ones
(latency, ratio) are compared as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kbench.experiments import registry
from kbench.experiments.spec import LABELS as EXPERIMENTS_LABELS
from kbench.experiments.spec import M_LABELS

if TYPE_CHECKING:
    import pandas as pd
    from pandas.io.formats.style import Styler

__all__ = ["machines", "per_machine", "spread", "style"]

#: Every label axis of A–F and M, and D's role: rows differing in any of them are never pooled.
LABELS = tuple(dict.fromkeys((*EXPERIMENTS_LABELS, *M_LABELS, "role")))


def machines(frames: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per machine: arch, CPU model, cores, runs."""
    import pandas as pd

    parts = [
        f[["machine", "arch", "cpu_model", "physical_cores", "logical_cores", "kernel", "run_id"]]
        for f in frames.values()
        if not f.empty
    ]
    if not parts:
        return pd.DataFrame()
    df = pd.concat(parts).drop_duplicates()
    return (
        df.groupby(["machine", "arch", "cpu_model", "physical_cores", "logical_cores", "kernel"], dropna=False)[
            "run_id"
        ]
        .agg(lambda s: ", ".join(sorted(set(s))))
        .reset_index()
        .rename(columns={"run_id": "runs"})
    )


def _labels(df: pd.DataFrame) -> list[str]:
    return [c for c in LABELS if c in df.columns and (c == "codec" or df[c].astype(str).nunique() > 1)]


def per_machine(df: pd.DataFrame, experiment: str) -> pd.DataFrame:
    """Median, min and max per machine × labels of the experiment's metrics (OK rows only),
    with ``n`` and, for extensive metrics, per-vCPU and per-core medians."""
    import pandas as pd

    if df is None or df.empty:
        return pd.DataFrame()
    ok = df[df["status"] == "OK"].copy()
    e = registry.get(experiment)
    if e.compare_frame is not None:
        ok = e.compare_frame(ok)
    metrics = [
        m for m in e.compare_metrics if m in ok.columns and pd.api.types.is_numeric_dtype(ok[m]) and ok[m].notna().any()
    ]
    keys = ["machine", *_labels(df)]
    if ok.empty or not metrics:
        return pd.DataFrame(columns=[*keys, "n"])
    g = ok.groupby(keys, dropna=False)
    out = g[metrics].median()
    for m in metrics:
        out[f"{m} min"] = g[m].min()
        out[f"{m} max"] = g[m].max()
    out["n"] = g.size()
    cores = g[["logical_cores", "physical_cores"]].first()
    for m in e.per_core:
        if m in metrics:
            out[f"{m} per vCPU"] = out[m] / cores["logical_cores"]
            out[f"{m} per core"] = out[m] / cores["physical_cores"]
    order = [
        c for m in metrics for c in (m, f"{m} min", f"{m} max", f"{m} per vCPU", f"{m} per core") if c in out.columns
    ]
    return out[order + ["n"]].reset_index()


def spread(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Across machines, per label combination: min, max and (max − min) / min in % of a
    :func:`per_machine` column (e.g. ``achieved_rate_msgs`` or ``… per core``)."""
    import pandas as pd

    if table.empty or metric not in table.columns:
        return pd.DataFrame()
    labels = [c for c in table.columns if c in LABELS]
    g = table.groupby(labels, dropna=False)[metric] if labels else table.groupby(lambda _: "all")[metric]
    out = pd.DataFrame({"machines": g.size(), "min": g.min(), "max": g.max()})
    out["spread %"] = (out["max"] - out["min"]) / out["min"] * 100
    return out.reset_index()


def style(table: pd.DataFrame, caption: str = "", precision: int = 2) -> Styler:
    """A pandas Styler with thousands separators and a caption (needs jinja2)."""
    fmts = {
        c: (f"{{:,.{precision}f}}" if str(table[c].dtype).startswith("float") else "{:,}")
        for c in table.columns
        if str(table[c].dtype).startswith(("float", "int"))
    }
    st = table.style.format(fmts, na_rep="NA").hide(axis="index")
    if caption:
        st = st.set_caption(caption)
    return st
