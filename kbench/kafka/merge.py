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

__all__ = ["merge_consumers", "merge_histograms", "merge_producers", "split_count"]

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


def merge_consumers(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Several consumer results as one: every consumer reads every record (fan-out), so lost and
    duplicated are the sums of each consumer's own counts; e2e histograms merged exactly."""
    if not parts:
        raise ValueError("no consumer results to merge")
    out: dict[str, Any] = {}
    for k in _CONSUMER_SUMS:
        vals = [p.get(k) for p in parts]
        out[k] = _sum_maps(vals) if any(isinstance(v, dict) for v in vals) else sum(int(v or 0) for v in vals)
    out["timed_out"] = any(bool(p.get("timed_out")) for p in parts)
    out["e2e"] = _hist_entry(parts, "e2e")
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
