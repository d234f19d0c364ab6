"""The time series of a repetition: one row per second per role (``series.csv``), the drivers'
interval histograms as an HdrHistogram interval log (``histograms/<cell>-r<rep>.hlog``), and the
steady-state and drift rules read from them (docs/csv-schema.md, docs/methodology.md §9).

Sources: the drivers' intervals (docs/drivers.md section 4.4: messages, bytes, the interval
histogram) for the producer and the consumer; the runner's per-second ``/proc`` sampler
(:mod:`kbench.engine.transports.persecond`) for every role's CPU and, on the testbed, each host's
NIC bytes.  Both cut time at whole seconds of CLOCK_MONOTONIC, so a second's row of one role
lines up with the same second of every other role on the host.

Rules (defined here once; the report and the runner's log use them):

- an interval is *in the window* when it is a whole interval that starts at or after the
  producer's first due time + ``steady_skip_s`` and ends by its last send;
- an in-window interval *breaks steady state* when it carried no message (a stall), when its rate
  is more than ``drift_rate_pct`` off the repetition's median interval rate, or when its p99 is more
  than ``drift_p99_pct`` above the median interval p99 (its ``breaks`` column says which);
- a repetition *drifts* when the median rate (or p99) of the second half of its in-window
  intervals differs from the first half's by more than the bound, in % of the whole window's
  median: :func:`drift`.
"""

from __future__ import annotations

import base64
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kbench.engine.transports.persecond import SecondSample
from kbench.model import hlog

__all__ = [
    "COLUMNS",
    "DEFAULT_DRIFT_P99_PCT",
    "DEFAULT_DRIFT_RATE_PCT",
    "Bounds",
    "Drift",
    "assemble_rows",
    "drift",
    "hlog_of",
    "mark_breaks",
]

#: The columns of series.csv, in order (docs/csv-schema.md).
COLUMNS = (
    "cell_id",
    "rep",
    "attempt",
    "role",
    "second",
    "start_s",
    "interval_s",
    "in_window",
    "messages",
    "rate",
    "bytes",
    "acked",
    "failed",
    "latency",
    "lat_count",
    "p50_us",
    "p99_us",
    "p999_us",
    "max_us",
    "cpu_usr_s",
    "cpu_sys_s",
    "cpu_pct",
    "nic_tx_bytes",
    "nic_rx_bytes",
    "source",
    "breaks",
)

DEFAULT_DRIFT_RATE_PCT = 10.0
DEFAULT_DRIFT_P99_PCT = 50.0
#: Fewer in-window intervals than this: too short to judge drift.
MIN_DRIFT_INTERVALS = 4
NS = 1_000_000_000
#: The note of a driver role whose driver gave no intervals (another client's driver that does
#: not implement docs/drivers.md section 4.4).
NO_INTERVALS = "driver gave none"


@dataclass(frozen=True)
class Bounds:
    """The plan's drift bounds, in %."""

    rate_pct: float = DEFAULT_DRIFT_RATE_PCT
    p99_pct: float = DEFAULT_DRIFT_P99_PCT


def _summary(h: Mapping[str, Any] | None) -> dict[str, Any]:
    if not h:
        return {"lat_count": 0, "p50_us": None, "p99_us": None, "p999_us": None, "max_us": None}
    return {
        "lat_count": int(h.get("count") or 0),
        "p50_us": h.get("p50_us"),
        "p99_us": h.get("p99_us"),
        "p999_us": h.get("p999_us"),
        "max_us": h.get("max_us"),
    }


def _cpu_by_second(samples: Sequence[SecondSample]) -> dict[tuple[str, int], tuple[float, float, float] | None]:
    """(role, second) → (usr_s, sys_s, span_s) between consecutive samples (None: unreadable)."""
    out: dict[tuple[str, int], tuple[float, float, float] | None] = {}
    for a, b in zip(samples, samples[1:]):
        sec, span = a.t_ns // NS, (b.t_ns - a.t_ns) / 1e9
        if span <= 0:
            continue
        for role in a.cpu.keys() | b.cpu.keys():
            ca, cb = a.cpu.get(role), b.cpu.get(role)
            out[(role, sec)] = None if ca is None or cb is None else (cb[0] - ca[0], cb[1] - ca[1], span)
    return out


