"""Exact merge of several drivers' results (one cell's producers or consumers on many hosts).

Each driver reports what :mod:`kbench.kafka.worker` prints: counters, and its latency
histograms losslessly as ``KBH1`` (``Histogram.encode()``, base64).  Merging adds the histograms
bucket by bucket (``Histogram.merge``: counts, underflow, overflow, sum, min, max), so the merged
percentiles are those of all samples together, never an average of percentiles.  Counters and
rates are summed; the producing window is the longest.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kbench.kafka.drivers import Histogram
from kbench.model.stats import histogram_us

__all__ = ["group_counts", "merge_consumers", "merge_histograms", "merge_producers", "split_count"]

_PRODUCER_SUMS = (
    "sent",
    "delivered",
    "failed",
    "undelivered",
    "bytes",
    "achieved_rate",
    "delivered_rate",
    "sampled",
)
_CONSUMER_SUMS = (
    "records",
    "bytes",
    "unique",
    "duplicates",
    "lost",
    "errors",
    "sampled",
    "samples_missing",
    "stored_records",
)


def merge_histograms(encoded: Iterable[str | None]) -> Histogram | None:
    """One histogram holding every sample of the given base64 ``KBH1`` encodings (None: none given)."""
    out: Histogram | None = None
    for e in encoded:
        if not e:
            continue
        h = Histogram.decode(base64.b64decode(e))
        if out is None:
            out = h
        else:
            out.merge(h)
    return out


def _hist_entry(parts: Sequence[Mapping[str, Any]], name: str) -> dict[str, Any] | None:
    h = merge_histograms((p.get(name) or {}).get("encoded") for p in parts)
    if h is None:
        return None
    out = histogram_us(h)
    assert out is not None
    out["encoded"] = base64.b64encode(h.encode()).decode()
    return out


def _sum_maps(maps: Iterable[Mapping[str, int] | None]) -> dict[str, int]:
    out: dict[str, int] = {}
    for m in maps:
        for k, v in (m or {}).items():
            out[k] = out.get(k, 0) + int(v)
    return out


def merge_producers(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Several producer results as one, in the worker's own shape: counters and rates summed,
    ``send_seconds`` the longest, histograms merged exactly."""
    if not parts:
        raise ValueError("no producer results to merge")
    out: dict[str, Any] = {k: sum(p.get(k) or 0 for p in parts) for k in _PRODUCER_SUMS}
    out["send_seconds"] = max(float(p.get("send_seconds") or 0.0) for p in parts)
    out["delivery_errors"] = _sum_maps(p.get("delivery_errors") for p in parts)
    out["client_errors"] = _sum_maps(p.get("client_errors") for p in parts)
    for name in ("service", "delay", "corrected"):
        out[name] = _hist_entry(parts, name)
    return out


def _union(runs: Iterable[Sequence[int]], lo: int, hi: int) -> int:
    """How many offsets of [lo, hi) the [a, b) runs cover together."""
    n, edge = 0, lo
    for a, b in sorted((max(int(a), lo), min(int(b), hi)) for a, b in runs):
        if b <= edge:
            continue
        n += b - max(a, edge)
        edge = b
    return n


