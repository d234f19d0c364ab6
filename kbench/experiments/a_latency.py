"""Experiment A: the latency cost of a codec at a common fixed rate.

Rows: the corrected, service, delay and end-to-end percentiles of one repetition, the producer
phases, loss.  Report: a table per machine × codec with p99 verdict rows, the phases table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kbench.engine.status import Status, Verdict
from kbench.engine.transports.base import RunResult
from kbench.engine.warmup import still_warming
from kbench.experiments.a_plots import latency_knee, latency_percentiles
from kbench.experiments.rowkit import (
    LATENCY_ALL,
    finish,
    lat,
    loss,
    row_base,
    unmeasured,
)
from kbench.experiments.spec import (
    DEFAULT_SATURATION_BOUND_MS,
    LATENCY_PERCENTILES,
    AnswerCell,
    Experiment,
    PlotSpec,
    RowInput,
    head,
    units,
)
from kbench.reporting import document as doc
from kbench.reporting.context import ReportContext, answer_pairs, label_cols, na_stat, pairs, rows_keys
from kbench.reporting.summary import stats, stats_many, values_that_ran
from kbench.reporting.verdicts import Judged, aa_pairs, family

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
    d, e, c = res.latency_delay, res.latency_e2e, res.latency_corrected
    return saturation_signals(
        d.p99_us if d is not None else None,
        res.latency_phases.get("queue_p50_us"),
        linger_ms,
        e.p50_us if e is not None else None,
        c.p50_us if c is not None else None,
        bound_ms,
    )


def saturation_signals(
    delay_p99_us: float | None,
    queue_p50_us: float | None,
    linger_ms: float,
    e2e_p50_us: float | None,
    corrected_p50_us: float | None,
    bound_ms: float,
) -> list[str]:
    """The one saturation rule (see :func:`saturation_reasons`) on the figures themselves: the
    runner applies it to a repetition, the report again to every OK row of A.csv before a p99
    enters the answer (so a CSV whose status says OK cannot carry a queueing latency there)."""
    bound_us = bound_ms * 1000
    ms = lambda us: f"{us / 1000:.1f}" if abs(us) >= 1000 else f"{us / 1000:.3f}"  # noqa: E731
    out = []
    if delay_p99_us is not None and delay_p99_us > bound_us:
        out.append(
            f"saturated: send delay p99 {ms(delay_p99_us)} ms > {bound_ms:g} ms (sends left behind the schedule)"
        )
    q = queue_p50_us
    if q is not None and q - linger_ms * 1000 > bound_us:
        out.append(
            f"saturated: queue wait p50 {ms(q)} ms − linger.ms {linger_ms:g} = {ms(q - linger_ms * 1000)} ms "
            f"> {bound_ms:g} ms (batches waited for the sender)"
        )
    if e2e_p50_us is not None and corrected_p50_us is not None and e2e_p50_us - corrected_p50_us > bound_us:
        out.append(
            f"saturated: e2e p50 − corrected p50 = {ms(e2e_p50_us - corrected_p50_us)} ms > {bound_ms:g} ms "
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
    if not why:
        return _above_knee(x)
    # warming, not saturated: the p99 fell and settled below the bounds the window is judged by
    bounds = [x.saturation_bound_ms * 1000] + ([x.knee_factor * x.knee_floor_us] if x.knee_floor_us else [])
    warming = still_warming(res.series, min(bounds))
    if warming:  # the driver or cluster was still warming: not the load's saturation
        return Verdict(Status.WARMING, [warming, *why])
    return Verdict(Status.SATURATED, why)


def _above_knee(x: RowInput) -> Verdict:
    """ABOVE_KNEE when the corrected p99 exceeds knee_factor × the pipeline's latency floor."""
    c, fl = x.res.latency_corrected, x.knee_floor_us
    if c is None or fl is None or c.p99_us <= x.knee_factor * fl:
        return Verdict()
    return Verdict(
        Status.ABOVE_KNEE,
        [
            f"corrected p99 {c.p99_us / 1000:.2f} ms > knee_factor {x.knee_factor:g} × latency floor "
            f"{fl / 1000:.2f} ms = {x.knee_factor * fl / 1000:.2f} ms (the rate is past the pipeline's knee)"
        ],
    )


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


METRICS = (
    ("corrected_p50_us", "p50 ms"),
    ("corrected_p95_us", "p95 ms"),
    ("corrected_p99_us", "p99 ms"),
    ("corrected_p999_us", "p99.9 ms"),
)
P99 = "corrected_p99_us"


