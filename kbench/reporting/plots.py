"""The report's plots, drawn headless with matplotlib's Agg canvas (no pyplot, no display).

Each function takes one experiment's DataFrame (from :func:`kbench.reporting.frames.load`) and
returns a :class:`matplotlib.figure.Figure`, or ``None`` when the frame has no OK row with
the values the plot needs.  Only rows with ``status == "OK"`` are drawn; points are medians
over repetitions, error bars the range (min–max).  :func:`png` turns a figure into bytes.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, cast

from kbench.experiments.spec import LABELS

if TYPE_CHECKING:
    from collections.abc import Iterable

    import pandas as pd
    from matplotlib.figure import Figure

__all__ = [
    "batch_effect",
    "cpu_per_role",
    "latency_knee",
    "latency_percentiles",
    "pareto",
    "plain_text",
    "png",
    "ratio_vs_entropy",
    "throughput",
]


def _figure(w: float = 8.0, h: float = 4.2) -> Figure:
    """A figure of ``w`` × ``h`` inches, laid out by matplotlib's constrained layout (no label
    drawn over another, titles clear of panel titles), drawn at :data:`DPI`."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _thousands(ax: object, axis: str = "y") -> None:
    """Tick labels with thousands separators (44,213 rather than 44213 or 4.4e4)."""
    from matplotlib.ticker import FuncFormatter

    fmt = FuncFormatter(lambda v, _pos: f"{v:,.0f}" if abs(v) >= 100 or v == int(v) else f"{v:g}")
    getattr(ax, f"{axis}axis").set_major_formatter(fmt)


