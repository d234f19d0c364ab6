"""What the Kafka transport measures on brokers it cannot see locally (a remote cluster).

- Broker CPU, version and bytes from each broker's Prometheus endpoint
  (:mod:`kbench.kafka.metrics`), scraped at the edges of every window, endpoints matched to
  broker ids by the ``id`` label the exporter gives (else in the order given, when the counts
  match, and said so);
- stored bytes per partition from DescribeLogDirs (:mod:`kbench.kafka.logdirs`), the stored
  codec inferred from the topic's ``compression.type`` read back and the producer codec, and
  flagged as inferred.

The transport calls these where it used ``/proc`` and segment files; locally started brokers
keep the local sources (they split usr/sys and read each stored batch).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kbench.engine.transports.base import CpuSample, TransportError
from kbench.kafka import logdirs, metrics

__all__ = [
    "KAFKA_BYTES",
    "MetricsProbe",
    "StoredFromLogDirs",
    "cpu_from_metrics",
    "kafka_bytes",
    "stored_from_log_dirs",
]

CPU_SOURCE = "metrics: process_cpu_seconds_total (usr+sys)"
#: A broker's own byte counters (kbench.kafka.metrics fields), as :func:`kafka_bytes` gives them.
KAFKA_BYTES = ("bytes_in", "bytes_out", "replication_bytes_in", "replication_bytes_out")
BYTES_SOURCE = "metrics: BrokerTopicMetrics BytesIn, BytesOut, ReplicationBytesIn, ReplicationBytesOut counts"


@dataclass
class MetricsProbe:
    """The brokers' Prometheus endpoints, matched to broker ids."""

    urls: dict[int, str] = field(default_factory=dict)  # broker id -> URL (may hold credentials)
    first: dict[int, metrics.BrokerMetrics] = field(default_factory=dict)
    matching: str = ""  # how endpoints were matched to brokers

    @classmethod
    def open(cls, urls: Sequence[str], broker_ids: Sequence[int]) -> MetricsProbe:
        """Scrape every endpoint once and match it to a broker id; TransportError when one is
        unreachable or the endpoints cannot be matched (the message says how to fix it)."""
        try:
            full = metrics.parse_urls(urls)
        except metrics.MetricsError as e:
            raise TransportError(f"--broker-metrics: {e}") from None
        got = metrics.scrape_all(full)
        errors = [str(g) for g in got if isinstance(g, metrics.MetricsError)]
        if errors:
            raise TransportError("; ".join(errors))
        ok = [g for g in got if isinstance(g, metrics.BrokerMetrics)]
        ids = [g.broker_id for g in ok]
        probe = cls()
        if all(i is not None for i in ids) and len(set(ids)) == len(ids):
            unknown = sorted(set(i for i in ids if i is not None) - set(broker_ids))
            if unknown:
                raise TransportError(
                    f"--broker-metrics: endpoints report broker ids {unknown} that the cluster at bootstrap does not have "
                    f"({sorted(broker_ids)}); give the endpoints of this cluster's brokers"
                )
            for u, g in zip(full, ok):
                assert g.broker_id is not None
                probe.urls[g.broker_id] = u
                probe.first[g.broker_id] = g
            probe.matching = "by the broker id the endpoint reports (kafka_server_app_info id label)"
        elif len(ok) == len(broker_ids):
            for u, g, b in zip(full, ok, sorted(broker_ids)):
                probe.urls[b] = u
                probe.first[b] = g
            probe.matching = "in the order given to ids sorted ascending (the endpoints report no broker id)"
        else:
            raise TransportError(
                f"--broker-metrics: {len(ok)} endpoints for {len(broker_ids)} brokers and the endpoints do not report "
                f"broker ids; give one endpoint per broker in broker id order, or export kafka.server:type=app-info"
            )
        return probe

    def edge(self) -> dict[int, metrics.BrokerMetrics | metrics.MetricsError]:
        """One scrape of every endpoint (at a window edge)."""
        ids = list(self.urls)
        return dict(zip(ids, metrics.scrape_all([self.urls[i] for i in ids])))

    def version(self, broker_id: int) -> str | None:
        m = self.first.get(broker_id)
        return m.version if m else None

    def display_url(self, broker_id: int) -> str | None:
        u = self.urls.get(broker_id)
        return metrics.display_url(u) if u else None


def cpu_from_metrics(
    role: str,
    before: metrics.BrokerMetrics | metrics.MetricsError | None,
    after: metrics.BrokerMetrics | metrics.MetricsError | None,
) -> CpuSample:
    """A broker's CPU over the window between two scrapes (NA with the reason when unreadable)."""
    if not isinstance(before, metrics.BrokerMetrics) or not isinstance(after, metrics.BrokerMetrics):
        err = before if isinstance(before, metrics.MetricsError) else after
        return CpuSample(role, None, None, 0.0, note=f"metrics scrape failed: {err}", source=CPU_SOURCE)
    d = metrics.delta(before, after)
    if d.cpu_s is None:
        return CpuSample(
            role, None, None, d.wall_s, note=f"{d.url} exports no process_cpu_seconds_total", source=CPU_SOURCE
        )
    return CpuSample(
        role,
        None,
        None,
        d.wall_s,
        regressed="cpu_s" in d.regressed,
        note=f"{d.url}",
        total_s=d.cpu_s,
        source=f"{CPU_SOURCE} from {d.url}",
        broker_counters={
            "bytes_in": d.bytes_in,
            "bytes_out": d.bytes_out,
            "produce_conversions": d.produce_conversions,
        },
    )


def kafka_bytes(
    before: metrics.BrokerMetrics | metrics.MetricsError | None,
    after: metrics.BrokerMetrics | metrics.MetricsError | None,
) -> dict[str, Any]:
    """A broker's byte counters (:data:`KAFKA_BYTES`) between two scrapes, and ``source``: where
    they came from, or why they are None (a failed scrape, a counter not exported or gone backwards)."""
    if not isinstance(before, metrics.BrokerMetrics) or not isinstance(after, metrics.BrokerMetrics):
        err = before if isinstance(before, metrics.MetricsError) else after
        return dict.fromkeys(KAFKA_BYTES) | {"source": f"metrics scrape failed: {err}"}
    d = metrics.delta(before, after)
    out: dict[str, Any] = {k: (None if k in d.regressed else getattr(d, k)) for k in KAFKA_BYTES}
    missing = [k for k in KAFKA_BYTES if out[k] is None]
    note = f"; not measured: {', '.join(missing)} (not exported, or went backwards)" if missing else ""
    return out | {"source": f"{BYTES_SOURCE} from {d.url}{note}"}


@dataclass(frozen=True)
class StoredFromLogDirs:
    stored_bytes: int | None
    stored_codecs: tuple[str, ...]
    source: str


def stored_from_log_dirs(
    bootstrap: str,
    topic: str,
    partitions: int,
    client_props: Mapping[str, str],
    producer_codec: str,
    topic_compression_readback: str | None,
) -> StoredFromLogDirs:
    """Stored bytes of a topic from DescribeLogDirs, its codec inferred (and said so)."""
    try:
        sizes = logdirs.describe(bootstrap, [topic], client_props)
    except logdirs.LogDirsError as e:
        return StoredFromLogDirs(None, (), f"{logdirs.SOURCE} failed: {e}")
    stored, note = logdirs.stored_bytes(sizes, topic, partitions)
    codec, how = logdirs.infer_stored_codec(topic_compression_readback, producer_codec)
    src = f"{logdirs.SOURCE}; {how}" + (f"; {note}" if note else "")
    return StoredFromLogDirs(stored, (codec,) if stored is not None else (), src)
