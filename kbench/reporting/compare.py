"""Cross-machine comparison tables for notebooks: medians per machine, per vCPU and per
physical core, and the spread across machines.

Input: one experiment's frame from :func:`kbench.reporting.frames.load` (several run directories,
grouped by the ``machine`` column).  Only OK rows count.  Extensive quantities
(throughput, CPU %) get ``… per vCPU`` and ``… per core`` columns — divided by the
machine's ``logical_cores`` and ``physical_cores`` from its manifest; intensive ones
(latency, ratio) are compared as they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd
    from pandas.io.formats.style import Styler

__all__ = ["METRICS", "PER_CORE", "machines", "per_machine", "spread", "style"]

#: Per experiment: the metric columns shown (median over OK repetitions).
METRICS: dict[str, tuple[str, ...]] = {
    "A": ("target_rate_msgs", "corrected_p50_us", "corrected_p95_us", "corrected_p99_us", "corrected_p999_us"),
    "B": ("achieved_rate_msgs", "payload_mb_per_s"),
    "C": ("corpus_entropy_bits", "payload_bytes", "stored_bytes", "ratio"),
    "D": ("usr_pct", "sys_pct", "total_pct", "cpu_s_per_gb"),
    "E": ("ratio", "records_per_batch_p50", "bytes_per_batch_p50", "batches"),
    "F": ("broker_cpu_s_per_gb", "broker_usr_pct", "broker_sys_pct"),
    "M": ("ratio", "compress_mb_s", "decompress_mb_s"),
}
#: Metrics that scale with the machine's CPUs, normalised per vCPU and per physical core.
PER_CORE: dict[str, tuple[str, ...]] = {
    "B": ("achieved_rate_msgs",),
    "D": ("total_pct",),
    "F": ("broker_usr_pct", "broker_sys_pct"),
    "M": ("compress_mb_s",),
}
LABELS = (
    "client",
    "codec",
    "level",
    "block_size",
    "corpus",
    "batch_size",
    "linger_ms",
    "partitions",
    "acks",
    "topic_compression",
    "role",
)


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
    if experiment == "D" and {"usr_pct", "sys_pct"} <= set(ok.columns):
        ok["total_pct"] = ok["usr_pct"] + ok["sys_pct"]
    metrics = [
        m
        for m in METRICS[experiment]
        if m in ok.columns and pd.api.types.is_numeric_dtype(ok[m]) and ok[m].notna().any()
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
    for m in PER_CORE.get(experiment, ()):
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


def split_by_machine(
    frames: Mapping[str, pd.DataFrame], experiments: Sequence[str]
) -> dict[str, dict[str, pd.DataFrame]]:
    """``{machine: {experiment: frame}}`` for the given experiments."""
    out: dict[str, dict[str, pd.DataFrame]] = {}
    for e in experiments:
        f = frames.get(e)
        if f is None or f.empty:
            continue
        for m, g in f.groupby("machine"):
            out.setdefault(str(m), {})[e] = g
    return out
