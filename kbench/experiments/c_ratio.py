"""Experiment C: compression ratio against the corpus (stored bytes).

Rows: payload and stored bytes, ratio, batch ratio, corpus entropy and fingerprint, stored codecs.
Report: ratio per machine × corpus × codec with the corpus entropy beside it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kbench.experiments.rowkit import (
    finish,
    flag_inferred,
    ratio,
    row_base,
    unmeasured,
)
from kbench.experiments.spec import LABELS, AnswerCell, Experiment, PlotSpec, RowInput, head, units
from kbench.reporting import document as doc
from kbench.reporting import plots
from kbench.reporting.context import BASELINE, ReportContext, answer_pairs, na_stat, rows_keys, sources
from kbench.reporting.summary import stats, stats_many, varying

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

HEAD = head(False, ("ratio", "x"), ("batch_ratio", "x"), ("corpus_entropy_bits", "bits/B"))


def _rows(x: RowInput) -> list[dict[str, Any]]:
    res, row = x.res, row_base(x)
    row.update(
        payload_bytes=res.payload_bytes,
        stored_bytes=res.stored_bytes,
        ratio=ratio(res),
        batch_ratio=(res.stored_uncompressed_bytes / res.stored_bytes)
        if (res.stored_uncompressed_bytes and res.stored_bytes)
        else None,
        corpus_entropy_bits=x.corpus_entropy,
        corpus_sha256=x.corpus.sha256,
        corpus_near_random=x.corpus_entropy >= 6.3,
        stored_batches=res.stored_batches,
        stored_codecs=sorted(res.stored_codecs),
        stored_source=res.stored_source,
    )
    return [finish(row, flag_inferred(unmeasured(EXPERIMENT, x), res))]


def _section(ctx: ReportContext, df: pd.DataFrame) -> None:
    labels = ["corpus", "codec"] + [c for c in varying(df, [x for x in LABELS if x not in ("codec", "corpus")])]
    keys = ["machine"] + labels
    many = stats_many(
        ctx.ledger,
        df,
        EXPERIMENT.id,
        {"ratio": "x", "corpus_entropy_bits": "f3", "payload_bytes": "int", "stored_bytes": "int"},
        keys,
    )
    ratio, ent, pay, sto = many["ratio"], many["corpus_entropy_bits"], many["payload_bytes"], many["stored_bytes"]
    headers = ["machine", *labels, "entropy (bits/B)", "payload bytes", "stored bytes", "ratio median [range]", "n"]
    rows = []
    for k in rows_keys(df, keys):
        r = ratio.get(k) or na_stat(ctx, "ratio")
        rows.append(
            [
                *k,
                ent[k].median.text if k in ent else "NA",
                pay[k].median.text if k in pay else "NA",
                sto[k].median.text if k in sto else "NA",
                r.cell(),
                r.n.text,
            ]
        )
    ctx.add(
        doc.Heading(2, EXPERIMENT.report_title, "exp-c"),
        doc.Para(
            "Ratio = uncompressed payload / stored bytes (the broker's log segments, or DescribeLogDirs on a remote cluster). The corpus' Shannon entropy "
            "stands beside every ratio: a near-random corpus cannot compress, whatever the codec.",
            "note",
        ),
        doc.Table(*ctx.machine_cols(headers, rows)),
        *sources(df, "stored_source", "stored bytes and codecs"),
    )
    # Headline: ratio per corpus and codec over all machines, with entropy.
    hr = stats(ctx.ledger, df, EXPERIMENT.id, "ratio", ["corpus", "codec"], "x")
    he = stats(ctx.ledger, df, EXPERIMENT.id, "corpus_entropy_bits", ["corpus"], "f3")
    for (corpus, codec), s in sorted(hr.items()):
        if codec == BASELINE or not s.ok:
            continue
        e = he.get((corpus,))
        ctx.headline.append(
            f"Ratio, {codec} on corpus {corpus} (entropy {e.median if e else 'NA'} bits/byte): {s.median} (range {s.range()})."
        )


def _answer(ctx: ReportContext, df: pd.DataFrame) -> list[AnswerCell]:
    keys, prs = answer_pairs(df)
    st = stats(ctx.ledger, df, EXPERIMENT.id, "ratio", keys, "x")
    out = []
    for b, k, q in prs:
        sb, sk = st.get(b) or na_stat(ctx, "ratio"), st.get(k) or na_stat(ctx, "ratio")
        text = f"{sk.cell()} ({b[1]} {sb.median})" if sk.ok else f"no OK repetition of {k[1]}"
        out.append(AnswerCell(k[0], k[2], k[1], b[1], "ratio (C, stored bytes)", text, q))
    return out


def ratio_vs_entropy(c: pd.DataFrame | None) -> Figure | None:
    """Experiment C: the ratio per corpus (its entropy under its name) and codec: a bar per
    codec at the median, the range as a whisker, each repetition a dot; a dashed line at 1×
    (stored as much as sent)."""
    ok = plots.ok_rows(c, "ratio", "corpus_entropy_bits")
    if ok is None:
        return None
    ent = ok.groupby("corpus")["corpus_entropy_bits"].median().sort_values()
    corpora = list(ent.index)
    fig, ax, width, groups = plots.bar_series(ok, ["codec"] + plots.other_labels(ok, "codec", "corpus"))
    for j, (lab, sel) in enumerate(groups):
        xs, med, lo, hi = [], [], [], []
        for i, corpus in enumerate(corpora):
            v = sel[sel["corpus"] == corpus]["ratio"]
            if not len(v):
                continue
            x = i + (j - (len(groups) - 1) / 2) * width
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
    plots.legend(ax)
    return fig


EXPERIMENT = Experiment(
    id="C",
    title="compression ratio vs corpus (stored bytes)",
    own_columns=(
        "payload_bytes",
        "stored_bytes",
        "ratio",
        "batch_ratio",
        "corpus_entropy_bits",
        "corpus_sha256",
        "corpus_near_random",
        "stored_batches",
        "stored_codecs",
        "stored_source",
    ),
    compared=("codec",),
    headline=HEAD,
    verdict_on="ratio",
    needs={"stored_bytes": "stored bytes not measured by this transport"},
    compare_metrics=("corpus_entropy_bits", "payload_bytes", "stored_bytes", "ratio"),
    units=units(*HEAD, payload_bytes="B", stored_bytes="B"),
    rows=_rows,
    needs_stored=True,
    report_title="Experiment C · compression ratio and corpus entropy",
    section=_section,
    answer=_answer,
    answer_rank=10,
    answer_note="ratio: uncompressed payload / stored bytes (experiment C), median [range] over repetitions, "
    "the baseline's in parentheses (below 1× : the record batch overhead).",
    plots=(PlotSpec("c_ratio_entropy.png", "C: ratio per corpus and codec", ratio_vs_entropy, 40),),
)
