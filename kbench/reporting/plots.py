"""The report's plots, drawn headless with matplotlib's Agg canvas (no pyplot, no display).

Each function takes one experiment's DataFrame (from :func:`kbench.reporting.frames.load`) and
returns a :class:`matplotlib.figure.Figure`, or ``None`` when the frame has no OK row with
the values the plot needs.  Only rows with ``status == "OK"`` are drawn; points are medians
over repetitions, error bars the range (min–max).  :func:`png` turns a figure into bytes.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from kbench.experiments.spec import LABELS

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = [
    "batch_effect",
    "cpu_per_role",
    "latency_percentiles",
    "pareto",
    "png",
    "ratio_vs_entropy",
    "throughput",
]


def _figure(w: float = 8.0, h: float = 4.2) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), dpi=DPI)
    fig.subplots_adjust(left=0.09, right=0.98, top=0.9, bottom=0.14, wspace=0.25)
    FigureCanvasAgg(fig)
    return fig


def png(fig: Figure) -> bytes:
    """The figure as PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def _ok(df: pd.DataFrame | None, *cols: str) -> pd.DataFrame | None:
    if df is None or df.empty or any(c not in df.columns for c in cols):
        return None
    ok = df[df["status"] == "OK"].dropna(subset=list(cols))
    return ok if not ok.empty else None


def _join(df: pd.DataFrame, cols: list[str]) -> pd.Series:
    s = df[cols[0]].astype(str)
    for c in cols[1:]:
        s = s + " / " + df[c].astype(str)
    return s


MAX_LEGEND = 12
DPI = 80


def _legend(ax: object) -> None:
    """A legend, unless there are too many series to read one."""
    handles, labels = ax.get_legend_handles_labels()  # type: ignore[attr-defined]
    if 0 < len(labels) <= MAX_LEGEND:
        ax.legend(fontsize=7)  # type: ignore[attr-defined]


def _varying(df: pd.DataFrame, cols: list[str]) -> list[str]:
    return [c for c in cols if c in df.columns and df[c].astype(str).nunique() > 1]


def _other_labels(df: pd.DataFrame, *shown: str) -> list[str]:
    """The label axes (besides ``shown``) that vary in ``df``: each gets its own series, so no
    plot pools cells that differ in a plan axis."""
    return _varying(df, [c for c in LABELS if c not in shown])


def latency_percentiles(a: pd.DataFrame | None) -> Figure | None:
    """Experiment A: corrected latency percentiles per codec (and machine) at the fixed rate."""
    pcts = [
        ("p50", "corrected_p50_us"),
        ("p95", "corrected_p95_us"),
        ("p99", "corrected_p99_us"),
        ("p99.9", "corrected_p999_us"),
    ]
    ok = _ok(a, *(c for _, c in pcts))
    if ok is None:
        return None
    keys = ["machine", "codec"] + _other_labels(ok, "codec")
    fig = _figure()
    ax = fig.add_subplot()
    for key, g in ok.groupby(keys, sort=True):
        k = key if isinstance(key, tuple) else (key,)
        med = [g[c].median() for _, c in pcts]
        lo = [g[c].min() for _, c in pcts]
        hi = [g[c].max() for _, c in pcts]
        x = range(len(pcts))
        ax.errorbar(
            x,
            med,
            yerr=[[m - low for m, low in zip(med, lo)], [h - m for m, h in zip(med, hi)]],
            marker="o",
            capsize=3,
            label=" / ".join(map(str, k)),
        )
    ax.set_xticks(range(len(pcts)), [p for p, _ in pcts])
    ax.set_yscale("log")
    ax.set_ylabel("corrected latency (µs, log)")
    ax.set_title("A · latency percentiles at the common fixed rate (median, range)")
    _legend(ax)
    return fig