def _cell_rows(df: pd.DataFrame, keys: list[str], key: tuple[str, ...]) -> pd.DataFrame:
    sel = df
    for c, v in zip(keys, key):
        sel = sel[sel[c] == v]
    return sel


def _count(ctx: ReportContext, rows: pd.DataFrame, keys: list[str], key: tuple[str, ...], **where: str) -> str:
    """The number of ``rows`` (the rows of the cell ``key`` that match ``where``), a ledger figure."""
    L = ctx.ledger
    sel = dict(zip(keys, key)) | where
    return L.agg("count", [0.0] * len(rows), L.row_set("A", rows["_gid"].to_numpy(), sel), "status", "int").text


def _num(row: Any, col: str) -> float | None:
    v = row.get(col) if hasattr(row, "get") else None
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if f != f else f


def _window_note(ctx: ReportContext) -> str:
    """Which messages A's latencies cover, per run: the steady window (from ``steady_skip_s``) or,
    for a run made before kbench had a latency window, every message of the run."""
    parts = []
    for run in ctx.runs:
        m = run.manifest
        raw = m.get("rules")
        rules: dict[str, object] = raw if isinstance(raw, dict) else {}
        skip = m.get("steady_skip_s")
        label = f"{run.label}: " if len(ctx.runs) > 1 else ""
        if rules.get("latency_window") == "steady" and isinstance(skip, (int, float)) and skip > 0:
            parts.append(f"{label}messages due {skip:g} s or more after the start (the steady window, as for CPU)")
        else:
            parts.append(f"{label}every message of the repetition, start-up included")
    return "Latencies cover " + "; ".join(parts) + "."


def _floor_note(ctx: ReportContext) -> str:
    """Each run's latency floor per pipeline and the knee factor (manifest ``rate_derivation``):
    the bound every A repetition's corrected p99 was held to ('' when no floor was measured)."""
    parts = []
    for run in ctx.runs:
        m, i = run.manifest, run.index
        rd = m.get("rate_derivation")
        if not isinstance(rd, dict):
            continue
        floors = rd.get("floors_us")
        if not isinstance(floors, dict) or not floors:
            continue
        raw = m.get("cells")
        cells: dict[str, Any] = raw if isinstance(raw, dict) else {}
        L = ctx.ledger
        each = []
        for cid, v in floors.items():
            c = cells.get(cid, {}) if isinstance(cells, dict) else {}
            name = f"{c.get('codec', cid)}/{c.get('corpus', '')}" if isinstance(c, dict) else cid
            each.append(f"{name} {L.manifest(v, i, f'rate_derivation/floors_us/{cid}', 'ms').text} ms")
        factor = L.manifest(rd.get("knee_factor"), i, "rate_derivation/knee_factor")
        label = f"{run.label}: " if len(ctx.runs) > 1 else ""
        parts.append(
            f"{label}Latency floor (corrected p99 at a low probe rate, per pipeline) {', '.join(each)}; "
            f"every repetition's p99 is held to knee_factor {factor.text} × its floor (else ABOVE_KNEE)"
        )
    return (" " + "; ".join(parts) + ".") if parts else ""


def _queue_dominated(ctx: ReportContext, ok: pd.DataFrame) -> bool:
    """Whether an OK row of A breaks the unsaturated premise by its own figures (the runner's
    rule, :func:`saturation_signals`, with its run's saturation_bound_ms)."""
    for _, row in ok.iterrows():
        run = int(row.get("_run", 0))
        rules = ctx.runs[run].manifest.get("rules") if run < len(ctx.runs) else None
        bound = rules.get("saturation_bound_ms") if isinstance(rules, dict) else None
        linger = _num(row, "linger_ms")
        if saturation_signals(
            _num(row, "delay_p99_us"),
            _num(row, "phase_queue_p50_us"),
            linger if linger is not None else 0.0,
            _num(row, "e2e_p50_us"),
            _num(row, "corrected_p50_us"),
            float(bound) if isinstance(bound, (int, float)) else DEFAULT_SATURATION_BOUND_MS,
        ):
            return True
    return False


