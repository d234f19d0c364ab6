"""The experiments' rules (DESIGN §2–3): from one run's measurements to CSV rows with a status.

- fixed rate: achieved rate off the target by more than :data:`RATE_TOLERANCE` → ``REJECTED``;
- saturated (B): latencies flagged ``latency-NOT-comparable-saturated``;
- CPU (D, F): unreadable counters → ``NA`` (never 0), a negative delta → ``FAILED_CPU_REGRESSED``;
  CPU-s/GB divides a role's CPU by the payload of that role's own CPU window, never the run's;
- steal above the plan's ``max_steal_pct`` (default :data:`STEAL_LIMIT_PCT`) → ``INVALID`` (for
  every row of that run); such a run, or a ``REJECTED`` one, is retried within the plan's budget
  (:data:`RETRY_STATUSES`);
- steal that could not be measured (``None``) on a measuring transport → ``NA`` for every row of
  that run (the run cannot be shown within the limit; a synthetic run's timings are labelled as such);
- lost or duplicated records, or delivery errors → ``FAILED_LOSS``;
- a topic whose ``compression.type`` does not read back as planned → ``FAILED_TOPIC_CONFIG``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kbench.engine import experiments
from kbench.engine.experiments import SATURATED_FLAG
from kbench.engine.plan import Cell
from kbench.engine.transports.base import CpuSample, LatencySummary, RunResult
from kbench.model.codecs import batch_codec, topic_compression
from kbench.model.corpus import Corpus

__all__ = [
    "RATE_TOLERANCE",
    "RETRY_STATUSES",
    "STEAL_LIMIT_PCT",
    "SATURATED_FLAG",
    "Verdict",
    "judge",
    "rows_for",
    "failed_rows",
    "worst",
]

RATE_TOLERANCE = 0.02
STEAL_LIMIT_PCT = 1.0  # the method's default (seed 000); a plan may set max_steal_pct
GB = 1e9
#: Statuses of a run that the machine (steal) or the load (rate) caused: run again, within budget.
RETRY_STATUSES = frozenset({"INVALID", "REJECTED"})

#: Severity of statuses: the most severe one of a run wins.
_SEVERITY = {
    "OK": 0,
    "NA": 1,
    "REJECTED": 2,
    "FAILED_CPU_REGRESSED": 3,
    "FAILED_TOPIC_CONFIG": 3,
    "FAILED_LOSS": 3,
    "FAILED_RUN": 4,
    "INVALID": 5,
}


@dataclass
class Verdict:
    """A status and the reasons behind it (joined with '; ' in the CSV)."""

    status: str = "OK"
    reasons: list[str] = field(default_factory=list)

    def add(self, status: str, reason: str) -> None:
        if _SEVERITY[status] > _SEVERITY[self.status]:
            self.status = status
        self.reasons.append(reason)

    def merged(self, other: Verdict) -> Verdict:
        v = Verdict(self.status, list(self.reasons))
        if _SEVERITY[other.status] > _SEVERITY[v.status]:
            v.status = other.status
        v.reasons += [r for r in other.reasons if r not in v.reasons]
        return v

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)


def worst(statuses: Iterable[str]) -> str:
    """The most severe of ``statuses`` (OK when empty)."""
    return max(statuses, key=lambda s: _SEVERITY.get(s, 0), default="OK")


def judge(cell: Cell, res: RunResult, steal_limit_pct: float = STEAL_LIMIT_PCT) -> Verdict:
    """The run-level verdict that applies to every row of the run."""
    v = Verdict()
    if res.target_rate is not None and res.target_rate > 0:
        err = (res.achieved_rate - res.target_rate) / res.target_rate
        if abs(err) > RATE_TOLERANCE:
            v.add(
                "REJECTED",
                f"achieved {res.achieved_rate:.1f} msgs/s is {err * 100:+.2f}% off the target {res.target_rate:.1f} msgs/s (limit ±{RATE_TOLERANCE * 100:.0f}%)",
            )
    if res.steal_pct is not None and res.steal_pct > steal_limit_pct:
        v.add("INVALID", f"CPU steal {res.steal_pct:.2f}% > {steal_limit_pct:g}% during the run")
    elif res.steal_pct is None and not res.synthetic:
        v.add("NA", f"CPU steal not measurable during the run: cannot show it within {steal_limit_pct:g}%")
    if res.lost or res.duplicated:
        v.add("FAILED_LOSS", f"consumer saw {res.lost or 0} lost and {res.duplicated or 0} duplicated records")
    if res.delivery_errors:
        v.add("FAILED_LOSS", f"{res.delivery_errors} delivery errors")
    want = cell.topic_compression
    got = res.topic_compression_readback
    if got is not None and topic_compression(got) != topic_compression(want):
        v.add("FAILED_TOPIC_CONFIG", f"topic compression.type reads back '{got}', the plan says '{want}'")
    if res.synthetic:
        v.reasons.append("dry transport: timings and CPU are synthetic, not measurements")
    return v


def _rate_error_pct(res: RunResult) -> float | None:
    if res.target_rate:
        return (res.achieved_rate - res.target_rate) / res.target_rate * 100
    return None


def _base(cell: Cell, rep: int, res: RunResult | None, target: float | None, attempt: int = 1) -> dict[str, Any]:
    row = cell.params()
    row["rep"] = rep
    row["attempt"] = attempt
    row["target_rate_msgs"] = target
    if res is not None:
        row["achieved_rate_msgs"] = res.achieved_rate
        row["rate_error_pct"] = _rate_error_pct(res)
        row["messages"] = res.messages_acked
    return row


def _lat(prefix: str, lat: LatencySummary | None, which: tuple[str, ...]) -> dict[str, Any]:
    return {f"{prefix}_{w}": (getattr(lat, w) if lat is not None else None) for w in which}


_ALL = ("p50_us", "p95_us", "p99_us", "p999_us", "max_us")


def _ratio(res: RunResult) -> float | None:
    if res.stored_bytes and res.payload_bytes:
        return res.payload_bytes / res.stored_bytes
    return None


def _cpu_role(c: CpuSample) -> tuple[float | None, float | None, float | None, str | None, str]:
    """usr %, sys %, cpu seconds, and a status/reason for one role."""
    if (c.usr_s is None or c.sys_s is None) and c.total_s is not None:
        if c.regressed or c.total_s < 0:
            return None, None, None, "FAILED_CPU_REGRESSED", f"{c.role}: CPU counter went backwards ({c.total_s:.3f}s)"
        return None, None, c.total_s, None, ""
    if c.usr_s is None or c.sys_s is None:
        return None, None, None, "NA", f"{c.role}: CPU counters unreadable{(' (' + c.note + ')') if c.note else ''}"
    if c.regressed or c.usr_s < 0 or c.sys_s < 0:
        return (
            None,
            None,
            None,
            "FAILED_CPU_REGRESSED",
            f"{c.role}: CPU counter went backwards (usr {c.usr_s:.3f}s, sys {c.sys_s:.3f}s)",
        )
    wall = c.wall_s if c.wall_s > 0 else float("nan")
    return c.usr_s / wall * 100, c.sys_s / wall * 100, c.usr_s + c.sys_s, None, ""


def _sum_counter(samples: list[CpuSample], name: str) -> float | None:
    """A broker counter summed over brokers; None unless every broker reported it."""
    vals = [c.broker_counters.get(name) for c in samples]
    return sum(v for v in vals if v is not None) if vals and all(v is not None for v in vals) else None


def _flag_inferred(v: Verdict, res: RunResult) -> Verdict:
    """A stored codec that was inferred rather than read from stored batches is said in the reason."""
    if res.stored_source and "inferred" in res.stored_source:
        return v.merged(Verdict("OK", [f"stored codec inferred, not read (source: {res.stored_source})"]))
    return v


@dataclass(frozen=True)
class _Run:
    """One repetition's inputs to the rows of every experiment its cell feeds."""

    cell: Cell
    rep: int
    res: RunResult
    corpus: Corpus
    corpus_entropy: float
    replication_factor: int
    verdict: Verdict
    attempt: int = 1

    def base(self) -> dict[str, Any]:
        return _base(self.cell, self.rep, self.res, self.res.target_rate, self.attempt)


