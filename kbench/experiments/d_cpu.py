"""Experiment D: who pays the CPU (producer, consumer, each broker) at a fixed rate.

Rows: one per role: usr and sys %, CPU-s per GB of the payload of that role's own CPU window,
the producer's load generator and client library apart, wire bytes, steal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kbench.engine.status import Verdict
from kbench.engine.transports.base import RunResult
from kbench.experiments.rowkit import GB, cpu_role, finish, per_gb, row_base, window_gb
from kbench.experiments.spec import AnswerCell, Experiment, PlotSpec, RowInput, head, units
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
    sources,
)
from kbench.reporting.provenance import Fig
from kbench.reporting.summary import Stat, stats_many
from kbench.reporting.verdicts import aa_pairs, family

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

HEAD = head(True, ("cpu_s_per_gb", "CPU-s/GB"), ("usr_pct", "%"), ("sys_pct", "%"))


def _rows(x: RowInput) -> list[dict[str, Any]]:
    res = x.res
    rows = []
    consumer_wire = (res.consumer_wire_bytes, "consumer statistics: bytes in")
    if res.consumer_wire_bytes is None and res.stored_bytes is not None and res.consumed:
        consumer_wire = (res.stored_bytes, "stored bytes fetched once (consumer statistics not exported)")
    wire = {"producer": (res.producer_wire_bytes, "producer statistics: bytes out"), "consumer": consumer_wire}
    for c in res.cpu:
        r = row_base(x)
        usr, sys_, cpu_s, st, why = cpu_role(c)
        gb = window_gb(c)
        r.update(role=c.role, pid=c.pid, usr_pct=usr, sys_pct=sys_, cpu_s=cpu_s, payload_gb=gb, steal_pct=res.steal_pct)
        r.update(
            cpu_source=c.source or ("kbench worker process (/proc/self/stat)" if c.pid is None else ""),
            broker_bytes_in=c.broker_counters.get("bytes_in"),
            broker_bytes_out=c.broker_counters.get("bytes_out"),
            produce_conversions=c.broker_counters.get("produce_conversions"),
        )
        r["cpu_s_per_gb"] = per_gb(cpu_s, gb)
        if st is None and cpu_s is not None and gb is None:
            st, why = "NA", f"{c.role}: payload of its CPU window not measured"
        # producer: the load generator's threads apart from the client library's (same window)
        split = cpu_s is not None and c.loadgen_s is not None and c.client_s is not None
        for part, val in (("loadgen", c.loadgen_s), ("client", c.client_s)):
            r[f"{part}_cpu_s"] = val if split else None
            r[f"{part}_cpu_s_per_gb"] = per_gb(val, gb) if split else None
        if c.role.startswith("broker"):
            repl = None if res.stored_bytes is None else res.stored_bytes * max(0, x.replication_factor - 1)
            r.update(wire_bytes=repl, wire_source=f"replication: stored bytes x (RF-1), RF={x.replication_factor}")
        else:
            wb, src = wire.get(c.role, (None, ""))
            r.update(wire_bytes=wb, wire_source=src)
        r.update(_nic(res, c.role))
        r.update(_kafka(res, c.role))
        v = x.verdict if st is None else x.verdict.merged(Verdict(st, [why]))
        rows.append(finish(r, v))
    if not rows:
        r = row_base(x)
        r.update(role="all")
        rows.append(finish(r, x.verdict.merged(Verdict("NA", [EXPERIMENT.needs["cpu"]]))))
    return rows


def _nic(res: RunResult, role: str) -> dict[str, Any]:
    """The role's host NIC bytes over the broker window, and per GB of that window's payload."""
    tx_rx = res.nic_bytes.get(role)
    if tx_rx is None:
        return {k: None for k in ("nic_tx_bytes", "nic_rx_bytes", "nic_tx_bytes_per_gb", "nic_rx_bytes_per_gb")} | {
            "nic_source": ""
        }
    gb = None if res.nic_window_payload_bytes is None else res.nic_window_payload_bytes / GB
    return {
        "nic_tx_bytes": tx_rx[0],
        "nic_rx_bytes": tx_rx[1],
        "nic_tx_bytes_per_gb": per_gb(tx_rx[0], gb),
        "nic_rx_bytes_per_gb": per_gb(tx_rx[1], gb),
        "nic_source": "emulated host NIC counters (Ethernet frames) over the whole repetition",
    }


#: D's columns of a broker's own byte counters over the NIC bytes' span, and the ratios to them.
KAFKA_COLUMNS = (
    "kafka_bytes_in",
    "kafka_bytes_out",
    "kafka_replication_bytes_in",
    "kafka_replication_bytes_out",
    "nic_tx_overhead",
    "nic_rx_overhead",
    "kafka_bytes_source",
)


def _ratio(nic: int | None, *kafka: float | None) -> float | None:
    if nic is None or any(k is None for k in kafka):
        return None
    total = sum(k for k in kafka if k is not None)
    return nic / total if total > 0 else None


def _kafka(res: RunResult, role: str) -> dict[str, Any]:
    """A broker's own byte counters (BytesIn/Out, ReplicationBytesIn/Out) over the same span as its
    NIC bytes, and the protocol overhead: NIC tx / (BytesOut + ReplicationBytesOut), NIC rx /
    (BytesIn + ReplicationBytesIn)."""
    k = res.kafka_bytes.get(role)
    if k is None:
        return dict.fromkeys(KAFKA_COLUMNS[:-1]) | {"kafka_bytes_source": ""}
    tx, rx = res.nic_bytes.get(role, (None, None))
    return {
        "kafka_bytes_in": k.get("bytes_in"),
        "kafka_bytes_out": k.get("bytes_out"),
        "kafka_replication_bytes_in": k.get("replication_bytes_in"),
        "kafka_replication_bytes_out": k.get("replication_bytes_out"),
        "nic_tx_overhead": _ratio(tx, k.get("bytes_out"), k.get("replication_bytes_out")),
        "nic_rx_overhead": _ratio(rx, k.get("bytes_in"), k.get("replication_bytes_in")),
        "kafka_bytes_source": k.get("source", ""),
    }


def _section(ctx: ReportContext, df: pd.DataFrame) -> None:
    labels = label_cols(df)
    keys = ["machine", "role"] + labels
    order = ["machine"] + labels[1:] + ["role", "codec"]
    many = stats_many(ctx.ledger, df, EXPERIMENT.id, {"usr_pct": "f2", "sys_pct": "f2", "cpu_s_per_gb": "f2"}, keys)
    usr, sys_, per_gb = many["usr_pct"], many["sys_pct"], many["cpu_s_per_gb"]
    all_keys = rows_keys(df, keys)
    base = {k: b for b, k in pairs(all_keys, 2)}
    codecs = sorted({k[2] for k in all_keys}) or [BASELINE]
    headers = [
        "machine",
        "role",
        *labels,
        "usr / sys %",
        "total %",
        f"Δ total vs {baseline(codecs)}",
        "CPU-s/GB median [range]",
        "n",
    ]
    rows = []

    def sort_key(k: tuple[str, ...]) -> tuple[str, ...]:
        d = dict(zip(keys, k))
        return tuple(d[c] for c in order)

    totals: dict[tuple[str, ...], Fig] = {}
    # one family: every role's comparisons on CPU-s/GB (as the console's), the brokers' printed here
    judged = [
        k
        for k in sorted(all_keys, key=sort_key)
        if k in base and base[k] in per_gb and k in per_gb
        if per_gb[k].ok and per_gb[base[k]].ok
    ]
    bv, _ = family(ctx, "cpu_s_per_gb", True, [(per_gb[base[k]], per_gb[k], base[k][2], k[2]) for k in judged])
    broker_verdicts = dict(zip(judged, bv))
    for k in sorted(all_keys, key=sort_key):
        u, s = usr.get(k), sys_.get(k)
        total = ctx.ledger.derive("sum", [u.median, s.median], "f2") if (u and s) else None
        if total is not None:
            totals[k] = total
        delta = "baseline" if k not in base else "NA"
        if k in base and base[k] in totals and total is not None:
            delta = ctx.ledger.derive("pct_change", [totals[base[k]], total], "pct").text
        g = per_gb.get(k) or na_stat(ctx, "cpu_s_per_gb")
        n = (u or g).n.text if (u or per_gb.get(k)) else na_stat(ctx, "usr_pct").n.text
        rows.append(
            [
                k[0],
                k[1],
                *k[2:],
                f"{u.median} / {s.median}" if (u and s) else "NA",
                total.text if total else "NA",
                delta,
                g.cell(),
                n,
            ]
        )
        if (
            k in base
            and k[1].startswith("broker")
            and base[k] in per_gb
            and k in per_gb
            and per_gb[k].ok
            and per_gb[base[k]].ok
        ):
            ch = ctx.ledger.derive("pct_change", [per_gb[base[k]].median, per_gb[k].median], "pct")
            v = broker_verdicts[k]
            rest = " ".join(x for x in k[3:] if x not in ("", "NA"))
            who = k[1] if ctx.one_machine else f"{k[0]} {k[1]}"
            ctx.headline.append(
                f"Broker CPU change, {who}{(' ' + rest) if rest else ''}: {ch} CPU-s/GB with {k[2]} vs {base[k][2]} "
                f"({per_gb[base[k]].median} → {per_gb[k].median}): {v}."
            )
    ctx.add(
        doc.Heading(2, EXPERIMENT.report_title, "exp-d"),
        doc.Para(
            "CPU of each role from /proc/<pid>/stat cumulative counters over the steady window, usr and sys apart. "
            "Two views of the same counters: CPU % is the load (% of one CPU) at the common rate; CPU-s/GB is the "
            "CPU-seconds per GB of uncompressed payload the role moved in its window (the answer's figure), so rows "
            "at different rates compare. Unreadable counters are NA, never zero.",
            "note",
        ),
        doc.Table(*ctx.machine_cols(headers, rows)),
        *sources(df, "cpu_source", "CPU counters"),
    )
    _nic_section(ctx, df, keys, sort_key)


#: The NIC table's figures (testbed runs): column -> (header, format).
NIC_FIGURES = {
    "nic_tx_bytes_per_gb": ("NIC tx GB/GB", "gb/gb"),
    "nic_rx_bytes_per_gb": ("NIC rx GB/GB", "gb/gb"),
    "nic_tx_overhead": ("NIC tx / Kafka out", "f3"),
    "nic_rx_overhead": ("NIC rx / Kafka in", "f3"),
}


def _nic_section(ctx: ReportContext, df: pd.DataFrame, keys: list[str], sort_key: Any) -> None:
    """Each role's NIC bytes per GB of payload and, for brokers, the NIC bytes over Kafka's own
    counters (testbed runs only: nothing when no row measured a NIC)."""
    if "nic_tx_bytes_per_gb" not in df.columns or not df["nic_tx_bytes_per_gb"].notna().any():
        return
    many = stats_many(ctx.ledger, df, EXPERIMENT.id, {c: f for c, (_, f) in NIC_FIGURES.items()}, keys)
    rows = []
    for k in sorted(rows_keys(df, keys), key=sort_key):
        got = [many[c].get(k) for c in NIC_FIGURES]
        if not any(g is not None and g.ok for g in got):
            continue
        n = next(g for g in got if g is not None and g.ok).n.text
        rows.append([*k, *(g.cell() if g is not None else "NA" for g in got), n])
    ctx.add(
        doc.Para(
            "NIC bytes per role (emulated hosts): each host's NIC counters over the whole repetition, in GB per GB "
            "of delivered payload; for a broker, its NIC bytes over the bytes Kafka itself counted in the same span "
            "(tx over BytesOut + ReplicationBytesOut, rx over BytesIn + ReplicationBytesIn): the protocol overhead.",
            "note",
        ),
        doc.Table([*keys, *(h for h, _ in NIC_FIGURES.values()), "n"], rows),
    )


def _answer(ctx: ReportContext, df: pd.DataFrame) -> list[AnswerCell]:
    """Per codec against the baseline: CPU-s/GB of the producer, the consumer and the brokers
    (the sum of the brokers' medians), and the factor against the baseline."""
    keys, prs = answer_pairs(df, extra=("role",))
    st = stats_many(ctx.ledger, df, EXPERIMENT.id, {"cpu_s_per_gb": "f2"}, keys)["cpu_s_per_gb"]
    groups: dict[tuple[tuple[str, ...], tuple[str, ...], str], list[tuple[str, Stat, Stat]]] = {}
    for b, k, q in prs:
        sb, sk = st.get(b), st.get(k)
        if sb is not None and sk is not None and sb.ok and sk.ok:
            groups.setdefault((b[:-1], k[:-1], q), []).append((k[-1], sb, sk))
    out = []
    # one family, as the console's and the D table's: every role's codec-against-baseline comparison
    # on CPU-s/GB (Holm over all of them; docs/methodology.md §5), the A/A pairs its noise floor
    controls = aa_pairs(st, keys)
    mine = [(g, r, sb, sk) for g, roles in groups.items() for r, sb, sk in roles]
    aa = [(st[b], st[c]) for b, c in controls if st[b].ok and st[c].ok]
    fam, _ = family(ctx, "cpu_s_per_gb", True, [(sb, sk, g[0][1], g[1][1]) for g, _, sb, sk in mine], aa)
    verdict = {(g, r): v for (g, r, _, _), v in zip(mine, fam)}
    for (b, k, q), roles in groups.items():
        for role in ("producer", "consumer"):
            for sb, sk in [(x, y) for r, x, y in roles if r == role]:
                v = verdict[((b, k, q), role)]
                f = ctx.ledger.derive("ratio", [sk.median, sb.median], "x")
                text = f"{sk.median} vs {sb.median} CPU-s/GB ({f}): {v}"
                out.append(AnswerCell(k[0], k[2], k[1], b[1], f"{role} CPU (D)", text, q))
        brokers = sorted((r, sb, sk) for r, sb, sk in roles if r.startswith("broker"))
        if brokers:
            tb = ctx.ledger.derive("sum", [sb.median for _, sb, _ in brokers], "f2")
            tk = ctx.ledger.derive("sum", [sk.median for _, _, sk in brokers], "f2")
            f = ctx.ledger.derive("ratio", [tk, tb], "x")
            text = f"{tk} vs {tb} CPU-s/GB ({f}; sum over the brokers)"
            out.append(AnswerCell(k[0], k[2], k[1], b[1], "broker CPU (D)", text, q))
    return out


def _threats(ctx: ReportContext, df: pd.DataFrame) -> list[str]:
    if "steal_pct" not in df.columns or not df["steal_pct"].notna().any():
        return []
    L = ctx.ledger
    sel = df[df["steal_pct"].notna()]
    sid = L.row_set(EXPERIMENT.id, sel["_gid"].to_numpy(), {})
    mx = L.agg("max", [float(x) for x in sel["steal_pct"]], sid, "steal_pct", "f2")
    return [
        f"CPU steal: at most {mx}% during the {EXPERIMENT.id} runs (a run above the limit in the manifest's rules is INVALID)."
    ]


def _compare_frame(ok: pd.DataFrame) -> pd.DataFrame:
    """The notebooks' per-machine table: total % = usr + sys."""
    if {"usr_pct", "sys_pct"} <= set(ok.columns):
        ok["total_pct"] = ok["usr_pct"] + ok["sys_pct"]
    return ok


def cpu_per_role(d: pd.DataFrame | None) -> Figure | None:
    """Experiment D: CPU-s per GB of payload per role (the table's figure: one panel each, one
    shared scale), the median bar split into its usr (solid) and sys (light) shares, one bar per
    machine within each codec (and corpus) group; medians over repetitions and cells.  The legend
    sits under the panels, the title above them."""
    ok = plots.ok_rows(d, "cpu_s_per_gb", "usr_pct", "sys_pct")
    if ok is None:
        return None
    group = ["codec"] + plots.other_labels(ok, "codec")
    ok = ok.assign(_group=plots.joined(ok, group))
    med = ok.groupby(["role", "_group", "machine"], sort=True)[["cpu_s_per_gb", "usr_pct", "sys_pct"]].median()
    roles = sorted(ok["role"].unique(), key=lambda r: ({"producer": 0, "consumer": 1}.get(r, 2), r))[:6]
    groups = sorted(ok["_group"].unique())
    machines = sorted(ok["machine"].unique())
    fig = plots.figure(max(8.0, 2.3 * len(roles)), 4.4)
    width = 0.8 / max(1, len(machines))
    colors = [f"C{i % 10}" for i in range(len(machines))]
    first = None
    for i, role in enumerate(roles):
        ax = fig.add_subplot(1, len(roles), i + 1, sharey=first)
        first = first or ax
        for j, m in enumerate(machines):
            xs, usr, sys_ = [], [], []
            for gi, g in enumerate(groups):
                if (role, g, m) in med.index:
                    per_gb, u, s_ = med.loc[(role, g, m)]
                    share = u / (u + s_) if u + s_ > 0 else 1.0
                    xs.append(gi + (j - (len(machines) - 1) / 2) * width)
                    usr.append(per_gb * share)
                    sys_.append(per_gb * (1 - share))
            name = "" if len(machines) == 1 else f"{m} "
            ax.bar(xs, usr, width * 0.9, color=colors[j], label=f"{name}usr" if i == 0 else None)
            ax.bar(
                xs, sys_, width * 0.9, bottom=usr, color=colors[j], alpha=0.45, label=f"{name}sys" if i == 0 else None
            )
        ax.set_xticks(range(len(groups)), groups, rotation=30, ha="right", fontsize=7)
        ax.set_title(str(role), fontsize=9)
        if i == 0:
            ax.set_ylabel("CPU-s per GB of payload (median)")
        else:
            ax.tick_params(labelleft=False)
    handles, labels = fig.axes[0].get_legend_handles_labels()
    plots.fig_legend(fig, handles, labels)
    fig.suptitle("D · CPU-s per GB per role at the common rate: usr (solid) + sys (light), one scale", fontsize=10)
    return fig


EXPERIMENT = Experiment(
    id="D",
    title="who pays the CPU (per role, fixed rate)",
    own_columns=(
        "role",
        "pid",
        "usr_pct",
        "sys_pct",
        "cpu_s",
        "payload_gb",
        "cpu_s_per_gb",
        "loadgen_cpu_s",
        "client_cpu_s",
        "loadgen_cpu_s_per_gb",
        "client_cpu_s_per_gb",
        "wire_bytes",
        "wire_source",
        "steal_pct",
        "cpu_source",
        "broker_bytes_in",
        "broker_bytes_out",
        "produce_conversions",
        "nic_tx_bytes",
        "nic_rx_bytes",
        "nic_tx_bytes_per_gb",
        "nic_rx_bytes_per_gb",
        "nic_source",
        *KAFKA_COLUMNS,
    ),
    compared=("codec",),
    headline=HEAD,
    verdict_on="cpu_s_per_gb",
    needs={"cpu": "this transport measured no CPU"},
    row_key=("role",),
    rate="fixed",
    compare_metrics=("usr_pct", "sys_pct", "total_pct", "cpu_s_per_gb"),
    per_core=("total_pct",),
    units=units(
        *HEAD,
        cpu_s="s",
        payload_gb="GB",
        wire_bytes="B",
        steal_pct="%",
        nic_tx_bytes="B",
        nic_rx_bytes="B",
        kafka_bytes_in="B",
        kafka_bytes_out="B",
        kafka_replication_bytes_in="B",
        kafka_replication_bytes_out="B",
    ),
    rows=_rows,
    needs_stored=True,
    report_title="Experiment D · who pays the CPU (producer, consumer, each broker)",
    section=_section,
    threats=_threats,
    answer=_answer,
    answer_rank=30,
    answer_note="CPU columns: CPU-seconds per GB of uncompressed payload of each role (experiment D), the codec's "
    "against the baseline's and the factor: the cost of moving the same data, whatever the rate. Experiment D's "
    "table also shows CPU % (of one CPU, over the steady window): the load at the common rate; both come from the "
    "same counters: CPU-s/GB is the CPU share times the window's seconds, over the GB moved in that window.",
    plots=(
        PlotSpec("d_cpu.png", "D: CPU-s per GB per role (as the table), usr and sys shares stacked", cpu_per_role, 30),
    ),
    compare_frame=_compare_frame,
)
