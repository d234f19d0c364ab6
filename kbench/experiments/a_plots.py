"""Experiment A's plots: its latency percentiles at the common fixed rate, and its knee (latency
against the rate) when a sweep holds several rates."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbench.reporting import plots

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["latency_knee", "latency_percentiles"]


def latency_percentiles(a: pd.DataFrame | None) -> Figure | None:
    """Experiment A: corrected latency percentiles per codec (and machine) at the fixed rate
    (None for a rate sweep: :func:`latency_knee` draws that)."""
    pcts = [
        ("p50", "corrected_p50_us"),
        ("p95", "corrected_p95_us"),
        ("p99", "corrected_p99_us"),
        ("p99.9", "corrected_p999_us"),
    ]
    ok = plots.ok_rows(a, *(c for _, c in pcts))
    if ok is None:
        return None
    if "rate" in plots.other_labels(ok, "codec"):
        return None  # a rate sweep: the knee plot (latency against the rate) shows it
    keys = ["machine", "codec"] + plots.other_labels(ok, "codec")
    named = [c for c in keys if c == "codec" or ok[c].astype(str).nunique() > 1]  # one machine: not named
    fig = plots.figure()
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
    plots.plain_log(ax)
    ax.set_ylabel("corrected latency (ms, log)")
    ax.set_title("A · latency percentiles at the common fixed rate (median, range)")
    plots.legend(ax)
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
    keys = ["machine", "codec"] + plots.other_labels(pts, "codec", "rate")
    keys = [k for k in keys if k in pts.columns]
    if not any(g["target_rate_msgs"].nunique() > 1 for _, g in pts.groupby(keys, sort=True)):
        return None  # one rate per codec: no knee to draw (a_latency.png shows it)
    named = [c for c in keys if c == "codec" or pts[c].astype(str).nunique() > 1]  # one machine: not named
    fig = plots.figure(10.0, 4.8)
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
        plots.plain_log(ax)
        ax.set_xlabel("target rate (msgs/s)")
        ax.set_ylabel(f"corrected {title} (ms, log)")
        ax.set_title(f"A · corrected {title} against the rate")
        plots.thousands(ax, "x")
    handles, labels = axes[0].get_legend_handles_labels()
    h1, l1 = axes[1].get_legend_handles_labels()
    seen = dict(zip(labels, handles)) | {lb: h for lb, h in zip(l1, h1) if lb not in labels}
    plots.fig_legend(fig, list(seen.values()), list(seen))
    return fig
