"""Where producer latency goes, from librdkafka's statistics (``statistics.interval.ms`` JSON).

librdkafka keeps rolling window statistics (reset at every emit) per broker: ``int_latency`` (a
message's wait in the producer's queue, from ``produce()`` until it is written into a message
set: the ``linger.ms`` / batch-fill wait plus any queueing), ``outbuf_latency`` (a request's wait
in the transmit queue until it is written to the socket) and ``rtt`` (request sent to response
received: network plus the broker's handling, ``acks`` included); per topic ``batchsize`` and
``batchcnt``.  Compression is not among them: it happens between the message-set write and the
transmit queue, so its time is measured apart (:func:`kbench.model.microbench.batch_compress_us`).

The per-phase figure is the median over the intervals' p50s, each weighted by its sample count
(librdkafka does not export the histograms themselves): an approximation of the run's median.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["LatencyPhases", "batch_fill", "fetch_stats", "last_stats", "latency_phases", "weighted_median"]


@dataclass(frozen=True)
class LatencyPhases:
    """Medians in microseconds; ``None`` when the statistics had no sample of a phase."""

    queue_p50_us: float | None  # int_latency: linger / batch-fill wait and producer queueing
    outbuf_p50_us: float | None  # outbuf_latency: transmit queue
    rtt_p50_us: float | None  # rtt: request round trip (network + broker + acks)
    batch_records_p50: float | None  # batchcnt
    batch_bytes_p50: float | None  # batchsize (bytes as sent)
    intervals: int

    @property
    def request_p50_us(self) -> float | None:
        """Transmit queue plus round trip: the request's part of the latency."""
        if self.rtt_p50_us is None:
            return None
        return self.rtt_p50_us + (self.outbuf_p50_us or 0.0)


def weighted_median(pairs: Iterable[tuple[float, float]]) -> float | None:
    """Median of values weighted by counts: the value at half the total weight."""
    ps = sorted((v, w) for v, w in pairs if w > 0)
    total = sum(w for _, w in ps)
    if not ps:
        return None
    acc = 0.0
    for v, w in ps:
        acc += w
        if acc >= total / 2:
            return float(v)
    return float(ps[-1][0])


def _window(d: Mapping[str, Any] | None) -> tuple[float, float] | None:
    if not d or not d.get("cnt"):
        return None
    return float(d["p50"]), float(d["cnt"])


def phases_from(stats: Iterable[Mapping[str, Any]], topic: str) -> LatencyPhases | None:
    """The phases from a sequence of statistics objects (one per interval)."""
    q: list[tuple[float, float]] = []
    o: list[tuple[float, float]] = []
    r: list[tuple[float, float]] = []
    bc: list[tuple[float, float]] = []
    bs: list[tuple[float, float]] = []
    n = 0
    for st in stats:
        n += 1
        for b in st.get("brokers", {}).values():
            if not isinstance(b, Mapping) or b.get("nodeid", -1) < 0:  # bootstrap placeholders
                continue
            for key, acc in (("int_latency", q), ("outbuf_latency", o), ("rtt", r)):
                w = _window(b.get(key))
                if w:
                    acc.append(w)
        t = st.get("topics", {}).get(topic)
        if t:
            for key, acc in (("batchcnt", bc), ("batchsize", bs)):
                w = _window(t.get(key))
                if w:
                    acc.append(w)
    if not n or not (q or r):
        return None
    return LatencyPhases(
        weighted_median(q), weighted_median(o), weighted_median(r), weighted_median(bc), weighted_median(bs), n
    )


def latency_phases(path: Path, topic: str) -> LatencyPhases | None:
    """The phases from a JSON-lines statistics file (one object per line); unreadable lines skipped."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    objs = []
    for line in lines:
        try:
            objs.append(json.loads(line))
        except ValueError:
            continue
    return phases_from(objs, topic)


def last_stats(path: Path) -> dict[str, Any] | None:
    """The last readable JSON object of a statistics file (librdkafka's totals at the end of a run)."""
    try:
        lines = [x for x in path.read_text().splitlines() if x.strip()]
    except OSError:
        return None
    for line in reversed(lines):
        try:
            return dict(json.loads(line))
        except ValueError:
            continue
    return None


def batch_fill(stats: Mapping[str, Any], topic: str) -> dict[str, Any] | None:
    """Records and bytes per batch of ``topic`` as librdkafka saw them (its last interval), in the
    driver protocol's ``client_stats.batch_fill`` shape (docs/drivers.md); None without batches."""
    t = stats.get("topics", {}).get(topic)
    if not t or not t.get("batchcnt", {}).get("cnt"):
        return None
    cnt, size = t["batchcnt"], t["batchsize"]
    return {
        "batches": int(cnt["cnt"]),
        "records_p50": cnt["p50"],
        "records_p90": cnt["p90"],
        "records_max": cnt["max"],
        "bytes_p50": size["p50"],
        "bytes_p90": size["p90"],
        "bytes_max": size["max"],
        "source": "librdkafka statistics (last interval)",
    }


def fetch_stats(stats: Mapping[str, Any], topic: str) -> dict[str, Any] | None:
    """A consumer's fetch figures from its last statistics object (totals since the client started):
    fetch requests and bytes received over the brokers, records fetched of ``topic``, the bytes per
    fetch, the last interval's median round trip, and how often a batch was decompressed again into
    a larger buffer (``zbuf_grow``: librdkafka sizes a zstd batch's output from the frame's content
    size, and a frame written without it is first decompressed into twice its compressed size,
    which fails and starts over); None without a fetch."""
    reqs = rx_bytes = regrows = 0
    rtt: list[tuple[float, float]] = []
    for b in stats.get("brokers", {}).values():
        if not isinstance(b, Mapping) or b.get("nodeid", -1) < 0:  # bootstrap placeholders
            continue
        reqs += int(b.get("req", {}).get("Fetch", 0))
        rx_bytes += int(b.get("rxbytes", 0))
        regrows += int(b.get("zbuf_grow", 0))
        w = _window(b.get("rtt"))
        if w:
            rtt.append(w)
    if not reqs:
        return None
    parts = stats.get("topics", {}).get(topic, {}).get("partitions", {})
    records = sum(int(p.get("rxmsgs", 0)) for k, p in parts.items() if k != "-1")
    return {
        "fetch_requests": reqs,
        "rx_bytes": rx_bytes,
        "bytes_per_fetch": rx_bytes / reqs,
        "records_fetched": records,
        "records_per_fetch": records / reqs,
        "rtt_p50_us": weighted_median(rtt),
        "decompress_regrows": regrows,
        "source": "librdkafka statistics (the last emitted: totals up to then)",
    }
