"""The report's plotting kit, drawn headless with matplotlib's Agg canvas (no pyplot, no display).

Each experiment draws its own plots (its module's ``PlotSpec``: a function from the experiment's
DataFrame, :func:`kbench.reporting.frames.load`, to a :class:`matplotlib.figure.Figure`, or
``None`` when the frame has no OK row with the values the plot needs); this module holds what
they share: the figure, axis formats, legends that are never dropped, the OK rows of a frame,
the series of the labels that vary, and :func:`png`.  Points are medians over repetitions,
error bars the range (min–max).
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

from kbench.experiments.spec import LABELS

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = [
    "DPI",
    "MAX_LEGEND",
    "bar_series",
    "fig_legend",
    "figure",
    "joined",
    "legend",
    "ok_rows",
    "other_labels",
    "plain_log",
    "plain_text",
    "png",
    "thousands",
    "varying",
]


def figure(w: float = 8.0, h: float = 4.2) -> Figure:
    """A figure of ``w`` × ``h`` inches, laid out by matplotlib's constrained layout (no label
    drawn over another, titles clear of panel titles), drawn at :data:`DPI`."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def thousands(ax: object, axis: str = "y") -> None:
    """Tick labels with thousands separators (44,213 rather than 44213 or 4.4e4)."""
    from matplotlib.ticker import FuncFormatter

    fmt = FuncFormatter(lambda v, _pos: f"{v:,.0f}" if abs(v) >= 100 or v == int(v) else f"{v:g}")
    getattr(ax, f"{axis}axis").set_major_formatter(fmt)


def plain_log(ax: object) -> None:
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


def ok_rows(df: pd.DataFrame | None, *cols: str) -> pd.DataFrame | None:
    if df is None or df.empty or any(c not in df.columns for c in cols):
        return None
    ok = df[df["status"] == "OK"].dropna(subset=list(cols))
    return ok if not ok.empty else None


def joined(df: pd.DataFrame, cols: list[str]) -> pd.Series:
    s = df[cols[0]].astype(str)
    for c in cols[1:]:
        s = s + " / " + df[c].astype(str)
    return s


MAX_LEGEND = 12
#: Pixels per inch of the PNGs: twice the 100 px per inch the page shows them at (report.html
#: halves their width), so they stay sharp on a high-density screen and when zoomed.
DPI = 200


def legend(ax: object) -> None:
    """A legend inside the plot; with more than :data:`MAX_LEGEND` series, in a panel of its own
    under it (:func:`fig_legend`): never dropped."""
    handles, labels = ax.get_legend_handles_labels()  # type: ignore[attr-defined]
    if 0 < len(labels) <= MAX_LEGEND:
        ax.legend(fontsize=8)  # type: ignore[attr-defined]
    elif labels:
        fig_legend(ax.figure, handles, labels)  # type: ignore[attr-defined]


def fig_legend(fig: Figure, handles: list, labels: list[str]) -> None:
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


def varying(df: pd.DataFrame, cols: list[str]) -> list[str]:
    return [c for c in cols if c in df.columns and df[c].astype(str).nunique() > 1]


def other_labels(df: pd.DataFrame, *shown: str) -> list[str]:
    """The label axes (besides ``shown``) that vary in ``df``: each gets its own series, so no
    plot pools cells that differ in a plan axis."""
    return varying(df, [c for c in LABELS if c not in shown])


def bar_series(ok: pd.DataFrame, series: list[str]) -> tuple[Figure, Any, float, list[tuple[str, pd.DataFrame]]]:
    """A panel of bars grouped by ``series`` (the columns joined into one label): the figure, its
    axes, the width of one bar and each series' label and rows, in label order."""
    ok = ok.assign(_series=joined(ok, series))
    labels = sorted(ok["_series"].unique())
    fig = figure(8.0, 4.2)
    ax = fig.add_subplot()
    return fig, ax, 0.8 / max(1, len(labels)), [(lab, ok[ok["_series"] == lab]) for lab in labels]
