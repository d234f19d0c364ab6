"""Experiment G: catch-up, a consumer group draining a backlog.

Per repetition (a cell with ``backlog_bytes`` > 0): a saturated producer writes ``backlog_bytes``
of the corpus with the cell's codec (not timed), then ``consumers`` members of one consumer group
drain it from the start offsets (real group membership, partition assignment, committed offsets;
docs/methodology.md).  Rows: one per repetition: records/s and payload MB/s from the first record
any member read to the last one, the consumers' CPU-s per GB (summed over members, usr and sys,
the loop thread and librdkafka's threads apart, and the busiest member's own), the brokers' CPU
while they serve the fetches, the brokers' NIC egress per GB on the testbed, lost and duplicated
records counted per partition.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kbench.engine.status import Status, Verdict
from kbench.experiments.g_axes import AXES, SWEEP_KEYS, axis, catch_up, local_only, sweep_axes
from kbench.experiments.g_backlog import CATCH_UP_RUN_S, TUNING
from kbench.experiments.g_drain import catch_up_jobs
from kbench.experiments.rowkit import GB, cpu_role, finish, per_gb, row_base
from kbench.experiments.spec import AnswerCell, Experiment, RowInput, head, units
from kbench.reporting import document as doc
from kbench.reporting.context import ReportContext, answer_pairs, label_cols, na_stat, pairs, rows_keys
from kbench.reporting.summary import Stat, stats, stats_many
from kbench.reporting.verdicts import family

if TYPE_CHECKING:
    import pandas as pd

HEAD = head(False, ("drain_records_per_s", "records/s"), ("drain_mb_per_s", "MB/s"))


def _sum(vals: list[float | None]) -> float | None:
    return None if any(v is None for v in vals) else sum(v for v in vals if v is not None)


def _rows(x: RowInput) -> list[dict[str, Any]]:
    res, row = x.res, row_base(x)
    for a in AXES:
        row[a] = axis(x.cell, a)
    d = res.drain
    v = x.verdict
    if not d:
        v = v.merged(Verdict(Status.NA, ["no drain measured (the transport ran no catch-up)"]))
        return [finish(row, v)]
    span = d.get("span_s")
    gb = d["bytes"] / GB
    row["drain_s"] = span
    row["drain_records"] = d["unique"]
    row["drain_records_per_s"] = d["unique"] / span if span else None
    row["drain_mb_per_s"] = d["bytes"] / span / 1e6 if span else None
    members = [c for c in res.cpu if c.role.startswith("consumer")]
    brokers = [c for c in res.cpu if c.role.startswith("broker")]
    judged = [(c, cpu_role(c)) for c in members + brokers]
    # a member's CPU unreadable or going backwards voids the row; a broker's unreadable CPU (a
    # bootstrap cluster without pids or metrics) leaves its columns NA and says so
    bad = [(st, why) for c, (_, _, _, st, why) in judged if st is not None and (c in members or st != Status.NA)]
    if bad:
        v = v.merged(Verdict(bad[0][0], [why for _, why in bad]))
    unread = [why for c, (_, _, _, st, why) in judged if c in brokers and st == Status.NA]
    if unread:
        v = v.merged(Verdict(Status.OK, unread))
    usr = _sum([c.usr_s for c in members])
    sys_ = _sum([c.sys_s for c in members])
    row["consumer_usr_s_per_gb"] = per_gb(usr, gb)
    row["consumer_sys_s_per_gb"] = per_gb(sys_, gb)
    row["consumer_cpu_s_per_gb"] = per_gb(None if usr is None or sys_ is None else usr + sys_, gb)
    row["consumer_app_s_per_gb"] = per_gb(_sum([c.loadgen_s for c in members]), gb)
    row["consumer_client_s_per_gb"] = per_gb(_sum([c.client_s for c in members]), gb)
    own = [per_gb(cpu, (c.window_payload_bytes or 0) / GB) for c, (_, _, cpu, _, _) in judged if c in members]
    row["member_cpu_s_per_gb_max"] = None if not own or any(o is None for o in own) else max(own)  # type: ignore[type-var]
    # how tight the busiest member's CPU was while the group drained: its CPU over the drain span
    cpus = [cpu for c, (_, _, cpu, st, _) in judged if c in members and st is None and cpu is not None]
    row["member_cpu_pct_max"] = max(cpus) / span * 100 if span and cpus and len(cpus) == len(members) else None
    b_cpu = _sum([r[2] for _, r in judged[len(members) :]])
    b_wall = max((c.wall_s for c in brokers), default=0.0)
    row["broker_cpu_s_per_gb"] = per_gb(b_cpu, gb)
    row["broker_cpu_pct"] = b_cpu / b_wall * 100 if b_cpu is not None and b_wall > 0 else None
    tx = [t for role, (t, _) in res.nic_bytes.items() if role.startswith("broker")]
    row["broker_nic_tx_bytes_per_gb"] = per_gb(float(sum(tx)), gb) if tx else None
    row["lost"] = d["lost"]
    row["duplicated"] = d["duplicated"]
    row["rebalances"] = sum(int(m.get("rebalances") or 0) for m in d.get("members", []))
    row["steal_pct"] = res.steal_pct
    disk = d.get("disk_read_bytes")
    row["drain_disk_read_mb"] = None if disk is None else disk / 1e6
    row["host_drift_pct"] = res.host_drift_pct
    if span is None or not d["unique"]:
        v = v.merged(Verdict(Status.NA, ["the group read no record"]))
    return [finish(row, v)]


def _section(ctx: ReportContext, df: pd.DataFrame) -> None:
    labels = label_cols(df, extra=["consumers"])
    keys = ["machine"] + labels
    metrics = {
        "drain_records_per_s": "int",
        "drain_mb_per_s": "f2",
        "consumer_cpu_s_per_gb": "f2",
        "consumer_app_s_per_gb": "f2",
        "consumer_client_s_per_gb": "f2",
        "member_cpu_pct_max": "pct1",
        "broker_cpu_s_per_gb": "f2",
        "broker_nic_tx_bytes_per_gb": "gb/gb",
    }
    st = stats_many(ctx.ledger, df, EXPERIMENT.id, metrics, keys)
    headers = [
        *keys,
        "records/s median [range]",
        "payload MB/s",
        "consumer CPU-s/GB (sum)",
        "of it app / librdkafka",
        "busiest member CPU %",
        "broker CPU-s/GB",
        "broker NIC tx GB/GB",
        "n",
    ]
    rows: list[list[str]] = []
    for k in rows_keys(df, keys):
        rate = st.get("drain_records_per_s", {}).get(k) or na_stat(ctx, "drain_records_per_s")

        def med(m: str, key: tuple[str, ...] = k) -> str:
            s = st.get(m, {}).get(key)
            return s.median.text if s is not None else "NA"

        rows.append(
            [
                *k,
                rate.cell(),
                med("drain_mb_per_s"),
                med("consumer_cpu_s_per_gb"),
                f"{med('consumer_app_s_per_gb')} / {med('consumer_client_s_per_gb')}",
                med("member_cpu_pct_max"),
                med("broker_cpu_s_per_gb"),
                med("broker_nic_tx_bytes_per_gb"),
                rate.n.text,
            ]
        )
    ctx.add(
        doc.Heading(2, EXPERIMENT.report_title, "exp-g"),
        doc.Para(
            "Each repetition produces the backlog first (not timed), then a consumer group drains it from the start "
            "offsets; the rate is over the span from the first record any member read to the last one. CPU per GB "
            "divides each role's CPU over the drain by the payload drained; the broker NIC column is measured on the "
            "testbed only.",
            "note",
        ),
        doc.Table(headers, rows),
        *_verdicts(ctx, st.get("drain_records_per_s", {}), rows_keys(df, keys), keys),
    )


def _judge(
    ctx: ReportContext, st: dict[tuple[str, ...], Stat], prs: list[tuple[tuple[str, ...], tuple[str, ...]]]
) -> list[tuple[tuple[str, ...], tuple[str, ...], Stat, Stat, str]]:
    """Each codec's drain rate against the baseline's, one family (the one rule)."""
    ok = [(b, k) for b, k in prs if b in st and k in st and st[b].ok and st[k].ok]
    fam, _ = family(ctx, "drain_records_per_s", False, [(st[b], st[k], b[1], k[1]) for b, k in ok])
    return [(b, k, st[b], st[k], str(v)) for (b, k), v in zip(ok, fam)]


def _verdicts(ctx: ReportContext, st: dict, all_keys: list[tuple[str, ...]], keys: list[str]) -> list[doc.Block]:
    """G compares its codecs: the drain rate of each against the baseline's."""
    judged = _judge(ctx, st, pairs(all_keys, 1))
    if not judged:
        return []
    rows = [
        [f"{k[1]} vs {b[1]}", " ".join(f"{c} {x}" for c, x in zip(keys[2:], k[2:])), f"{sk.median} vs {sb.median}", v]
        for b, k, sb, sk, v in judged
    ]
    return [doc.Table(["codec", "cell", "records/s", "verdict (exact test, docs/methodology.md §5)"], rows)]