def _plain_log(ax: object) -> None:
    """A log y axis whose ticks read as plain numbers (3, 10, 30, not 3×10⁰)."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    fmt = FuncFormatter(lambda v, _pos: f"{v:,.0f}" if v >= 100 else f"{v:g}")
    y = ax.yaxis  # type: ignore[attr-defined]
    y.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    y.set_major_formatter(fmt)
    y.set_minor_formatter(FuncFormatter(lambda v, _pos: ""))


def plain_text(fig: Figure) -> Figure:
    """Every text of ``fig`` drawn as written: no mathtext, so a label such as a corpus named
    ``$\\undefinedmacro{x$`` is shown, never parsed as TeX (which would fail the whole report)."""
    from matplotlib.text import Text

    for t in fig.findobj(Text):
        t.set_parse_math(False)
    return fig


def png(fig: Figure) -> bytes:
    """The figure as PNG bytes (its texts plain: :func:`plain_text`)."""
    buf = io.BytesIO()
    plain_text(fig).savefig(buf, format="png", dpi=DPI)
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
#: Pixels per inch of the PNGs: twice the 100 px per inch the page shows them at (report.html
#: halves their width), so they stay sharp on a high-density screen and when zoomed.
DPI = 200


def _legend(ax: object) -> None:
    """A legend inside the plot; with more than :data:`MAX_LEGEND` series, in a panel of its own
    under it (:func:`_fig_legend`): never dropped."""
    handles, labels = ax.get_legend_handles_labels()  # type: ignore[attr-defined]
    if 0 < len(labels) <= MAX_LEGEND:
        ax.legend(fontsize=8)  # type: ignore[attr-defined]
    elif labels:
        _fig_legend(ax.figure, handles, labels)  # type: ignore[attr-defined]


def _fig_legend(fig: Figure, handles: list, labels: list[str]) -> None:
    """The figure's legend under its panels: up to :data:`MAX_LEGEND` entries in one row band;
    more get a panel of their own, in columns of at most 12 entries, the figure made taller to
    hold it (no entry is dropped)."""
    if not labels:
        return
    if len(labels) <= MAX_LEGEND:
        fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 6), fontsize=8)
        return
    cols = min(4, -(-len(labels) // MAX_LEGEND))
    rows = -(-len(labels) // cols)
    w, h = fig.get_size_inches()
    fig.set_size_inches(w, h + 0.18 * rows)
    fig.legend(handles, labels, loc="outside lower center", ncol=cols, fontsize=7)


def _varying(df: pd.DataFrame, cols: list[str]) -> list[str]:
    return [c for c in cols if c in df.columns and df[c].astype(str).nunique() > 1]


def _other_labels(df: pd.DataFrame, *shown: str) -> list[str]:
    """The label axes (besides ``shown``) that vary in ``df``: each gets its own series, so no
    plot pools cells that differ in a plan axis."""
    return _varying(df, [c for c in LABELS if c not in shown])


def latency_percentiles(a: pd.DataFrame | None) -> Figure | None:
    """Experiment A: corrected latency percentiles per codec (and machine) at the fixed rate
    (None for a rate sweep: :func:`latency_knee` draws that)."""
    pcts = [
        ("p50", "corrected_p50_us"),
        ("p95", "corrected_p95_us"),
        ("p99", "corrected_p99_us"),
        ("p99.9", "corrected_p999_us"),
    ]
    ok = _ok(a, *(c for _, c in pcts))
    if ok is None:
        return None
    if "rate" in _other_labels(ok, "codec"):
        return None  # a rate sweep: the knee plot (latency against the rate) shows it
    keys = ["machine", "codec"] + _other_labels(ok, "codec")
    named = [c for c in keys if c == "codec" or ok[c].astype(str).nunique() > 1]  # one machine: not named
    fig = _figure()
    ax = fig.add_subplot()
    for _, g in ok.groupby(keys, sort=True):
        k = tuple(str(g[c].iloc[0]) for c in named)
        med = [g[c].median() / 1000 for _, c in pcts]
        lo = [g[c].min() / 1000 for _, c in pcts]
        hi = [g[c].max() / 1000 for _, c in pcts]
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
    _plain_log(ax)
    ax.set_ylabel("corrected latency (ms, log)")
    ax.set_title("A · latency percentiles at the common fixed rate (median, range)")
    _legend(ax)
    return fig


def latency_knee(a: pd.DataFrame | None) -> Figure | None:
    """Experiment A's knee: corrected p50 and p99 against the target rate, one series per codec
    (and machine, and any other varying label but the rate), when some series holds two or more
    rates.  Points are repetitions: OK ones filled, SATURATED ones hollow (drawn, never pooled
    into a median: they show where the codec's cost begins); other statuses are left out."""
    cols = ("target_rate_msgs", "corrected_p50_us", "corrected_p99_us")
    if a is None or a.empty or any(c not in a.columns for c in (*cols, "status")):
        return None
    pts = a[a["status"].isin(["OK", "SATURATED"])].dropna(subset=list(cols))
    if pts.empty:
        return None
    keys = ["machine", "codec"] + _other_labels(pts, "codec", "rate")
    keys = [k for k in keys if k in pts.columns]
    if not any(g["target_rate_msgs"].nunique() > 1 for _, g in pts.groupby(keys, sort=True)):
        return None  # one rate per codec: no knee to draw (a_latency.png shows it)
    named = [c for c in keys if c == "codec" or pts[c].astype(str).nunique() > 1]  # one machine: not named
    fig = _figure(10.0, 4.8)
    axes = [fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)]
    colours = ["C0", "C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8", "C9"]
    for i, (_, g) in enumerate(pts.groupby(keys, sort=True)):
        k = tuple(str(g[c].iloc[0]) for c in named)
        colour = colours[i % len(colours)]
        g = g.sort_values("target_rate_msgs")
        for ax, col in zip(axes, ("corrected_p50_us", "corrected_p99_us")):
            ok = g[g["status"] == "OK"]
            if not ok.empty:
                med = ok.groupby("target_rate_msgs")[col].median()
                ax.plot(med.index, med.to_numpy() / 1000, "-", color=colour, linewidth=1)
                ax.plot(ok["target_rate_msgs"], ok[col] / 1000, "o", color=colour, label=" / ".join(map(str, k)))
            sat = g[g["status"] == "SATURATED"]
            if not sat.empty:
                ax.plot(
                    sat["target_rate_msgs"],
                    sat[col] / 1000,
                    "o",
                    markerfacecolor="none",
                    markeredgecolor=colour,
                    label=f"{' / '.join(map(str, k))} SATURATED",
                )
    for ax, title in zip(axes, ("p50", "p99")):
        ax.set_yscale("log")
        _plain_log(ax)
        ax.set_xlabel("target rate (msgs/s)")
        ax.set_ylabel(f"corrected {title} (ms, log)")
        ax.set_title(f"A · corrected {title} against the rate")
        _thousands(ax, "x")
    handles, labels = axes[0].get_legend_handles_labels()
    h1, l1 = axes[1].get_legend_handles_labels()
    seen = dict(zip(labels, handles)) | {lb: h for lb, h in zip(l1, h1) if lb not in labels}
    _fig_legend(fig, list(seen.values()), list(seen))
    return fig


def throughput(b: pd.DataFrame | None) -> Figure | None:
    """Experiment B: saturated throughput per codec and machine (median bar, range whisker,
    each repetition a dot)."""
    ok = _ok(b, "achieved_rate_msgs")
    if ok is None:
        return None
    series = ["codec"] + _other_labels(ok, "codec")
    machines = sorted(ok["machine"].unique())
    ok = ok.assign(_series=_join(ok, series))
    labels = sorted(ok["_series"].unique())
    fig = _figure(8.0, 4.2)
    ax = fig.add_subplot()
    width = 0.8 / max(1, len(labels))
    for j, lab in enumerate(labels):
        sel = ok[ok["_series"] == lab]
        med, err_lo, err_hi, xs = [], [], [], []
        for i, m in enumerate(machines):
            v = sel[sel["machine"] == m]["achieved_rate_msgs"]
            x = i + (j - (len(labels) - 1) / 2) * width
            md = v.median() if len(v) else float("nan")
            med.append(md)
            err_lo.append(md - v.min() if len(v) else 0)
            err_hi.append(v.max() - md if len(v) else 0)
            xs.append(x)
            ax.plot([x] * len(v), v, "o", color="black", markersize=3, zorder=3)
        ax.bar(xs, med, width * 0.9, yerr=[err_lo, err_hi], capsize=4, label=lab, color=f"C{j % 10}")
    if len(machines) == 1:
        ax.set_xticks([(j - (len(labels) - 1) / 2) * width for j in range(len(labels))], labels)
    else:
        ax.set_xticks(range(len(machines)), machines, fontsize=7)
        _legend(ax)
    ax.set_ylabel("msgs/s at saturation")
    _thousands(ax)
    ax.set_title("B · saturated throughput (bar: median, whisker: range, dots: repetitions)", fontsize=10)
    return fig


def cpu_per_role(d: pd.DataFrame | None) -> Figure | None:
    """Experiment D: CPU-s per GB of payload per role (the table's figure: one panel each, one
    shared scale), the median bar split into its usr (solid) and sys (light) shares, one bar per
    machine within each codec (and corpus) group; medians over repetitions and cells.  The legend
    sits under the panels, the title above them."""
    ok = _ok(d, "cpu_s_per_gb", "usr_pct", "sys_pct")
    if ok is None:
        return None
    group = ["codec"] + _other_labels(ok, "codec")
    ok = ok.assign(_group=_join(ok, group))
    med = ok.groupby(["role", "_group", "machine"], sort=True)[["cpu_s_per_gb", "usr_pct", "sys_pct"]].median()
    roles = sorted(ok["role"].unique(), key=lambda r: ({"producer": 0, "consumer": 1}.get(r, 2), r))[:6]
    groups = sorted(ok["_group"].unique())
    machines = sorted(ok["machine"].unique())
    fig = _figure(max(8.0, 2.3 * len(roles)), 4.4)
    width = 0.8 / max(1, len(machines))
    colors = [f"C{i % 10}" for i in range(len(machines))]
    first = None
    for i, role in enumerate(roles):
        ax = fig.add_subplot(1, len(roles), i + 1, sharey=first)
        first = first or ax
        for j, m in enumerate(machines):
            xs, usr, sys_ = [], [], []
            for gi, g in enumerate(groups):
                if (role, g, m) in med.index:
                    per_gb, u, s_ = med.loc[(role, g, m)]
                    share = u / (u + s_) if u + s_ > 0 else 1.0
                    xs.append(gi + (j - (len(machines) - 1) / 2) * width)
                    usr.append(per_gb * share)
                    sys_.append(per_gb * (1 - share))
            name = "" if len(machines) == 1 else f"{m} "
            ax.bar(xs, usr, width * 0.9, color=colors[j], label=f"{name}usr" if i == 0 else None)
            ax.bar(
                xs, sys_, width * 0.9, bottom=usr, color=colors[j], alpha=0.45, label=f"{name}sys" if i == 0 else None
            )
        ax.set_xticks(range(len(groups)), groups, rotation=30, ha="right", fontsize=7)
        ax.set_title(str(role), fontsize=9)
        if i == 0:
            ax.set_ylabel("CPU-s per GB of payload (median)")
        else:
            ax.tick_params(labelleft=False)
    handles, labels = fig.axes[0].get_legend_handles_labels()
    _fig_legend(fig, handles, labels)
    fig.suptitle("D · CPU-s per GB per role at the common rate: usr (solid) + sys (light), one scale", fontsize=10)
    return fig


def ratio_vs_entropy(c: pd.DataFrame | None) -> Figure | None:
    """Experiment C: the ratio per corpus (its entropy under its name) and codec: a bar per
    codec at the median, the range as a whisker, each repetition a dot; a dashed line at 1×
    (stored as much as sent)."""
    ok = _ok(c, "ratio", "corpus_entropy_bits")
    if ok is None:
        return None
    series = ["codec"] + _other_labels(ok, "codec", "corpus")
    ok = ok.assign(_series=_join(ok, series))
    ent = ok.groupby("corpus")["corpus_entropy_bits"].median().sort_values()
    corpora = list(ent.index)
    labels = sorted(ok["_series"].unique())
    fig = _figure(8.0, 4.2)
    ax = fig.add_subplot()
    width = 0.8 / max(1, len(labels))
    for j, lab in enumerate(labels):
        sel = ok[ok["_series"] == lab]
        xs, med, lo, hi = [], [], [], []
        for i, corpus in enumerate(corpora):
            v = sel[sel["corpus"] == corpus]["ratio"]
            if not len(v):
                continue
            x = i + (j - (len(labels) - 1) / 2) * width
            xs.append(x)
            med.append(v.median())
            lo.append(v.median() - v.min())
            hi.append(v.max() - v.median())
            ax.plot([x] * len(v), v, "o", color="black", markersize=3, zorder=3)
        bars = ax.bar(xs, med, width * 0.9, yerr=[lo, hi], capsize=4, label=lab, color=f"C{j % 10}")
        ax.bar_label(bars, labels=[f"{m:.2f}×" for m in med], fontsize=7, padding=2)
    ax.axhline(1.0, color="grey", linestyle="--", linewidth=0.8)
    ax.set_xticks(range(len(corpora)), [f"{c}\n{ent[c]:.2f} bits/B" for c in corpora])
    ax.set_ylabel("ratio (payload / stored bytes)")
    ax.set_title("C · compression ratio per corpus (bar: median, whisker: range, dots: repetitions)", fontsize=10)
    ax.margins(y=0.12)
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
    styles = ("-", "--", ":", "-.")  # lines that coincide (fill does not depend on the codec) stay visible
    for i, (key, g) in enumerate(ok.groupby(series, sort=True)):
        k = " / ".join(map(str, key if isinstance(key, tuple) else (key,)))
        m = g.groupby("batch_size").median(numeric_only=True).reset_index().sort_values("batch_size")
        color, style = f"C{i % 10}", styles[i % len(styles)]
        ax.plot(m["batch_size"], m["ratio"], marker="o", color=color, linestyle=style, label=k)
        if "records_per_batch_p50" in m.columns and m["records_per_batch_p50"].notna().any():
            ax2.plot(
                m["batch_size"],
                m["records_per_batch_p50"],
                marker="s",
                markersize=7 - 1.5 * (i % 3),
                color=color,
                linestyle=style,
                label=k,
            )
    for a in (ax, ax2):
        # get_xdata() hands back the batch_size column plotted above (matplotlib types it ArrayLike)
        if len({x for line in a.lines for x in cast("Iterable[float]", line.get_xdata())}) > 1:
            a.set_xscale("log", base=2)
        a.set_xlabel("batch.size (bytes)")
    ax.set_ylabel("ratio")
    ax2.set_ylabel("records per batch (p50)")
    ax.set_title("E · ratio vs batch.size (median over linger.ms, partitions)", fontsize=9)
    _thousands(ax2)
    ax2.set_title("E · batch fill vs batch.size", fontsize=10)
    handles, labels = ax.get_legend_handles_labels()
    _fig_legend(fig, handles, labels)  # one legend for both panels, under them: never dropped, never over a line
    return fig


def pareto(m: pd.DataFrame | None) -> Figure | None:
    """Experiment M: ratio against compression speed; the Pareto front (no cell both faster
    and better-compressing) is drawn as a line."""
    ok = _ok(m, "ratio", "compress_mb_s")
    if ok is None:
        return None
    spec = ok["codec"].astype(str)
    if "level" in ok.columns:
        level = ok["level"].astype(str)
        spec = spec + (":" + level).where(~level.isin(["", "NA", "nan"]), "")
    ok = ok.assign(spec=spec)
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
