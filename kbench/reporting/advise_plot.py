"""The plot of ``kbench advise``: every candidate's monthly cost against the p99 latency it adds,
the Pareto front joined, the recommendation marked.  Its name and the legend sit under the axes,
so no label is drawn over a point.  Headless (matplotlib's Agg canvas)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from kbench.model.advise import Advice

__all__ = ["figure", "write_png"]


def write_png(advice: Advice, path: Path) -> Path:
    from kbench.reporting.plots import plain_text

    plain_text(figure(advice)).savefig(path)
    return path


def figure(advice: Advice) -> Figure:
    """The figure of :func:`write_png`."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 5.6), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    codecs = sorted({c.codec for c in advice.candidates})
    for name in codecs:
        cs = [c for c in advice.candidates if c.codec == name]
        ax.scatter([c.added_p99_ms for c in cs], [c.total_usd_month for c in cs], s=14, alpha=0.6, label=name)
    f = sorted(advice.front, key=lambda c: c.added_p99_ms)
    ax.plot([c.added_p99_ms for c in f], [c.total_usd_month for c in f], "k-", lw=1, label="Pareto front")
    b = advice.best
    ax.scatter(
        [b.added_p99_ms],
        [b.total_usd_month],
        s=120,
        facecolors="none",
        edgecolors="red",
        label=f"recommended: {b.label}",
    )
    if advice.workload.p99_budget_ms is not None:
        ax.axvline(advice.workload.p99_budget_ms, color="grey", ls="--", lw=1, label="p99 budget")
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlabel("added p99 latency, ms (linger wait + compress + decompress)")
    ax.set_ylabel("$ per month (CPU + network + storage)")
    w = advice.workload
    ax.set_title(
        f"{advice.corpus.name}: {w.rate:g} rec/s, {w.partitions} partitions, RF {w.replication_factor}, {w.client}",
        fontsize=9,
    )
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 4), fontsize=7)
    return fig