def throughput(b: pd.DataFrame | None) -> Figure | None:
    """Experiment B: saturated throughput per codec and machine (median bar, range whisker)."""
    ok = _ok(b, "achieved_rate_msgs")
    if ok is None:
        return None
    series = ["codec"] + _other_labels(ok, "codec")
    machines = sorted(ok["machine"].unique())
    ok = ok.assign(_series=_join(ok, series))
    labels = sorted(ok["_series"].unique())
    fig = _figure()
    ax = fig.add_subplot()
    width = 0.8 / max(1, len(labels))
    for j, lab in enumerate(labels):
        sel = ok[ok["_series"] == lab]
        med, err_lo, err_hi = [], [], []
        for m in machines:
            v = sel[sel["machine"] == m]["achieved_rate_msgs"]
            md = v.median() if len(v) else float("nan")
            med.append(md)
            err_lo.append(md - v.min() if len(v) else 0)
            err_hi.append(v.max() - md if len(v) else 0)
        xs = [i + (j - (len(labels) - 1) / 2) * width for i in range(len(machines))]
        ax.bar(xs, med, width, yerr=[err_lo, err_hi], capsize=3, label=lab)
    ax.set_xticks(range(len(machines)), machines, fontsize=7)
    ax.set_ylabel("msgs/s (saturated)")
    ax.set_title("B · saturated throughput per codec and machine (median, range)")
    _legend(ax)
    return fig


def cpu_per_role(d: pd.DataFrame | None) -> Figure | None:
    """Experiment D: CPU % per role (one panel each), usr solid and sys light on top, one
    bar per machine within each codec (and corpus) group; medians over repetitions and cells."""
    ok = _ok(d, "usr_pct", "sys_pct")
    if ok is None:
        return None
    group = ["codec"] + _other_labels(ok, "codec")
    ok = ok.assign(_group=_join(ok, group))
    med = ok.groupby(["role", "_group", "machine"], sort=True)[["usr_pct", "sys_pct"]].median()
    roles = sorted(ok["role"].unique())[:6]
    groups = sorted(ok["_group"].unique())
    machines = sorted(ok["machine"].unique())
    fig = _figure(max(8.0, 2.6 * len(roles)), 4.2)
    width = 0.8 / max(1, len(machines))
    colors = [f"C{i % 10}" for i in range(len(machines))]
    for i, role in enumerate(roles):
        ax = fig.add_subplot(1, len(roles), i + 1)
        for j, m in enumerate(machines):
            xs, usr, sys_ = [], [], []
            for gi, g in enumerate(groups):
                if (role, g, m) in med.index:
                    u, s_ = med.loc[(role, g, m)]
                    xs.append(gi + (j - (len(machines) - 1) / 2) * width)
                    usr.append(u)
                    sys_.append(s_)
            ax.bar(
                xs, usr, width, color=colors[j], label=f"{m} usr" if i == 0 and len(machines) <= MAX_LEGEND else None
            )
            ax.bar(
                xs,
                sys_,
                width,
                bottom=usr,
                color=colors[j],
                alpha=0.45,
                label=f"{m} sys" if i == 0 and len(machines) <= MAX_LEGEND else None,
            )
        ax.set_xticks(range(len(groups)), groups, rotation=30, ha="right", fontsize=7)
        ax.set_title(str(role), fontsize=9)
        if i == 0:
            ax.set_ylabel("CPU % of one CPU (median)")
            _legend(ax)
    fig.suptitle("D · CPU per role, usr (solid) + sys (light)", fontsize=10)
    fig.subplots_adjust(bottom=0.22, wspace=0.3)
    return fig


