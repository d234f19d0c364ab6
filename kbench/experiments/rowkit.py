"""Helpers the experiments' row rules share: the cell columns of a row, latency summaries,
ratios, one role's CPU, the payload denominator of CPU-s/GB, and a row's status."""

from __future__ import annotations

from typing import Any

from kbench.engine.status import Status, Verdict
from kbench.engine.transports.base import CpuSample, LatencySummary, RunResult
from kbench.experiments.spec import Experiment, RowInput, row_columns

__all__ = [
    "GB",
    "LATENCY_ALL",
    "base",
    "cpu_role",
    "finish",
    "flag_inferred",
    "lat",
    "loss",
    "per_gb",
    "ratio",
    "row_base",
    "sum_counter",
    "unmeasured",
    "window_gb",
]

GB = 1e9


#: The cell columns of a row (kbench.experiments.spec: the engine writes failed rows with them too).
base = row_columns


def lat(prefix: str, lat: LatencySummary | None, which: tuple[str, ...]) -> dict[str, Any]:
    return {f"{prefix}_{w}": (getattr(lat, w) if lat is not None else None) for w in which}


LATENCY_ALL = ("p50_us", "p95_us", "p99_us", "p999_us", "max_us")


def ratio(res: RunResult) -> float | None:
    if res.stored_bytes and res.payload_bytes:
        return res.payload_bytes / res.stored_bytes
    return None


def cpu_role(c: CpuSample) -> tuple[float | None, float | None, float | None, str | None, str]:
    """usr %, sys %, cpu seconds, and a status/reason for one role."""
    if (c.usr_s is None or c.sys_s is None) and c.total_s is not None:
        if c.regressed or c.total_s < 0:
            return (
                None,
                None,
                None,
                Status.FAILED_CPU_REGRESSED,
                f"{c.role}: CPU counter went backwards ({c.total_s:.3f}s)",
            )
        return None, None, c.total_s, None, ""
    if c.usr_s is None or c.sys_s is None:
        return (
            None,
            None,
            None,
            Status.NA,
            f"{c.role}: CPU counters unreadable{(' (' + c.note + ')') if c.note else ''}",
        )
    if c.regressed or c.usr_s < 0 or c.sys_s < 0:
        return (
            None,
            None,
            None,
            Status.FAILED_CPU_REGRESSED,
            f"{c.role}: CPU counter went backwards (usr {c.usr_s:.3f}s, sys {c.sys_s:.3f}s)",
        )
    wall = c.wall_s if c.wall_s > 0 else float("nan")
    return c.usr_s / wall * 100, c.sys_s / wall * 100, c.usr_s + c.sys_s, None, ""


def sum_counter(samples: list[CpuSample], name: str) -> float | None:
    """A broker counter summed over brokers; None unless every broker reported it."""
    vals = [c.broker_counters.get(name) for c in samples]
    return sum(v for v in vals if v is not None) if vals and all(v is not None for v in vals) else None


def flag_inferred(v: Verdict, res: RunResult) -> Verdict:
    """A stored codec that was inferred rather than read from stored batches is said in the reason."""
    if res.stored_source and "inferred" in res.stored_source:
        return v.merged(Verdict(Status.OK, [f"stored codec inferred, not read (source: {res.stored_source})"]))
    return v


def finish(row: dict[str, Any], v: Verdict) -> dict[str, Any]:
    row["status"] = v.status
    row["reason"] = v.reason
    return row


def loss(res: RunResult) -> dict[str, Any]:
    return {"lost": res.lost, "duplicated": res.duplicated, "delivery_errors": res.delivery_errors}


def window_gb(c: CpuSample) -> float | None:
    """GB of payload in the role's own CPU window (the one denominator of CPU-s/GB)."""
    return None if c.window_payload_bytes is None else c.window_payload_bytes / GB


def per_gb(cpu_s: float | None, gb: float | None) -> float | None:
    return (cpu_s / gb) if (cpu_s is not None and gb is not None and gb > 0) else None


def row_base(x: RowInput) -> dict[str, Any]:
    """The cell columns of one repetition's row."""
    return base(x.cell, x.rep, x.res, x.res.target_rate, x.attempt)


def unmeasured(exp: Experiment, x: RowInput) -> Verdict:
    """The run's verdict, NA with the registry's reason for each needed field the transport left None."""
    missing = [why for f, why in exp.needs.items() if getattr(x.res, f) is None]
    return x.verdict.merged(Verdict(Status.NA, missing)) if missing else x.verdict