def _unmeasured(exp: str, x: _Run) -> Verdict:
    """The run's verdict, NA with the registry's reason for each needed field the transport left None."""
    missing = [why for f, why in experiments.get(exp).needs.items() if getattr(x.res, f) is None]
    return x.verdict.merged(Verdict("NA", missing)) if missing else x.verdict


def _finish(row: dict[str, Any], v: Verdict) -> dict[str, Any]:
    row["status"] = v.status
    row["reason"] = v.reason
    return row


def _loss(res: RunResult) -> dict[str, Any]:
    return {"lost": res.lost, "duplicated": res.duplicated, "delivery_errors": res.delivery_errors}


def _rows_a(x: _Run) -> list[dict[str, Any]]:
    res, row = x.res, x.base()
    row.update(_lat("corrected", res.latency_corrected, _ALL))
    row.update(_lat("service", res.latency_service, _ALL))
    row.update(_lat("delay", res.latency_delay, ("p99_us", "max_us")))
    row.update(_lat("e2e", res.latency_e2e, ("p50_us", "p99_us", "max_us")))
    row.update({f"phase_{k}": res.latency_phases.get(k) for k in ("queue_p50_us", "compress_p50_us", "request_p50_us")})
    row["out_of_range"] = sum(
        h.out_of_range for h in (res.latency_corrected, res.latency_service, res.latency_e2e) if h is not None
    )
    row.update(_loss(res))
    return [_finish(row, _unmeasured("A", x))]