def _nic_by_second(samples: Sequence[SecondSample]) -> dict[tuple[str, int], tuple[int, int]]:
    out: dict[tuple[str, int], tuple[int, int]] = {}
    for a, b in zip(samples, samples[1:]):
        for host, (tx, rx) in b.nic.items():
            if host in a.nic:
                out[(host, a.t_ns // NS)] = (tx - a.nic[host][0], rx - a.nic[host][1])
    return out


def assemble_rows(
    pres: Mapping[str, Any],
    cres: Mapping[str, Any] | None,
    samples: Sequence[SecondSample],
    steady_skip_s: float,
) -> list[dict[str, Any]]:
    """The series rows of one repetition (without cell_id/rep/attempt and ``breaks``): one per
    second per role, from the drivers' RESULTs and the per-second samples."""
    t0 = int(pres.get("t0_ns") or pres.get("first_send_ns") or 0)
    win_lo = t0 + int(steady_skip_s * NS)
    win_hi = int(pres.get("last_send_ns") or 0)
    origin = t0 // NS
    cpu = _cpu_by_second(samples)
    nic = _nic_by_second(samples)
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, int]] = set()

    def extra(role: str, sec: int, span_s: float) -> dict[str, Any]:
        c = cpu.get((role, sec))
        n = nic.get((role, sec))
        return {
            "cpu_usr_s": c[0] if c else None,
            "cpu_sys_s": c[1] if c else None,
            "cpu_pct": 100.0 * (c[0] + c[1]) / c[2] if c and c[2] > 0 else None,
            "nic_tx_bytes": n[0] if n else None,
            "nic_rx_bytes": n[1] if n else None,
        }

    for role, res in (("producer", pres), ("consumer", cres)):
        if res is None:
            continue
        ivs = [iv for iv in (res.get("intervals") or []) if not iv.get("truncated")]
        kind = str(res.get("intervals_latency") or "")
        for iv in ivs:
            s, e = int(iv["start_mono_ns"]), int(iv["end_mono_ns"])
            span = (e - s) / 1e9
            sec = s // NS
            seen.add((role, sec))
            full = (e - s) >= NS * 0.999
            rows.append(
                {
                    "role": role,
                    "second": sec - origin,
                    "start_s": (s - t0) / 1e9,
                    "interval_s": span,
                    "in_window": int(full and s >= win_lo and e <= win_hi),
                    "messages": int(iv["count"]),
                    "rate": int(iv["count"]) / span if span > 0 else None,
                    "bytes": int(iv["bytes"]),
                    "acked": int(iv["acked"]) if role == "producer" else None,
                    "failed": int(iv["failed"]) if role == "producer" else None,
                    "latency": kind,
                    **_summary(iv.get("latency")),
                    **extra(role, sec, span),
                    "source": "driver" + ("; truncated (out of memory)" if len(ivs) < len(res["intervals"]) else ""),
                }
            )
    sampled = sorted({k for k in cpu} | {k for k in nic})
    starts = {a.t_ns // NS: (a.t_ns, b.t_ns) for a, b in zip(samples, samples[1:])}
    for role, sec in sampled:
        if (role, sec) in seen:
            continue
        s, e = starts[sec]
        driver_role = role in ("producer", "consumer")
        rows.append(
            {
                "role": role,
                "second": sec - origin,
                "start_s": (s - t0) / 1e9,
                "interval_s": (e - s) / 1e9,
                "in_window": int(s >= win_lo and e <= win_hi and (e - s) >= NS * 0.999),
                "messages": None,
                "rate": None,
                "bytes": None,
                "acked": None,
                "failed": None,
                "latency": "",
                **_summary(None),
                **extra(role, sec, (e - s) / 1e9),
                "source": NO_INTERVALS if driver_role and not _has_intervals(pres, cres, role) else "runner /proc",
            }
        )
    rows.sort(key=lambda r: (r["role"], r["second"]))
    return rows


def _has_intervals(pres: Mapping[str, Any], cres: Mapping[str, Any] | None, role: str) -> bool:
    res = pres if role == "producer" else cres
    return bool(res and res.get("intervals"))


def hlog_of(pres: Mapping[str, Any], cres: Mapping[str, Any] | None, comment: str = "") -> str:
    """The drivers' interval histograms as one HdrHistogram interval log (tags ``producer-corrected``
    / ``producer-service`` and ``consumer-e2e``); '' when no driver gave intervals."""
    lines: list[hlog.LogLine] = []
    starts: list[int] = []
    for _role, res in (("producer", pres), ("consumer", cres)):
        for iv in (res or {}).get("intervals") or []:
            if not iv.get("truncated") and iv.get("latency") and iv["latency"].get("encoded"):
                starts.append(int(iv["start_wall_ns"]))
    if not starts:
        return ""
    base = min(starts)
    for role, res in (("producer", pres), ("consumer", cres)):
        tag = f"{role}-{(res or {}).get('intervals_latency') or 'latency'}"
        for iv in (res or {}).get("intervals") or []:
            if iv.get("truncated") or not iv.get("latency") or not iv["latency"].get("encoded"):
                continue
            sparse = hlog.parse_kbh1(base64.b64decode(iv["latency"]["encoded"]))
            length = (int(iv["end_mono_ns"]) - int(iv["start_mono_ns"])) / 1e9
            lines.append(hlog.LogLine(tag, (int(iv["start_wall_ns"]) - base) / 1e9, length, sparse))
    lines.sort(key=lambda ln: (ln.start_s, ln.tag))
    return hlog.log_text(lines, base / 1e9, comment)


def _num(v: Any) -> float | None:
    if v is None or v == "" or v == "NA":
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _is_judged(r: Mapping[str, Any], role: str) -> bool:
    """A row of ``role`` the steady-state and drift rules judge: in the window, from the driver."""
    return (
        r.get("role") == role
        and str(r.get("in_window")) == "1"
        and str(r.get("source", "")).startswith("driver")
        and _num(r.get("rate")) is not None
    )


def mark_breaks(rows: Sequence[dict[str, Any]], bounds: Bounds) -> list[dict[str, Any]]:
    """``rows`` (one repetition's) with ``breaks`` filled: the reason an in-window interval of the
    producer or consumer breaks steady state, '' when it does not (or is not judged)."""
    for r in rows:
        r["breaks"] = ""
    for role in ("producer", "consumer"):
        judged = [r for r in rows if _is_judged(r, role)]
        rates = [_num(r["rate"]) or 0.0 for r in judged]
        p99s = [p for r in judged if (p := _num(r.get("p99_us"))) is not None]
        if not judged:
            continue
        m_rate = statistics.median(rates)
        m_p99 = statistics.median(p99s) if p99s else None
        for r in judged:
            why = []
            rate = _num(r["rate"]) or 0.0
            if rate == 0:
                why.append("stall: no messages")
            elif m_rate > 0 and abs(rate - m_rate) / m_rate * 100 > bounds.rate_pct:
                why.append(f"rate {100 * (rate - m_rate) / m_rate:+.0f} % of median")
            p99 = _num(r.get("p99_us"))
            if p99 is not None and m_p99 and p99 > m_p99 * (1 + bounds.p99_pct / 100):
                why.append(f"p99 ×{p99 / m_p99:.1f} median")
            r["breaks"] = "; ".join(why)
    return list(rows)


@dataclass(frozen=True)
class Drift:
    """One repetition's drift over its window (producer role): second half − first half, in %
    of the window's median; None when too short to judge."""

    rate_pct: float | None
    p99_pct: float | None
    intervals: int
    bounds: Bounds

    @property
    def flagged(self) -> bool:
        return (self.rate_pct is not None and abs(self.rate_pct) > self.bounds.rate_pct) or (
            self.p99_pct is not None and abs(self.p99_pct) > self.bounds.p99_pct
        )

    def describe(self) -> str:
        """One line: what drifted and by how much against which bound ('' when nothing did)."""
        if self.intervals < MIN_DRIFT_INTERVALS:
            return ""
        parts = []
        if self.rate_pct is not None and abs(self.rate_pct) > self.bounds.rate_pct:
            parts.append(f"rate drifted {self.rate_pct:+.1f} % (bound ±{self.bounds.rate_pct:g} %)")
        if self.p99_pct is not None and abs(self.p99_pct) > self.bounds.p99_pct:
            parts.append(f"p99 drifted {self.p99_pct:+.1f} % (bound ±{self.bounds.p99_pct:g} %)")
        return "DRIFT: " + ", ".join(parts) + f" over {self.intervals} in-window seconds" if parts else ""


def _half_drift(values: Sequence[float]) -> float | None:
    if len(values) < MIN_DRIFT_INTERVALS:
        return None
    mid = len(values) // 2
    whole = statistics.median(values)
    if whole == 0:
        return None
    return 100.0 * (statistics.median(values[mid:]) - statistics.median(values[:mid])) / whole


def drift(rows: Iterable[Mapping[str, Any]], bounds: Bounds) -> Drift:
    """The drift of one repetition's producer rate and p99 (rows of that repetition)."""
    judged = sorted((r for r in rows if _is_judged(r, "producer")), key=lambda r: float(r["second"]))
    rates = [_num(r["rate"]) or 0.0 for r in judged]
    p99s = [p for r in judged if (p := _num(r.get("p99_us"))) is not None]
    return Drift(_half_drift(rates), _half_drift(p99s), len(judged), bounds)
