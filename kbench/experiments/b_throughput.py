"""Experiment B: the throughput cost of a codec (saturated producer).

Rows: achieved msgs/s and payload MB/s; latencies flagged as queueing.  Report: msgs/s per
machine × codec against the baseline, per vCPU and per core, the spread across machines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kbench.experiments.rowkit import finish, lat, loss, row_base
from kbench.experiments.spec import SATURATED_FLAG, AnswerCell, Experiment, PlotSpec, RowInput, head, units
from kbench.reporting import document as doc
from kbench.reporting import plots
from kbench.reporting.context import (
    BASELINE,
    ReportContext,
    answer_pairs,
    baseline,
    label_cols,
    na_stat,
    pairs,
    rows_keys,
)
from kbench.reporting.summary import stats
from kbench.reporting.verdicts import aa_pairs, family

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

HEAD = head(False, ("achieved_rate_msgs", "msgs/s"), ("payload_mb_per_s", "MB/s"))


def _rows(x: RowInput) -> list[dict[str, Any]]:
    res, row = x.res, row_base(x)
    # The span the achieved (delivered) rate is over: first send to the last delivery, not to the
    # last send, which comes early when the bottleneck is past the producer (a network-bound
    # broker): librdkafka's queue takes the sends and delivers them later.
    el = res.messages_acked / res.achieved_rate if res.achieved_rate > 0 else float("nan")
    row["payload_mb_per_s"] = res.payload_bytes / el / 1e6
    row["producer_wire_mb_per_s"] = None if res.producer_wire_bytes is None else res.producer_wire_bytes / el / 1e6
    row.update(lat("service", res.latency_service, ("p50_us", "p99_us")))
    row["latency_flag"] = SATURATED_FLAG
    row.update(loss(res))
    return [finish(row, x.verdict)]


def _section(ctx: ReportContext, df: pd.DataFrame) -> None:
    labels = label_cols(df)
    keys = ["machine"] + labels
    st = stats(ctx.ledger, df, EXPERIMENT.id, "achieved_rate_msgs", keys, "int")
    mb = stats(ctx.ledger, df, EXPERIMENT.id, "payload_mb_per_s", keys)
    all_keys = rows_keys(df, keys)
    base = {k: b for b, k in pairs(all_keys, 1)}
    headers = [
        "machine",
        *([] if ctx.one_machine else ["arch", "physical cores", "vCPU"]),
        *labels,
        "msgs/s median [range]",
        "payload MB/s",
        f"vs {baseline(sorted({k[1] for k in all_keys}) or [BASELINE])}",
        "msgs/s per vCPU",
        "msgs/s per physical core",
        "n",
    ]
    rows: list[list[str]] = []
    for k in all_keys:
        machine = k[0]
        s = st.get(k) or na_stat(ctx, "achieved_rate_msgs")
        cores, vcpu = ctx.mfig(machine, "physical_cores"), ctx.mfig(machine, "logical_cores")
        vs = "baseline" if k not in base else "NA"
        if k in base and base[k] in st and s.ok:
            vs = ctx.ledger.derive("share_pct", [s.median, st[base[k]].median], "pct1").text
        per_v = ctx.ledger.derive("ratio", [s.median, vcpu], "int")
        per_c = ctx.ledger.derive("ratio", [s.median, cores], "int")
        rows.append(
            [
                machine,
                *(
                    []
                    if ctx.one_machine
                    else [str(ctx.machine_run(machine).machine.get("arch", "NA")), cores.text, vcpu.text]
                ),
                *k[1:],
                s.cell(),
                mb[k].median.text if k in mb else "NA",
                vs,
                per_v.text,
                per_c.text,
                s.n.text,
            ]
        )
    flagged = df[df.get("latency_flag", "") == SATURATED_FLAG] if "latency_flag" in df.columns else df.iloc[0:0]
    nflag = ctx.ledger.agg(
        "count",
        [0.0] * len(flagged),
        ctx.ledger.row_set(EXPERIMENT.id, flagged["_gid"].to_numpy(), {"latency_flag": SATURATED_FLAG}),
        "latency_flag",
        "int",
    )
    ctx.add(
        doc.Heading(2, EXPERIMENT.report_title, "exp-b"),
        doc.Para(
            f"Latency columns are deliberately left out: at saturation each codec runs at a different rate, so its "
            f"latency is queueing, not service. {nflag} rows carry {SATURATED_FLAG} and no latency conclusion uses them.",
            "note",
        ),
        doc.Table(*ctx.machine_cols(headers, rows)),
    )
    # Spread across machines per codec (and labels): (max − min) / min of the machines' medians.
    machines = sorted({k[0] for k in all_keys})
    for lab in sorted({k[1:] for k in all_keys}):
        meds = [st[(m, *lab)].median for m in machines if (m, *lab) in st and st[(m, *lab)].ok]
        what = " ".join(lab)
        if len(meds) >= 2:
            spread = ctx.ledger.derive("spread_pct", meds, "pct1")
            ctx.headline.append(
                f"Saturated throughput spread across machines, {what}: {spread} ((max − min) / min of the machines' medians)."
            )
        elif len(meds) == 1:
            ctx.headline.append(
                f"Saturated throughput, {what}: {meds[0]} msgs/s on one machine (no spread across machines to show)."
            )


def _answer(ctx: ReportContext, df: pd.DataFrame) -> list[AnswerCell]:
    keys, prs = answer_pairs(df)
    st = stats(ctx.ledger, df, EXPERIMENT.id, "achieved_rate_msgs", keys, "int")
    out = []
    ok = [(b, k) for b, k, _ in prs if st.get(b) and st.get(k) and st[b].ok and st[k].ok]
    aa = [(st[b], st[c]) for b, c in aa_pairs(st, keys) if st[b].ok and st[c].ok]
    fam, _ = family(ctx, "achieved_rate_msgs", False, [(st[b], st[k], b[1], k[1]) for b, k in ok], aa)
    verdict = dict(zip(ok, fam))
    for b, k, q in prs:
        sb, sk = st.get(b), st.get(k)
        if sb is None or sk is None or not (sb.ok and sk.ok):
            text = "no OK repetition of " + " and ".join(x[1] for x, s in ((b, sb), (k, sk)) if s is None or not s.ok)
        else:
            ch = ctx.ledger.derive("pct_change", [sb.median, sk.median], "pct")
            text = f"{ch} msgs/s ({sk.median} vs {sb.median}): {verdict[(b, k)]}"
        out.append(AnswerCell(k[0], k[2], k[1], b[1], "throughput (B, saturated)", text, q))
    return out


def _threats(ctx: ReportContext, df: pd.DataFrame) -> list[str]:
    if "latency_flag" not in df.columns:
        return []
    fl = df[df["latency_flag"] == SATURATED_FLAG]
    if not len(fl):
        return []
    L = ctx.ledger
    n = L.agg(
        "count",
        [0.0] * len(fl),
        L.row_set(EXPERIMENT.id, fl["_gid"].to_numpy(), {"latency_flag": SATURATED_FLAG}),
        "latency_flag",
        "int",
    )
    return [
        f"Saturated latency excluded: {n} {EXPERIMENT.id} rows are flagged {SATURATED_FLAG}; the report uses no {EXPERIMENT.id} latency."
    ]


def throughput(b: pd.DataFrame | None) -> Figure | None:
    """Experiment B: saturated throughput per codec and machine (median bar, range whisker,
    each repetition a dot)."""
    ok = plots.ok_rows(b, "achieved_rate_msgs")
    if ok is None:
        return None
    machines = sorted(ok["machine"].unique())
    fig, ax, width, groups = plots.bar_series(ok, ["codec"] + plots.other_labels(ok, "codec"))
    labels = [lab for lab, _ in groups]
    for j, (lab, sel) in enumerate(groups):
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
        plots.legend(ax)
    ax.set_ylabel("msgs/s at saturation")
    plots.thousands(ax)
    ax.set_title("B · saturated throughput (bar: median, whisker: range, dots: repetitions)", fontsize=10)
    return fig


EXPERIMENT = Experiment(
    id="B",
    title="throughput cost (saturated producer)",
    own_columns=(
        "payload_mb_per_s",
        "producer_wire_mb_per_s",
        "service_p50_us",
        "service_p99_us",
        "latency_flag",
        "lost",
        "duplicated",
        "delivery_errors",
    ),
    compared=("codec",),
    headline=HEAD,
    verdict_on="achieved_rate_msgs",
    needs={},
    rate="saturated",
    compare_metrics=("achieved_rate_msgs", "payload_mb_per_s"),
    per_core=("achieved_rate_msgs",),
    units=units(*HEAD, producer_wire_mb_per_s="MB/s"),
    rows=_rows,
    report_title="Experiment B · saturated throughput (the throughput cost)",
    section=_section,
    threats=_threats,
    answer=_answer,
    answer_rank=20,
    answer_note="throughput: the change of the median saturated msgs/s against the baseline's (experiment B), "
    "with the verdict of the exact test on their repetitions (docs/methodology.md §5: effect, interval, p, n).",
    plots=(PlotSpec("b_throughput.png", "B: saturated throughput per codec and machine", throughput, 20),),
    console_note=f"(B latencies are flagged {SATURATED_FLAG}: queueing, not service; see A)",
)