def _answer(ctx: ReportContext, df: pd.DataFrame) -> list[AnswerCell]:
    keys, prs = answer_pairs(df, extra=("consumers",))
    st = stats(ctx.ledger, df, EXPERIMENT.id, "drain_records_per_s", keys, "int")
    quals = {(b, k): " ".join(x for x in (q, f"consumers {k[-1]}") if x) for b, k, q in prs}
    out = []
    for b, k, sb, sk, v in _judge(ctx, st, [(b, k) for b, k, _ in prs]):
        ch = ctx.ledger.derive("pct_change", [sb.median, sk.median], "pct")
        text = f"{ch} records/s ({sk.median} vs {sb.median}): {v}"
        out.append(AnswerCell(k[0], k[2], k[1], b[1], "catch-up drain (G)", text, quals[(b, k)]))
    return out


def _sweep_check(axes: Any) -> str:
    if axes.get("backlog_bytes", [0])[0] <= 0:
        return "backlog_bytes: experiment G drains a backlog; give backlog_bytes > 0 (payload bytes to produce first)"
    return ""


EXPERIMENT = Experiment(
    id="G",
    title="catch-up: a consumer group draining a backlog",
    own_columns=(
        *AXES,
        "drain_s",
        "drain_records",
        "drain_records_per_s",
        "drain_mb_per_s",
        "consumer_usr_s_per_gb",
        "consumer_sys_s_per_gb",
        "consumer_cpu_s_per_gb",
        "consumer_app_s_per_gb",
        "consumer_client_s_per_gb",
        "member_cpu_s_per_gb_max",
        "member_cpu_pct_max",
        "broker_cpu_s_per_gb",
        "broker_cpu_pct",
        "broker_nic_tx_bytes_per_gb",
        "lost",
        "duplicated",
        "rebalances",
        "steal_pct",
        "drain_disk_read_mb",
        "host_drift_pct",
    ),
    compared=("codec",),
    headline=HEAD,
    verdict_on="drain_records_per_s",
    needs={},
    row_key=AXES,
    rate="saturated",
    units=units(
        *HEAD,
        drain_s="s",
        consumer_usr_s_per_gb="CPU-s/GB",
        consumer_sys_s_per_gb="CPU-s/GB",
        consumer_cpu_s_per_gb="CPU-s/GB",
        consumer_app_s_per_gb="CPU-s/GB",
        consumer_client_s_per_gb="CPU-s/GB",
        member_cpu_s_per_gb_max="CPU-s/GB",
        member_cpu_pct_max="%",
        broker_cpu_s_per_gb="CPU-s/GB",
        broker_cpu_pct="%",
        broker_nic_tx_bytes_per_gb="B/GB",
        drain_disk_read_mb="MB",
        host_drift_pct="%",
    ),
    rows=_rows,
    report_title="Experiment G · catch-up (a consumer group draining a backlog)",
    section=_section,
    answer=_answer,
    answer_rank=25,
    answer_note="catch-up drain: the change of the median drain rate (records/s, a consumer group reading a backlog, "
    "experiment G) against the baseline's, with the verdict of the exact test on their repetitions.",
    sweep_check=_sweep_check,
    sweep_axes=sweep_axes,
    sweep_keys=SWEEP_KEYS,
    local_only=local_only,
    jobs=catch_up_jobs,
    own_run=catch_up,
    own_run_s=CATCH_UP_RUN_S,
    short_window_fix="give G a larger backlog_bytes (the runner sizes it from the measured drain rate)",
    tuning=TUNING,
    console_note="(G: drain rate from the first record read to the last, any member; the backlog is produced untimed)",
)