def _rows_b(x: _Run) -> list[dict[str, Any]]:
    res, row = x.res, x.base()
    el = res.elapsed_s if res.elapsed_s > 0 else float("nan")
    row["payload_mb_per_s"] = res.payload_bytes / el / 1e6
    row["producer_wire_mb_per_s"] = None if res.producer_wire_bytes is None else res.producer_wire_bytes / el / 1e6
    row.update(_lat("service", res.latency_service, ("p50_us", "p99_us")))
    row["latency_flag"] = SATURATED_FLAG
    row.update(_loss(res))
    return [_finish(row, x.verdict)]


def _rows_c(x: _Run) -> list[dict[str, Any]]:
    res, row = x.res, x.base()
    row.update(
        payload_bytes=res.payload_bytes,
        stored_bytes=res.stored_bytes,
        ratio=_ratio(res),
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
    return [_finish(row, _flag_inferred(_unmeasured("C", x), res))]


def _window_gb(c: CpuSample) -> float | None:
    """GB of payload in the role's own CPU window (the one denominator of CPU-s/GB)."""
    return None if c.window_payload_bytes is None else c.window_payload_bytes / GB


def _per_gb(cpu_s: float | None, gb: float | None) -> float | None:
    return (cpu_s / gb) if (cpu_s is not None and gb is not None and gb > 0) else None


def _rows_d(x: _Run) -> list[dict[str, Any]]:
    res = x.res
    rows = []
    consumer_wire = (res.consumer_wire_bytes, "consumer statistics: bytes in")
    if res.consumer_wire_bytes is None and res.stored_bytes is not None and res.consumed:
        consumer_wire = (res.stored_bytes, "stored bytes fetched once (consumer statistics not exported)")
    wire = {"producer": (res.producer_wire_bytes, "producer statistics: bytes out"), "consumer": consumer_wire}
    for c in res.cpu:
        r = x.base()
        usr, sys_, cpu_s, st, why = _cpu_role(c)
        gb = _window_gb(c)
        r.update(role=c.role, pid=c.pid, usr_pct=usr, sys_pct=sys_, cpu_s=cpu_s, payload_gb=gb, steal_pct=res.steal_pct)
        r.update(
            cpu_source=c.source or ("kbench worker process (/proc/self/stat)" if c.pid is None else ""),
            broker_bytes_in=c.broker_counters.get("bytes_in"),
            broker_bytes_out=c.broker_counters.get("bytes_out"),
            produce_conversions=c.broker_counters.get("produce_conversions"),
        )
        r["cpu_s_per_gb"] = _per_gb(cpu_s, gb)
        if st is None and cpu_s is not None and gb is None:
            st, why = "NA", f"{c.role}: payload of its CPU window not measured"
        # producer: the load generator's threads apart from the client library's (same window)
        split = cpu_s is not None and c.loadgen_s is not None and c.client_s is not None
        for part, val in (("loadgen", c.loadgen_s), ("client", c.client_s)):
            r[f"{part}_cpu_s"] = val if split else None
            r[f"{part}_cpu_s_per_gb"] = _per_gb(val, gb) if split else None
        if c.role.startswith("broker"):
            repl = None if res.stored_bytes is None else res.stored_bytes * max(0, x.replication_factor - 1)
            r.update(wire_bytes=repl, wire_source=f"replication: stored bytes x (RF-1), RF={x.replication_factor}")
        else:
            wb, src = wire.get(c.role, (None, ""))
            r.update(wire_bytes=wb, wire_source=src)
        v = x.verdict if st is None else x.verdict.merged(Verdict(st, [why]))
        rows.append(_finish(r, v))
    if not rows:
        r = x.base()
        r.update(role="all")
        rows.append(_finish(r, x.verdict.merged(Verdict("NA", [experiments.get("D").needs["cpu"]]))))
    return rows


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


def _rows_e(x: _Run) -> list[dict[str, Any]]:
    res, row = x.res, x.base()
    bf, cf = res.batch_fill, res.client_fill
    row.update({col: (getattr(bf, f) if bf else None) for col, f in _FILL.items()})
    row.update({col: (getattr(cf, f) if cf else None) for col, f in _CLIENT_FILL.items()})
    row.update(
        payload_bytes=res.payload_bytes,
        stored_bytes=res.stored_bytes,
        ratio=_ratio(res),
        stored_source=res.stored_source,
    )
    return [_finish(row, x.verdict)]


def _rows_f(x: _Run) -> list[dict[str, Any]]:
    res, row = x.res, x.base()
    brokers = [c for c in res.cpu if c.role.startswith("broker")]
    usr = sys_ = cpu = per_gb = None
    v = x.verdict
    if brokers:
        parts = [_cpu_role(c) for c in brokers]
        bad = [p for p in parts if p[3] is not None]
        if bad:
            v = v.merged(Verdict(bad[0][3] or "NA", [p[4] for p in bad]))
        else:
            split = all(p[0] is not None and p[1] is not None for p in parts)  # metrics give usr+sys only
            usr = sum(p[0] or 0 for p in parts) if split else None
            sys_ = sum(p[1] or 0 for p in parts) if split else None
            cpu = sum(p[2] or 0 for p in parts)
            # every broker's CPU over the (one) broker window, per GB stored in that window
            per_gb = _per_gb(cpu, _window_gb(brokers[0]))
            if per_gb is None:
                v = v.merged(Verdict("NA", ["broker: payload of its CPU window not measured"]))
    else:
        v = v.merged(Verdict("NA", [experiments.get("F").needs["cpu"]]))
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
        broker_cpu_s_per_gb=per_gb,
        payload_bytes=res.payload_bytes,
        stored_bytes=res.stored_bytes,
        stored_source=res.stored_source,
        produce_conversions=_sum_counter(brokers, "produce_conversions"),
    )
    return [_finish(row, _flag_inferred(v, res))]