def group_counts(members: Sequence[Sequence[Mapping[str, Any]]], expected: int = 0) -> dict[str, Any]:
    """A consumer group's counts from every member's ``parts`` (drivers.ConsumerResult.parts),
    exact per partition: the offsets read by any member (the union of their runs) against the
    partition's stored range [start, end); lost = stored - read, duplicates = records - read (a record
    read twice, by one member or by two after a rebalance).  With ``expected`` (the producer's
    count), lost is at least expected - unique, as for a lone consumer."""
    by_p: dict[int, dict[str, Any]] = {}
    for parts in members:
        for p in parts:
            e = by_p.setdefault(
                int(p["partition"]), {"start": int(p["start"]), "end": int(p["end"]), "records": 0, "runs": []}
            )
            e["start"] = min(e["start"], int(p["start"]))
            e["end"] = max(e["end"], int(p["end"]))
            e["records"] += int(p["records"])
            e["runs"].extend(p["runs"])
    rows = []
    for pid, e in sorted(by_p.items()):
        stored = max(0, e["end"] - e["start"]) if e["end"] >= 0 else None
        read = _union(e["runs"], e["start"], e["end"] if e["end"] >= 0 else 1 << 62)
        rows.append(
            {
                "partition": pid,
                "stored": stored,
                "records": e["records"],
                "read": read,
                "duplicates": e["records"] - read,
                "lost": None if stored is None else stored - read,
            }
        )
    unique = sum(r["read"] for r in rows)
    lost = sum(r["lost"] or 0 for r in rows)
    stored_all = None if any(r["stored"] is None for r in rows) else sum(r["stored"] for r in rows)
    return {
        "records": sum(r["records"] for r in rows),
        "unique": unique,
        "duplicates": sum(r["duplicates"] for r in rows),
        "lost": max(lost, expected - unique) if expected else lost,
        "stored_records": -1 if stored_all is None else stored_all,
        "partitions": rows,
    }


def merge_consumers(parts: Sequence[Mapping[str, Any]], expected: int = 0) -> dict[str, Any]:
    """Several consumer results as one: e2e histograms merged exactly.  Fan-out (every consumer reads
    every record): lost and duplicated are the sums of each consumer's own counts.  A consumer group
    (the results carry ``parts``): unique, duplicates, lost and stored from :func:`group_counts` over
    every member, per partition."""
    if not parts:
        raise ValueError("no consumer results to merge")
    out: dict[str, Any] = {}
    for k in _CONSUMER_SUMS:
        vals = [p.get(k) for p in parts]
        out[k] = _sum_maps(vals) if any(isinstance(v, dict) for v in vals) else sum(int(v or 0) for v in vals)
    if any(p.get("parts") is not None for p in parts):
        g = group_counts([p.get("parts") or [] for p in parts], expected)
        out.update({k: g[k] for k in ("unique", "duplicates", "lost", "stored_records")})
        out["group_partitions"] = g["partitions"]
    out["timed_out"] = any(bool(p.get("timed_out")) for p in parts)
    out["e2e"] = _hist_entry(parts, "e2e")
    if any(p.get("intervals") is not None for p in parts):
        out["intervals"] = merge_intervals([p.get("intervals") or [] for p in parts])
    return out


def merge_intervals(
    members: Sequence[Sequence[Mapping[str, Any]]], width_ns: int = 1_000_000_000
) -> list[dict[str, Any]]:
    """Several drivers' time series (docs/drivers.md section 4.4) as one: the intervals that share
    a slot [k * width, (k + 1) * width) of the host's monotonic clock summed, their latency
    histograms merged exactly; a member's truncated series marks the merged one truncated."""
    slots: dict[int, list[Mapping[str, Any]]] = {}
    truncated = False
    for ivs in members:
        for iv in ivs:
            if iv.get("truncated"):
                truncated = True
            else:
                slots.setdefault(int(iv["start_mono_ns"]) // width_ns, []).append(iv)
    out: list[dict[str, Any]] = []
    for k in sorted(slots):
        group = slots[k]
        first = min(group, key=lambda iv: int(iv["start_mono_ns"]))
        merged: dict[str, Any] = {
            "start_mono_ns": int(first["start_mono_ns"]),
            "end_mono_ns": max(int(iv["end_mono_ns"]) for iv in group),
            "start_wall_ns": int(first["start_wall_ns"]),
        }
        for key in ("count", "acked", "failed", "bytes"):
            merged[key] = sum(int(iv.get(key) or 0) for iv in group)
        merged["latency"] = _hist_entry(group, "latency")
        out.append(merged)
    if truncated:
        out.append({"truncated": True})
    return out


def split_count(total: int, parts: int) -> list[tuple[int, int]]:
    """``total`` sequence numbers cut into ``parts`` disjoint ranges: (seq_base, count) each."""
    if parts < 1:
        raise ValueError("parts must be >= 1")
    out, base = [], 0
    for i in range(parts):
        n = total // parts + (1 if i < total % parts else 0)
        out.append((base, n))
        base += n
    return out