def ratio_vs_entropy(c: pd.DataFrame | None) -> Figure | None:
    """Experiment C: compression ratio against the corpus' Shannon entropy, per codec."""
    ok = _ok(c, "ratio", "corpus_entropy_bits")
    if ok is None:
        return None
    series = ["codec"] + _other_labels(ok, "codec", "corpus")
    ok = ok.assign(_series=_join(ok, series))
    med = ok.groupby(["_series", "corpus"], sort=True)[["ratio", "corpus_entropy_bits"]].median().reset_index()
    fig = _figure()
    ax = fig.add_subplot()
    for codec, g in med.groupby("_series", sort=True):
        ax.plot(g["corpus_entropy_bits"], g["ratio"], marker="o", linestyle="", label=str(codec))
        for _, r in g.iterrows():
            ax.annotate(
                str(r["corpus"]),
                (r["corpus_entropy_bits"], r["ratio"]),
                fontsize=7,
                xytext=(4, 2),
                textcoords="offset points",
            )
    ax.set_xlabel("corpus entropy (bits/byte)")
    ax.set_ylabel("ratio (payload / stored)")
    ax.set_title("C · ratio against corpus entropy")
    _legend(ax)
    return fig


def batch_effect(e: pd.DataFrame | None) -> Figure | None:
    """Experiment E: ratio and batch fill (records per batch, p50) against batch.size."""
    ok = _ok(e, "ratio", "batch_size")
    if ok is None:
        return None
    # One line per codec (and machine and every other axis that varies but the batch size).
    series = ["codec"] + _varying(ok, ["machine"]) + _other_labels(ok, "codec", "batch_size")
    fig = _figure(9.0, 4.2)
    ax = fig.add_subplot(1, 2, 1)
    ax2 = fig.add_subplot(1, 2, 2)
    for key, g in ok.groupby(series, sort=True):
        k = " / ".join(map(str, key if isinstance(key, tuple) else (key,)))
        m = g.groupby("batch_size").median(numeric_only=True).reset_index().sort_values("batch_size")
        ax.plot(m["batch_size"], m["ratio"], marker="o", label=k)
        if "records_per_batch_p50" in m.columns and m["records_per_batch_p50"].notna().any():
            ax2.plot(m["batch_size"], m["records_per_batch_p50"], marker="s", label=k)
    for a in (ax, ax2):
        if len({x for line in a.lines for x in line.get_xdata()}) > 1:
            a.set_xscale("log", base=2)
        a.set_xlabel("batch.size (bytes)")
    ax.set_ylabel("ratio")
    ax2.set_ylabel("records per batch (p50)")
    ax.set_title("E · ratio vs batch.size (median over linger.ms, partitions)", fontsize=9)
    ax2.set_title("E · batch fill vs batch.size", fontsize=10)
    _legend(ax)
    return fig


def pareto(m: pd.DataFrame | None) -> Figure | None:
    """Experiment M: ratio against compression speed; the Pareto front (no cell both faster
    and better-compressing) is drawn as a line."""
    ok = _ok(m, "ratio", "compress_mb_s")
    if ok is None:
        return None
    level = ok["level"].astype(str) if "level" in ok.columns else ""
    ok = ok.assign(spec=ok["codec"].astype(str) + (":" + level).where(~level.isin(["", "NA", "nan"]), ""))
    keys = ["spec", "block_size"] + _varying(ok, ["corpus", "machine"])
    med = ok.groupby(keys, sort=True, dropna=False)[["ratio", "compress_mb_s"]].median().reset_index()
    fig = _figure()
    ax = fig.add_subplot()
    for spec, g in med.groupby("spec", sort=True):
        ax.scatter(g["compress_mb_s"], g["ratio"], label=str(spec), s=22)
    pts = sorted(zip(med["compress_mb_s"], med["ratio"]), key=lambda p: (-p[0], -p[1]))
    front, best = [], float("-inf")
    for s, r in pts:
        if r > best:
            front.append((s, r))
            best = r
    if front:
        ax.plot([p[0] for p in front], [p[1] for p in front], color="black", linewidth=1, label="Pareto front")
    ax.set_xscale("log")
    ax.set_xlabel("compress MB/s (median, log)")
    ax.set_ylabel("ratio")
    ax.set_title("M · ratio–speed trade-off")
    _legend(ax)
    return fig