#: Per experiment: the rows one repetition contributes to its CSV.
_ROWS: dict[str, Callable[[_Run], list[dict[str, Any]]]] = {
    "A": _rows_a,
    "B": _rows_b,
    "C": _rows_c,
    "D": _rows_d,
    "E": _rows_e,
    "F": _rows_f,
}


def rows_for(
    cell: Cell,
    rep: int,
    res: RunResult,
    corpus: Corpus,
    corpus_entropy: float,
    replication_factor: int,
    steal_limit_pct: float = STEAL_LIMIT_PCT,
    attempt: int = 1,
) -> dict[str, list[dict[str, Any]]]:
    """The rows this run (attempt ``attempt`` of repetition ``rep``) contributes to each
    experiment CSV its cell feeds."""
    x = _Run(cell, rep, res, corpus, corpus_entropy, replication_factor, judge(cell, res, steal_limit_pct), attempt)
    return {exp: _ROWS[exp](x) for exp in cell.experiments}


def failed_rows(
    cell: Cell, rep: int, target: float | None, reason: str, attempt: int = 1
) -> dict[str, list[dict[str, Any]]]:
    """Rows for a run that could not complete (status FAILED_RUN), one per experiment."""
    out: dict[str, list[dict[str, Any]]] = {}
    for exp in cell.experiments:
        row = _base(cell, rep, None, target, attempt)
        if exp == "D":
            row["role"] = "all"
        row["status"] = "FAILED_RUN"
        row["reason"] = reason
        out[exp] = [row]
    return out
