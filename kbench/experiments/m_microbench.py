"""Experiment M: the codec micro-benchmark (in memory; written by ``kbench codecs bench``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbench.experiments.spec import M_LABELS, Experiment, PlotSpec, head, units
from kbench.model.microbench import COLUMNS as M_COLUMNS
from kbench.reporting import document as doc
from kbench.reporting import plots
from kbench.reporting.context import ReportContext, na_stat, rows_keys
from kbench.reporting.summary import stats_many

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

HEAD = head(False, ("ratio", "x"), ("compress_mb_s", "MB/s"), ("decompress_mb_s", "MB/s"))


def _section(ctx: ReportContext, df: pd.DataFrame) -> None:
    keys = ["machine", "corpus", "codec", "level", "block_size"]
    df = df.assign(level=df["level"].replace({"": "-", "NA": "-"})) if "level" in df.columns else df
    many = stats_many(
        ctx.ledger,
        df,
        EXPERIMENT.id,
        {"ratio": "f3", "corpus_entropy_bits_per_byte": "f3", "compress_mb_s": "auto", "decompress_mb_s": "auto"},
        keys,
    )
    ratio, ent, comp, dec = (
        many["ratio"],
        many["corpus_entropy_bits_per_byte"],
        many["compress_mb_s"],
        many["decompress_mb_s"],
    )
    rows = []
    for k in rows_keys(df, keys):
        c = comp.get(k) or na_stat(ctx, "compress_mb_s")
        rows.append(
            [
                *k,
                ent[k].median.text if k in ent else "NA",
                ratio[k].median.text if k in ratio else "NA",
                c.cell(),
                dec[k].cell() if k in dec else "NA",
                c.n.text,
            ]
        )
    ctx.add(
        doc.Heading(2, EXPERIMENT.report_title, "exp-m"),
        doc.Para(
            "In-memory compress/decompress of the corpus cut into blocks, in Kafka's framing; warm-up repetitions excluded; MB = a million bytes.",
            "note",
        ),
        doc.Table(
            *ctx.machine_cols(
                [
                    "machine",
                    "corpus",
                    "codec",
                    "level",
                    "block bytes",
                    "entropy (bits/B)",
                    "ratio",
                    "compress MB/s median [range]",
                    "decompress MB/s median [range]",
                    "n",
                ],
                rows,
            )
        ),
    )


def pareto(m: pd.DataFrame | None) -> Figure | None:
    """Experiment M: ratio against compression speed; the Pareto front (no cell both faster
    and better-compressing) is drawn as a line."""
    ok = plots.ok_rows(m, "ratio", "compress_mb_s")
    if ok is None:
        return None
    spec = ok["codec"].astype(str)
    if "level" in ok.columns:
        level = ok["level"].astype(str)
        spec = spec + (":" + level).where(~level.isin(["", "NA", "nan"]), "")
    ok = ok.assign(spec=spec)
    keys = ["spec", "block_size"] + plots.varying(ok, ["corpus", "machine"])
    med = ok.groupby(keys, sort=True, dropna=False)[["ratio", "compress_mb_s"]].median().reset_index()
    fig = plots.figure()
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
    plots.legend(ax)
    return fig


EXPERIMENT = Experiment(
    id="M",
    title="codec micro-benchmark (in memory)",
    own_columns=M_COLUMNS,
    compared=("codec", "level"),
    headline=HEAD,
    verdict_on="compress_mb_s",
    needs={},
    labels=M_LABELS,
    in_run=False,
    compare_metrics=("ratio", "compress_mb_s", "decompress_mb_s"),
    per_core=("compress_mb_s",),
    units=units(*HEAD),
    required_columns=("status", "codec", "ratio"),
    report_title="Experiment M · codec micro-benchmark (in memory)",
    section=_section,
    plots=(PlotSpec("m_pareto.png", "M: ratio–speed Pareto front", pareto, 60),),
)
