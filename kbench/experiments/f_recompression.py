"""Experiment F: broker recompression (topic compression.type against the producer's codec).

Rows: whether the stored batches' codec differs from the producer's, every broker's CPU per GB.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kbench.engine.status import Verdict
from kbench.experiments.rowkit import (
    cpu_role,
    finish,
    flag_inferred,
    per_gb,
    row_base,
    sum_counter,
    window_gb,
)
from kbench.experiments.spec import LABELS, Experiment, Metric, RowInput, units
from kbench.model.codecs import batch_codec
from kbench.reporting import document as doc
from kbench.reporting.context import ReportContext, na_stat, rows_keys
from kbench.reporting.summary import label_text, stats, varying
from kbench.reporting.verdicts import family

if TYPE_CHECKING:
    import pandas as pd


def _flag(median: float, lo: float | None, hi: float | None) -> str:
    """The recompressed flag of a cell in the end-of-run table: true when most repetitions were
    recompressed, "(mixed)" when they differ."""
    return ("true" if median >= 0.5 else "false") + ("" if lo == hi else " (mixed)")


HEAD = (Metric("broker_cpu_s_per_gb", "CPU-s/GB", True), Metric("recompressed", "", True, shown=_flag))


def _rows(x: RowInput) -> list[dict[str, Any]]:
    res, row = x.res, row_base(x)
    brokers = [c for c in res.cpu if c.role.startswith("broker")]
    usr = sys_ = cpu = broker_per_gb = None
    v = x.verdict
    if brokers:
        parts = [cpu_role(c) for c in brokers]
        bad = [p for p in parts if p[3] is not None]
        if bad:
            v = v.merged(Verdict(bad[0][3] or "NA", [p[4] for p in bad]))
        else:
            split = all(p[0] is not None and p[1] is not None for p in parts)  # metrics give usr+sys only
            usr = sum(p[0] or 0 for p in parts) if split else None
            sys_ = sum(p[1] or 0 for p in parts) if split else None
            cpu = sum(p[2] or 0 for p in parts)
            # every broker's CPU over the (one) broker window, per GB stored in that window
            broker_per_gb = per_gb(cpu, window_gb(brokers[0]))
            if broker_per_gb is None:
                v = v.merged(Verdict("NA", ["broker: payload of its CPU window not measured"]))
    else:
        v = v.merged(Verdict("NA", [EXPERIMENT.needs["cpu"]]))
    stored = {batch_codec(c) for c in res.stored_codecs}
    recompressed: bool | None = None
    if stored:
        recompressed = stored != {x.cell.spec.codec}
    row.update(
        producer_codec=x.cell.codec,
        stored_codecs=sorted(res.stored_codecs),
        recompressed=recompressed,
        broker_usr_pct=usr,
        broker_sys_pct=sys_,
        broker_cpu_s_per_gb=broker_per_gb,
        payload_bytes=res.payload_bytes,
        stored_bytes=res.stored_bytes,
        stored_source=res.stored_source,
        produce_conversions=sum_counter(brokers, "produce_conversions"),
    )
    return [finish(row, flag_inferred(v, res))]


def _section(ctx: ReportContext, df: pd.DataFrame) -> None:
    labels = ["codec", "topic_compression"] + [
        c for c in varying(df, [x for x in LABELS if x not in ("codec", "topic_compression")])
    ]
    keys = ["machine"] + labels
    cpu = stats(ctx.ledger, df, EXPERIMENT.id, "broker_cpu_s_per_gb", keys, "f2")
    all_keys = rows_keys(df, keys)
    rows = []

    def base_of(k: tuple[str, ...]) -> tuple[str, ...]:
        return k[:2] + ("producer",) + k[3:]

    judged = [
        k
        for k in all_keys
        if k[2] != "producer" and base_of(k) in cpu and cpu[base_of(k)].ok and k in cpu and cpu[k].ok
    ]
    fam, _ = family(
        ctx,
        "broker_cpu_s_per_gb",
        True,
        [(cpu[base_of(k)], cpu[k], "compression.type=producer", f"compression.type={k[2]}") for k in judged],
    )
    verdict = dict(zip(judged, fam))
    for k in all_keys:
        sel = df
        for col, v in zip(keys, k):
            sel = sel[sel[col].map(label_text) == v]
        stored = " ".join(sorted({str(x) for x in sel["stored_codecs"]})) if "stored_codecs" in sel else "NA"
        rec = " ".join(sorted({str(x) for x in sel["recompressed"]})) if "recompressed" in sel else "NA"
        c = cpu.get(k) or na_stat(ctx, "broker_cpu_s_per_gb")
        delta = "baseline" if k[2] == "producer" else "NA"
        b = k[:2] + ("producer",) + k[3:]
        if k[2] != "producer" and b in cpu and cpu[b].ok and c.ok:
            delta = ctx.ledger.derive("pct_change", [cpu[b].median, c.median], "pct").text
            ctx.headline.append(
                f"Broker recompression, {k[0]}: topic compression.type={k[2]} with producer {k[1]} costs {delta} broker CPU-s/GB vs compression.type=producer ({verdict[k]})."
            )
        rows.append([*k, stored, rec, c.cell(), delta, c.n.text])
    ctx.add(
        doc.Heading(2, EXPERIMENT.report_title, "exp-f"),
        doc.Para(
            "Recompression is read from the stored batches' codec against the producer's; broker CPU per GB of payload.",
            "note",
        ),
        doc.Table(
            *ctx.machine_cols(
                [
                    "machine",
                    "producer codec",
                    "topic compression.type",
                    *labels[2:],
                    "stored codecs",
                    "recompressed",
                    "broker CPU-s/GB median [range]",
                    "Δ vs producer",
                    "n",
                ],
                rows,
            )
        ),
    )


def _sweep_check(axes: Mapping[str, Sequence[Any]]) -> str:
    if len(set(axes["topic_compression"])) < 2:
        return (
            f"topic_compression: experiment {EXPERIMENT.id} compares topic compression.type values; "
            'list at least two, e.g. ["producer", "lz4"]'
        )
    return ""


EXPERIMENT = Experiment(
    id="F",
    title="broker recompression (topic compression.type vs producer codec)",
    own_columns=(
        "producer_codec",
        "stored_codecs",
        "recompressed",
        "broker_usr_pct",
        "broker_sys_pct",
        "broker_cpu_s_per_gb",
        "payload_bytes",
        "stored_bytes",
        "stored_source",
        "produce_conversions",
    ),
    compared=("topic_compression",),
    headline=HEAD,
    verdict_on="broker_cpu_s_per_gb",
    needs={"cpu": "broker CPU not measured (no local broker pids)"},
    compare_metrics=("broker_cpu_s_per_gb", "broker_usr_pct", "broker_sys_pct"),
    per_core=("broker_usr_pct", "broker_sys_pct"),
    units=units(*HEAD, broker_usr_pct="%", broker_sys_pct="%"),
    rows=_rows,
    needs_stored=True,
    report_title="Experiment F · broker recompression",
    section=_section,
    sweep_check=_sweep_check,
)
