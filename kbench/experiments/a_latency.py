"""Experiment A: the latency cost of a codec at a common fixed rate.

Rows: the corrected, service, delay and end-to-end percentiles of one repetition, the producer
phases, loss.  Report: a table per machine × codec with p99 verdict rows, the phases table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kbench.engine.status import Status, Verdict
from kbench.engine.transports.base import RunResult
from kbench.experiments.rowkit import (
    LATENCY_ALL,
    finish,
    lat,
    loss,
    row_base,
    unmeasured,
)
from kbench.experiments.spec import LATENCY_PERCENTILES, Experiment, PlotSpec, RowInput, head, units
from kbench.reporting import document as doc
from kbench.reporting import plots
from kbench.reporting.context import ReportContext, label_cols, na_stat, pairs, rows_keys
from kbench.reporting.summary import overlap_verdict, stats, stats_many

if TYPE_CHECKING:
    import pandas as pd

HEAD = head(True, ("corrected_p50_us", "µs"), ("corrected_p99_us", "µs"), ("corrected_p999_us", "µs"))


def saturation_reasons(res: RunResult, linger_ms: float, bound_ms: float) -> list[str]:
    """Why a fixed-rate repetition was saturated ([] when it was not): each of the three signals
    of docs/methodology.md above ``bound_ms``, with the figure and the bound.

    - the producer's send delay p99 (how late sends left against the schedule);
    - the producer's queue wait p50 beyond the cell's linger.ms (librdkafka's statistics);
    - the consumer keeping up: end-to-end p50 − corrected p50.
    """
    bound_us = bound_ms * 1000
    ms = lambda us: f"{us / 1000:.1f}" if abs(us) >= 1000 else f"{us / 1000:.3f}"  # noqa: E731
    out = []
    d = res.latency_delay
    if d is not None and d.p99_us > bound_us:
        out.append(f"saturated: send delay p99 {ms(d.p99_us)} ms > {bound_ms:g} ms (sends left behind the schedule)")
    q = res.latency_phases.get("queue_p50_us")
    if q is not None and q - linger_ms * 1000 > bound_us:
        out.append(
            f"saturated: queue wait p50 {ms(q)} ms − linger.ms {linger_ms:g} = {ms(q - linger_ms * 1000)} ms "
            f"> {bound_ms:g} ms (batches waited for the sender)"
        )
    e, c = res.latency_e2e, res.latency_corrected
    if e is not None and c is not None and e.p50_us - c.p50_us > bound_us:
        out.append(
            f"saturated: e2e p50 − corrected p50 = {ms(e.p50_us - c.p50_us)} ms > {bound_ms:g} ms "
            "(the consumer fell behind)"
        )
    return out


def _consumer_phases(res: RunResult) -> dict[str, float | None]:
    """The consumer's side of the end-to-end latency: decompression of one batch of the median
    size (timed on this machine) and the rest of e2e p50 − service p50, the wait from the ack until
    the fetch hands the record over (fetch wait)."""
    dec = res.latency_phases.get("decompress_p50_us")
    e, s = res.latency_e2e, res.latency_service
    wait = None if e is None or s is None or dec is None else e.p50_us - s.p50_us - dec
    return {"phase_decompress_p50_us": dec, "phase_fetch_wait_p50_us": wait}


def _saturation(x: RowInput) -> Verdict:
    """A's check of its premise: SATURATED with the figures, or NA when it cannot be checked."""
    res = x.res
    if res.latency_corrected is None or res.target_rate is None:
        return Verdict()  # nothing measured at a fixed rate: NA already (needs)
    if res.latency_delay is None:
        return Verdict(
            Status.NA, ["send delay not measured: the saturation check cannot show the fixed rate was held unsaturated"]
        )
    why = saturation_reasons(res, float(x.cell.linger_ms), x.saturation_bound_ms)
    return Verdict(Status.SATURATED, why) if why else Verdict()


def _rows(x: RowInput) -> list[dict[str, Any]]:
    res, row = x.res, row_base(x)
    row.update(lat("corrected", res.latency_corrected, LATENCY_ALL))
    row.update(lat("service", res.latency_service, LATENCY_ALL))
    row.update(lat("delay", res.latency_delay, ("p99_us", "max_us")))
    row.update(lat("e2e", res.latency_e2e, ("p50_us", "p99_us", "max_us")))
    row.update({f"phase_{k}": res.latency_phases.get(k) for k in ("queue_p50_us", "compress_p50_us", "request_p50_us")})
    row.update(_consumer_phases(res))
    row["out_of_range"] = sum(
        h.out_of_range for h in (res.latency_corrected, res.latency_service, res.latency_e2e) if h is not None
    )
    row.update(loss(res))
    v = unmeasured(EXPERIMENT, x).merged(_saturation(x))
    if res.latency_e2e_na:
        v = v.merged(Verdict(v.status, [f"e2e latency NA: {res.latency_e2e_na}"]))
    return [finish(row, v)]


def _section(ctx: ReportContext, df: pd.DataFrame) -> None:
    labels = label_cols(df)
    keys = ["machine"] + labels
    metrics = [
        ("corrected_p50_us", "p50 µs"),
        ("corrected_p95_us", "p95 µs"),
        ("corrected_p99_us", "p99 µs"),
        ("corrected_p999_us", "p99.9 µs"),
    ]
    st = stats_many(ctx.ledger, df, "A", {m: "auto" for m, _ in metrics}, keys)
    rate = stats(ctx.ledger, df, "A", "target_rate_msgs", keys, "int", only_ok=False)  # a setting, not a measurement
    achieved = stats(ctx.ledger, df, "A", "rate_error_pct", keys, "f2")
    headers = [
        "machine",
        "arch",
        "physical cores",
        "fixed rate (msgs/s)",
        *labels,
        *(h for _, h in metrics),
        "rate error %",
        "n",
    ]
    rows: list[list[str]] = []
    emph: set[int] = set()
    all_keys = rows_keys(df, keys)
    p99 = "corrected_p99_us"
    vs_pairs = pairs(all_keys, 1)
    for machine in sorted({k[0] for k in all_keys}):
        arch = ctx.machine_run(machine).machine.get("arch", "NA")
        cores = ctx.mfig(machine, "physical_cores")
        for k in (k for k in all_keys if k[0] == machine):
            s = {m: st[m].get(k) or na_stat(ctx, m) for m, _ in metrics}
            r = rate.get(k)
            rows.append(
                [
                    machine,
                    str(arch),
                    cores.text,
                    r.median.text if r else "NA",
                    *k[1:],
                    *(s[m].median.text for m, _ in metrics),
                    (achieved[k].cell() if k in achieved else "NA"),
                    s[p99].n.text,
                ]
            )
        for b, k in (p for p in vs_pairs if p[0][0] == machine):
            sb, sk = st[p99].get(b) or na_stat(ctx, p99), st[p99].get(k) or na_stat(ctx, p99)
            v = overlap_verdict(sb, sk)
            emph.add(len(rows))
            rest = " ".join(x for x in k[2:])
            rows.append(
                [
                    f"{machine}{(' ' + rest) if rest else ''} p99 verdict",
                    f"{b[1]} range {sb.range()} / {k[1]} range {sk.range()} → {v}",
                    *[""] * (len(headers) - 2),
                ]
            )
            if sb.ok and sk.ok:
                delta = ctx.ledger.derive("diff", [sb.median, sk.median])
                ctx.headline.append(
                    f"Latency increment at the fixed rate, {machine}{(' ' + rest) if rest else ''}: p99 {k[1]} − {b[1]} = "
                    f"{delta} µs (medians {sk.median} vs {sb.median} µs): {v}."
                )
    ctx.add(
        doc.Heading(2, EXPERIMENT.report_title, "exp-a"),
        doc.Para(
            "Every cell runs at the same fixed rate (see the environment section for how it was derived), so a latency "
            "difference is the codec's, not queueing. Latencies are the corrected histogram (ack − intended send "
            "time: no coordinated omission); columns show medians over OK repetitions, verdict rows compare p99 ranges.",
            "note",
        ),
        doc.Table(headers, rows, emphasis_rows=frozenset(emph)),
    )
    _phases(ctx, df)


def _threats(ctx: ReportContext, df: pd.DataFrame) -> list[str]:
    """SATURATED rows: the premise of a fixed-rate comparison broke (their own line)."""
    g = df[df["status"] == Status.SATURATED] if "status" in df.columns else df.iloc[0:0]
    if not len(g):
        return []
    L = ctx.ledger
    n = L.agg("count", [0.0] * len(g), L.row_set("A", g["_gid"].to_numpy(), {"status": "SATURATED"}), "status", "int")
    return [
        f"A: {n} rows saturated (the premise of a fixed-rate latency comparison broke: send delay, queue wait or "
        "consumer lag above saturation_bound_ms); no verdict uses them; see Excluded data points."
    ]


PHASES = (
    ("phase_queue_p50_us", "queue / linger wait µs"),
    ("phase_compress_p50_us", "compression µs"),
    ("phase_request_p50_us", "request (queue + round trip) µs"),
    ("phase_decompress_p50_us", "consumer: decompression µs"),
    ("phase_fetch_wait_p50_us", "consumer: fetch wait µs"),
    ("service_p50_us", "service p50 µs (measured)"),
)


def _phases(ctx: ReportContext, df: pd.DataFrame) -> None:
    """Where producer latency goes: the phases' medians beside the measured service latency."""
    if "phase_queue_p50_us" not in df.columns or not df["phase_queue_p50_us"].notna().any():
        return
    keys = ["machine"] + label_cols(df)
    st = stats_many(ctx.ledger, df, "A", {m: "auto" for m, _ in PHASES}, keys)
    rows = []
    for k in rows_keys(df, keys):
        rows.append([*k, *((st[m].get(k) or na_stat(ctx, m)).median.text for m, _ in PHASES)])
    ctx.add(
        doc.Heading(3, "Where producer latency goes", "exp-a-phases"),
        doc.Para(
            "Medians over OK repetitions of each phase, from librdkafka's statistics: the wait in the producer's "
            "queue until the message is written into a batch (linger.ms and batch fill), the compression of a batch "
            "of the median size timed on this machine, and the request (transmit queue plus round trip, acks "
            "included). Their sum approximates the service median (docs/methodology.md states the tolerance). "
            "The consumer's side: decompressing one batch of the median size (timed on this machine) and the "
            "rest of e2e p50 − service p50 (the fetch wait).",
            "note",
        ),
        doc.Table(["machine", *label_cols(df), *(h for _, h in PHASES)], rows),
    )


EXPERIMENT = Experiment(
    id="A",
    title="latency cost of a codec at a common fixed rate",
    own_columns=tuple(f"corrected_{p}" for p in LATENCY_PERCENTILES)
    + tuple(f"service_{p}" for p in LATENCY_PERCENTILES)
    + (
        "delay_p99_us",
        "delay_max_us",
        "e2e_p50_us",
        "e2e_p99_us",
        "e2e_max_us",
        "phase_queue_p50_us",
        "phase_compress_p50_us",
        "phase_request_p50_us",
        "phase_decompress_p50_us",
        "phase_fetch_wait_p50_us",
        "out_of_range",
        "lost",
        "duplicated",
        "delivery_errors",
    ),
    compared=("codec",),
    headline=HEAD,
    verdict_on="corrected_p99_us",
    needs={"latency_corrected": "latency not measured by this transport"},
    rate="fixed",
    compare_metrics=(
        "target_rate_msgs",
        "corrected_p50_us",
        "corrected_p95_us",
        "corrected_p99_us",
        "corrected_p999_us",
    ),
    units=units(*HEAD, target_rate_msgs="msgs/s", achieved_rate_msgs="msgs/s", rate_error_pct="%"),
    rows=_rows,
    report_title="Experiment A · latency at a common fixed rate (the latency cost of a codec)",
    section=_section,
    threats=_threats,
    plots=(
        PlotSpec(
            "a_latency.png",
            "A: corrected latency percentiles per codec at the fixed rate",
            plots.latency_percentiles,
            10,
        ),
        PlotSpec(
            "a_knee.png",
            "A: corrected p50 and p99 against the target rate per codec (hollow: SATURATED repetitions)",
            plots.latency_knee,
            11,
        ),
    ),
)
