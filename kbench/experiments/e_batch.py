"""Experiment E: the batch-size effect (batch.size × linger.ms × partitions).

Rows: batch fill from the stored batches and from the client's statistics, beside the ratio.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from kbench.experiments.rowkit import (
    finish,
    ratio,
    row_base,
)
from kbench.experiments.spec import LABELS, Experiment, PlotSpec, RowInput, head, units
from kbench.reporting import document as doc
from kbench.reporting import plots
from kbench.reporting.context import ReportContext, na_stat, rows_keys
from kbench.reporting.summary import stats_many, varying

if TYPE_CHECKING:
    from collections.abc import Iterable

    import pandas as pd
    from matplotlib.figure import Figure

HEAD = head(False, ("ratio", "x"), ("records_per_batch_p50", "rec"), ("bytes_per_batch_p50", "B"))


#: E's batch-fill columns: from the stored batches, and from the client's statistics.
_FILL = {
    "batches": "batches",
    "records_per_batch_p50": "records_p50",
    "records_per_batch_p90": "records_p90",
    "records_per_batch_max": "records_max",
    "bytes_per_batch_p50": "bytes_p50",
    "bytes_per_batch_p90": "bytes_p90",
    "bytes_per_batch_max": "bytes_max",
    "fill_source": "source",
}


_CLIENT_FILL = {
    "client_records_per_batch_p50": "records_p50",
    "client_records_per_batch_p90": "records_p90",
    "client_batch_bytes_p50": "bytes_p50",
    "client_batch_bytes_p90": "bytes_p90",
}


def _rows(x: RowInput) -> list[dict[str, Any]]:
    res, row = x.res, row_base(x)
    bf, cf = res.batch_fill, res.client_fill
    row.update({col: (getattr(bf, f) if bf else None) for col, f in _FILL.items()})
    row.update({col: (getattr(cf, f) if cf else None) for col, f in _CLIENT_FILL.items()})
    row.update(
        payload_bytes=res.payload_bytes,
        stored_bytes=res.stored_bytes,
        ratio=ratio(res),
        stored_source=res.stored_source,
    )
    return [finish(row, x.verdict)]


def _section(ctx: ReportContext, df: pd.DataFrame) -> None:
    labels = ["codec"] + [c for c in varying(df, [x for x in LABELS if x != "codec"])]
    keys = ["machine"] + labels
    cols = [
        ("ratio", "ratio median [range]", "x"),
        ("records_per_batch_p50", "records/batch p50", "auto"),
        ("records_per_batch_p90", "records/batch p90", "auto"),
        ("bytes_per_batch_p50", "bytes/batch p50", "int"),
        ("batches", "batches", "int"),
    ]
    st = stats_many(ctx.ledger, df, EXPERIMENT.id, {c: kind for c, _, kind in cols}, keys)
    rows = []
    for k in rows_keys(df, keys):
        r = st["ratio"].get(k) or na_stat(ctx, "ratio")
        rows.append([*k, r.cell(), *(st[c][k].median.text if k in st[c] else "NA" for c, _, _ in cols[1:]), r.n.text])
    ctx.add(
        doc.Heading(2, EXPERIMENT.report_title, "exp-e"),
        doc.Para(
            "The ratio depends on how many bytes a batch holds: batch fill (records and bytes per stored batch) stands beside it.",
            "note",
        ),
        doc.Table(*ctx.machine_cols(["machine", *labels, *(h for _, h, _ in cols), "n"], rows)),
    )


def batch_effect(e: pd.DataFrame | None) -> Figure | None:
    """Experiment E: ratio and batch fill (records per batch, p50) against batch.size."""
    ok = plots.ok_rows(e, "ratio", "batch_size")
    if ok is None:
        return None
    # One line per codec (and machine and every other axis that varies but the batch size).
    series = ["codec"] + plots.varying(ok, ["machine"]) + plots.other_labels(ok, "codec", "batch_size")
    fig = plots.figure(9.0, 4.2)
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
    plots.thousands(ax2)
    ax2.set_title("E · batch fill vs batch.size", fontsize=10)
    handles, labels = ax.get_legend_handles_labels()
    plots.fig_legend(fig, handles, labels)  # one legend for both panels, under them: never dropped, never over a line
    return fig


EXPERIMENT = Experiment(
    id="E",
    title="batch-size effect (batch.size x linger.ms x partitions)",
    own_columns=(
        "batches",
        "records_per_batch_p50",
        "records_per_batch_p90",
        "records_per_batch_max",
        "bytes_per_batch_p50",
        "bytes_per_batch_p90",
        "bytes_per_batch_max",
        "fill_source",
        "client_records_per_batch_p50",
        "client_records_per_batch_p90",
        "client_batch_bytes_p50",
        "client_batch_bytes_p90",
        "payload_bytes",
        "stored_bytes",
        "ratio",
        "stored_source",
    ),
    compared=("batch_size", "linger_ms", "partitions"),
    headline=HEAD,
    verdict_on="ratio",
    needs={},
    rate="fixed",
    compare_metrics=("ratio", "records_per_batch_p50", "bytes_per_batch_p50", "batches"),
    units=units(*HEAD, payload_bytes="B", stored_bytes="B"),
    rows=_rows,
    needs_stored=True,
    report_title="Experiment E · batch-size effect",
    section=_section,
    plots=(PlotSpec("e_batch.png", "E: ratio and batch fill against batch.size", batch_effect, 50),),
)