def p99_family(
    ctx: ReportContext, st: dict, prs: list[tuple[tuple[str, ...], tuple[str, ...]]], keys: list[str]
) -> tuple[dict[tuple[tuple[str, ...], tuple[str, ...]], Judged], list[tuple[tuple[str, ...], Judged]]]:
    """The p99 verdicts of the (baseline, other) pairs ``prs`` as one family (the one rule,
    kbench.reporting.verdicts), and the A/A controls' own (control key, verdict)."""
    items = [(st.get(b) or na_stat(ctx, P99), st.get(k) or na_stat(ctx, P99), b[1], k[1]) for b, k in prs]
    aa = aa_pairs(st, keys)
    main, aa_v = family(ctx, P99, True, items, [(st[b], st[k]) for b, k in aa])
    return dict(zip(prs, main)), [(k, v) for (_, k), v in zip(aa, aa_v)]


def p99_added(
    ctx: ReportContext,
    df: pd.DataFrame,
    keys: list[str],
    b: tuple[str, ...],
    k: tuple[str, ...],
    st: dict,
    verdicts: dict[tuple[tuple[str, ...], tuple[str, ...]], Judged],
) -> tuple[str, str | None]:
    """The p99 ``k`` adds to ``b`` at the common fixed rate: (text, verdict), or (the reason
    there is none, None).  A p99 is given only when no repetition of either cell was SATURATED
    (queueing, not the codec) and each has two OK repetitions."""
    sides = [(b, _cell_rows(df, keys, b)), (k, _cell_rows(df, keys, k))]
    sat = [(key, g[g["status"] == Status.SATURATED], g) for key, g in sides]
    if any(len(s) for _, s, _ in sat):
        parts = [
            f"{key[1]} {_count(ctx, s, keys, key, status='SATURATED')} of {_count(ctx, g, keys, key)} rows"
            for key, s, g in sat
            if len(s)
        ]
        return f"no p99: SATURATED ({', '.join(parts)}): queueing, not the codec", None
    queued = [key[1] for key, g in sides if _queue_dominated(ctx, g[g["status"] == Status.OK])]
    if queued:
        return (
            f"no p99: OK repetitions of {' and '.join(queued)} break the unsaturated premise "
            "(send delay, queue wait beyond linger.ms or consumer lag above saturation_bound_ms): queueing, not the codec",
            None,
        )
    sb, sk = st.get(b) or na_stat(ctx, P99), st.get(k) or na_stat(ctx, P99)
    if not (sb.ok and sk.ok) or int(sb.value("count") or 0) < 2 or int(sk.value("count") or 0) < 2:
        parts = [
            f"{key[1]} {(st.get(key) or na_stat(ctx, P99)).n} OK of {_count(ctx, g, keys, key)}" for key, g in sides
        ]
        return f"no p99: too few OK repetitions ({', '.join(parts)}; a verdict needs 2 per codec)", None
    v = str(verdicts[(b, k)])
    delta = ctx.ledger.derive("diff", [sb.median, sk.median], "ms+")
    return f"{delta} ms ({sk.median} vs {sb.median} ms): {v}", v


