"""The report's "Over time" section: per cell, the producer's rate and p99 per second of every
repetition (``series.csv``), the intervals that break steady state marked, and the repetitions
the runner flagged for drift (the manifest's ``drift`` lines, copied verbatim; rules in
:mod:`kbench.engine.series`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kbench.engine import series as series_rules
from kbench.engine.csvio import read_rows
from kbench.engine.store import SERIES
from kbench.reporting import document as doc
from kbench.reporting.provenance import Ledger
from kbench.reporting.runs import Run

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["OverTime", "cell_figure", "latest_attempts", "section"]


@dataclass
class OverTime:
    """The section's blocks and its plots (file name → PNG)."""

    blocks: list[doc.Block] = field(default_factory=list)
    plots: dict[str, bytes] = field(default_factory=dict)


def latest_attempts(rows: Sequence[Mapping[str, str]]) -> list[Mapping[str, str]]:
    """The rows of each (cell, rep)'s latest attempt (the one that counts)."""
    last: dict[tuple[str, str], int] = {}
    for r in rows:
        k = (r["cell_id"], r["rep"])
        last[k] = max(last.get(k, 0), int(r.get("attempt") or 1))
    return [r for r in rows if int(r.get("attempt") or 1) == last[(r["cell_id"], r["rep"])]]


def _f(v: str | None) -> float | None:
    try:
        return float(v) if v not in (None, "", "NA") else None
    except ValueError:
        return None


def cell_figure(cell_id: str, rows: Sequence[Mapping[str, str]], dpi: int = 100) -> Figure | None:
    """Rate (msgs/s) and p99 (ms) per second of the producer, one line per repetition; intervals
    outside the steady window drawn faint, intervals breaking steady state marked ×."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    prod = [r for r in rows if r["role"] == "producer" and r.get("source", "").startswith("driver")]
    if not prod:
        return None
    fig = Figure(figsize=(8.0, 4.6), dpi=dpi)
    FigureCanvasAgg(fig)
    ax_rate, ax_p99 = fig.subplots(2, 1, sharex=True)
    fig.subplots_adjust(left=0.11, right=0.98, top=0.84, bottom=0.12, hspace=0.15)
    breaks = 0
    reps = sorted({r["rep"] for r in prod}, key=int)
    nan = float("nan")
    for rep in reps:
        rr = sorted((r for r in prod if r["rep"] == rep), key=lambda r: float(r["start_s"]))
        # each second at its middle: a cut first or last interval sits where its messages were
        x = [float(r["start_s"]) + float(r["interval_s"]) / 2 for r in rr]
        rate = [_f(r["rate"]) for r in rr]
        p99 = [v / 1000 if (v := _f(r["p99_us"])) is not None else None for r in rr]
        inside = [r.get("in_window") == "1" for r in rr]

        def only(vals: list[float | None], keep: list[bool]) -> list[float]:
            return [v if v is not None and k else nan for v, k in zip(vals, keep)]

        (line,) = ax_rate.plot(x, only(rate, inside), marker=".", label=f"rep {rep}")
        color = line.get_color()
        ax_p99.plot(x, only(p99, inside), marker=".", color=color)
        outside = [not k for k in inside]  # outside the steady window: hollow, not joined
        ax_rate.plot(x, only(rate, outside), "o", mfc="none", color=color, markersize=4)
        ax_p99.plot(x, only(p99, outside), "o", mfc="none", color=color, markersize=4)
        for r, xi, ri, pi in zip(rr, x, rate, p99):
            why = r.get("breaks") or ""
            breaks += bool(why)
            if "rate" in why or "stall" in why:
                ax_rate.plot([xi], [ri or 0.0], "x", color="red", markersize=9, mew=2)
            if "p99" in why and pi is not None:
                ax_p99.plot([xi], [pi], "x", color="red", markersize=9, mew=2)
    ax_rate.plot([], [], "o", mfc="none", color="grey", label="outside the steady window")
    if breaks:
        ax_rate.plot([], [], "x", color="red", mew=2, label="breaks steady state")
    ax_rate.set_ylabel("rate (msgs/s)")
    ax_p99.set_ylabel(f"p99 {prod[0].get('latency') or ''} (ms)".replace("  ", " "))
    ax_p99.set_xlabel("seconds since the first due send (intervals: whole seconds of the monotonic clock)")
    fig.suptitle(f"{cell_id}: producer per second", y=0.98)
    handles, labels = ax_rate.get_legend_handles_labels()
    fig.legend(
        handles,
        labels,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.93),
        fontsize="small",
        ncol=min(6, len(labels)),
        frameon=False,
    )
    ax_rate.set_ylim(bottom=0)
    ax_p99.set_ylim(bottom=0)
    for ax in (ax_rate, ax_p99):
        ax.grid(True, alpha=0.3)
    return fig


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s)


def section(runs: Sequence[Run], ledger: Ledger, with_plots: bool = True) -> OverTime:
    """The "Over time" section of every run with a ``series.csv`` (empty when none has one)."""
    from kbench.reporting import plots as plots_mod

    out = OverTime()
    have = [(run, latest_attempts(read_rows(run.path / SERIES))) for run in runs if (run.path / SERIES).exists()]
    have = [(run, rows) for run, rows in have if rows]
    if not have:
        return out
    out.blocks.append(doc.Heading(2, "Over time", "over-time"))
    out.blocks.append(
        doc.Para(
            "Per second of every repetition (series.csv; interval histograms in histograms/*.hlog, HdrHistogram's "
            "interval log format). An interval breaks steady state when it carried no message, when its rate is "
            "off the repetition's median interval rate, or its p99 above the median interval p99, by more than the "
            "plan's bounds; a repetition drifts when the second half of its steady window differs from the first "
            "by more than them (docs/methodology.md, time series)."
        )
    )
    for run, rows in have:
        rules: Mapping[str, Any] = run.manifest.get("rules") or {}
        rate_b = ledger.manifest(
            rules.get("drift_rate_pct", series_rules.DEFAULT_DRIFT_RATE_PCT), run.index, "rules/drift_rate_pct"
        )
        p99_b = ledger.manifest(
            rules.get("drift_p99_pct", series_rules.DEFAULT_DRIFT_P99_PCT), run.index, "rules/drift_p99_pct"
        )
        flagged: Mapping[str, str] = run.manifest.get("drift") or {}
        where = f" ({run.path.name})" if len(have) > 1 else ""
        items = [f"{k}: {v}" for k, v in sorted(flagged.items())]
        out.blocks.append(
            doc.Items(
                items
                or [
                    f"No repetition{where} drifted beyond the plan's bounds (rate ±{rate_b.text} %, p99 ±{p99_b.text} %)."
                ]
            )
        )
        if not with_plots:
            continue
        for cell_id in sorted({r["cell_id"] for r in rows}):
            fig = cell_figure(cell_id, [r for r in rows if r["cell_id"] == cell_id])
            if fig is None:
                continue
            name = (
                f"series-{_slug(run.path.name)}-{_slug(cell_id)}.png"
                if len(have) > 1
                else f"series-{_slug(cell_id)}.png"
            )
            out.plots[name] = plots_mod.png(fig)
            out.blocks.append(doc.Image(name, out.plots[name], f"{cell_id}{where}: producer rate and p99 per second"))
    return out