def _section(ctx: ReportContext, df: pd.DataFrame) -> None:
    labels = label_cols(df)
    keys = ["machine"] + labels
    st = stats_many(ctx.ledger, df, "A", {m: "ms" for m, _ in METRICS}, keys)
    rate = values_that_ran(ctx.ledger, df, "A", "target_rate_msgs", keys)  # a setting: every rate that ran
    achieved = stats(ctx.ledger, df, "A", "rate_error_pct", keys, "f2")
    lead = [] if ctx.one_machine else ["machine", "arch", "physical cores"]
    headers = [*lead, "fixed rate (msgs/s)", *labels, *(h for _, h in METRICS), "rate error %", "n"]
    rows: list[list[str]] = []
    emph: set[int] = set()
    all_keys = rows_keys(df, keys)
    vs_pairs = pairs(all_keys, 1)
    fam, aa_rows = p99_family(ctx, st[P99], vs_pairs, keys)
    for machine in sorted({k[0] for k in all_keys}):
        arch = ctx.machine_run(machine).machine.get("arch", "NA")
        cores = ctx.mfig(machine, "physical_cores")
        for k in (k for k in all_keys if k[0] == machine):
            s = {m: st[m].get(k) or na_stat(ctx, m) for m, _ in METRICS}
            r = rate.get(k)
            rows.append(
                [
                    *([] if ctx.one_machine else [machine, str(arch), cores.text]),
                    r or "NA",
                    *k[1:],
                    *(s[m].median.text for m, _ in METRICS),
                    (achieved[k].cell() if k in achieved else "NA"),
                    s[P99].n.text,
                ]
            )
        for b, k in (p for p in vs_pairs if p[0][0] == machine):
            sb, sk = st[P99].get(b) or na_stat(ctx, P99), st[P99].get(k) or na_stat(ctx, P99)
            text, v = p99_added(ctx, df, keys, b, k, st[P99], fam)
            emph.add(len(rows))
            rest = " ".join(f"{c} {x}" for c, x in zip(labels[1:], k[2:]) if c != "control_of")  # never a control
            where = " ".join(x for x in ([] if ctx.one_machine else [machine]) + ([rest] if rest else []))
            rows.append(
                [
                    f"{where + ' ' if where else ''}p99 verdict (ms)",
                    f"{b[1]} range {sb.range()} / {k[1]} range {sk.range()} → " + (v if v is not None else text),
                    *[""] * (len(headers) - 2),
                ]
            )
            if v is not None:
                ctx.headline.append(
                    f"Latency increment at the fixed rate{', ' + where if where else ''}: p99 {k[1]} − {b[1]} = {text}."
                )
    for k, av in aa_rows:  # the host's noise: the baseline against its A/A control
        emph.add(len(rows))
        rows.append([f"{k[1]} A/A control p99 (ms)", str(av), *[""] * (len(headers) - 2)])
    ctx.add(
        doc.Heading(2, EXPERIMENT.report_title, "exp-a"),
        doc.Para(
            "Every cell runs at the same fixed rate (see Setup for how it was derived). A repetition whose producer "
            "fell behind the schedule, whose batches waited for the sender or whose consumer fell behind is SATURATED "
            "(queueing, not the codec): it enters no median and no verdict. Latencies are the corrected histogram "
            "(ack − intended send time: no coordinated omission), in ms; columns show medians over OK repetitions, "
            "verdict rows compare the cells' p99 by the exact test (docs/methodology.md §5: the shift with its interval, p Holm-corrected, n; the seed's ranges rule beside it). "
            + _window_note(ctx)
            + _floor_note(ctx),
            "note",
        ),
        doc.Table(headers, rows, emphasis_rows=frozenset(emph)),
    )
    _phases(ctx, df)


def _answer(ctx: ReportContext, df: pd.DataFrame) -> list[AnswerCell]:
    keys, prs = answer_pairs(df)
    st = stats(ctx.ledger, df, "A", P99, keys, "ms")
    fam, _ = p99_family(ctx, st, [(b, k) for b, k, _ in prs], keys)
    out = []
    for b, k, q in prs:
        text, _ = p99_added(ctx, df, keys, b, k, st, fam)
        out.append(AnswerCell(k[0], k[2], k[1], b[1], "p99 added (A, fixed rate)", text, q))
    return out


PHASES = (
    ("phase_queue_p50_us", "queue / linger wait ms"),
    ("phase_compress_p50_us", "compression ms"),
    ("phase_request_p50_us", "request (queue + round trip) ms"),
    ("phase_decompress_p50_us", "consumer: decompression ms"),
    ("phase_fetch_wait_p50_us", "consumer: fetch wait ms"),
    ("service_p50_us", "service p50 ms (measured)"),
)


def _phases(ctx: ReportContext, df: pd.DataFrame) -> None:
    """Where producer latency goes: the phases' medians beside the measured service latency."""
    if "phase_queue_p50_us" not in df.columns or not df["phase_queue_p50_us"].notna().any():
        return
    keys = ["machine"] + label_cols(df)
    st = stats_many(ctx.ledger, df, "A", {m: "ms" for m, _ in PHASES}, keys)
    rows = []
    for k in rows_keys(df, keys):
        rows.append([*k, *((st[m].get(k) or na_stat(ctx, m)).median.text for m, _ in PHASES)])
    headers, rows = ctx.machine_cols(["machine", *label_cols(df), *(h for _, h in PHASES)], rows)
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
        doc.Table(headers, rows),
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
    answer=_answer,
    answer_rank=40,
    answer_note="p99 added: the median corrected p99 at the common fixed rate minus the baseline's (experiment A), "
    "with the verdict of the exact test on their repetitions (docs/methodology.md §5); given only where every repetition of both cells was unsaturated and each "
    "has two OK repetitions, otherwise the reason there is none.",
    plots=(
        PlotSpec(
            "a_latency.png",
            "A: corrected latency percentiles per codec at the fixed rate",
            latency_percentiles,
            10,
        ),
        PlotSpec(
            "a_knee.png",
            "A: corrected p50 and p99 against the target rate per codec (hollow: SATURATED repetitions)",
            latency_knee,
            11,
        ),
    ),
    premise_check=saturation_reasons,
)
