"""Broker metrics over Prometheus: what a remote broker says about itself, read at window edges.

Most production clusters already run the Prometheus JMX exporter on every broker (Strimzi,
Confluent Platform, Amazon MSK open monitoring, self-run); kbench's own ``LocalCluster`` starts
its brokers with it too (``kbench/data/jmx-exporter.yaml``).  :func:`scrape` reads one endpoint
and keeps what kbench uses:

- ``process_cpu_seconds_total``: the broker JVM's CPU (user + system, not split);
- the broker's node id and software version (``kafka_server_app_info_*{id=..., version=...}``
  where the exporter's rules export them);
- bytes in / out, replication bytes in / out and produce message conversions
  (``BrokerTopicMetrics`` counters, under the names of kbench's config, Strimzi's and the JMX
  exporter's defaults), and the count of produce
  requests that spent time converting (``RequestMetrics MessageConversionsTimeMs``).

The exposition text is parsed by prometheus-client's parser, never by hand.  :func:`delta`
turns two scrapes of one endpoint into the window's figures; a counter that went backwards
(broker restarted) is reported, never clamped to 0.
"""

from __future__ import annotations

import base64
import time
import urllib.parse
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from kbench.kafka import httpget
from kbench.kafka.secret import redact_url_credentials
from kbench.model.text import terminal_safe

__all__ = [
    "BrokerMetrics",
    "MetricsDelta",
    "MetricsError",
    "delta",
    "display_url",
    "parse",
    "parse_urls",
    "scrape",
    "scrape_all",
]

#: Seconds one scrape may take before the endpoint counts as unreachable.
SCRAPE_TIMEOUT_S = 10.0
#: Bytes of exposition text read at most from one endpoint (a full JMX dump can be large).
MAX_SCRAPE_BYTES = 64 << 20


class MetricsError(RuntimeError):
    """An endpoint could not be read or parsed; the message names it (without credentials)."""


class MetricsURLError(MetricsError, ValueError):
    """An endpoint that is not a usable http(s) URL: bad input, refused before anything runs."""


@dataclass(frozen=True)
class BrokerMetrics:
    """What one scrape of one broker's endpoint said.  ``None``: not exported by that endpoint."""

    url: str  # as displayed: no credentials
    at: float  # time.monotonic() when the answer arrived
    broker_id: int | None
    version: str | None
    cpu_s: float | None
    bytes_in: float | None
    bytes_out: float | None
    produce_conversions: float | None  # records converted on produce (ProduceMessageConversionsPerSec count)
    produce_conversion_requests: float | None  # produce requests timed in MessageConversionsTimeMs
    jvm: str | None
    replication_bytes_in: float | None = None  # ReplicationBytesInPerSec count: fetched from leaders as a follower
    replication_bytes_out: float | None = None  # ReplicationBytesOutPerSec count: sent to followers as leader


@dataclass(frozen=True)
class MetricsDelta:
    """One endpoint's figures over a window (between two scrapes)."""

    url: str
    broker_id: int | None
    wall_s: float
    cpu_s: float | None
    bytes_in: float | None
    bytes_out: float | None
    produce_conversions: float | None
    regressed: tuple[str, ...] = ()  # counters that went backwards (a restarted broker)
    replication_bytes_in: float | None = None
    replication_bytes_out: float | None = None


def display_url(url: str) -> str:
    """``url`` without user:password (what may be printed or written)."""
    p = urllib.parse.urlsplit(url)
    if p.username is None and p.password is None:
        return url
    host = p.hostname or ""
    if p.port:
        host = f"{host}:{p.port}"
    return urllib.parse.urlunsplit((p.scheme, host, p.path, p.query, p.fragment))


def parse_urls(spec: str | Iterable[str]) -> tuple[str, ...]:
    """``URL[,URL...]`` (or a list) as full URLs; ``host:port`` means ``http://host:port/metrics``."""
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    out = []
    for raw in items:
        u = raw.strip()
        if not u:
            continue
        if "://" not in u:
            u = f"http://{u}"
        try:
            p = urllib.parse.urlsplit(u)
            port_ok = p.port is None or p.port > 0
        except ValueError:  # "broker-1:metrics": a port that is not a number; a bracket without IPv6
            p, port_ok = urllib.parse.urlsplit(""), False
        host_ok = bool(p.hostname) and all(c.isascii() and (c.isalnum() or c in ".-_:[]") for c in p.hostname or "")
        if p.scheme not in ("http", "https") or not host_ok or not port_ok:
            raise MetricsURLError(
                f"broker metrics endpoint '{terminal_safe(redact_url_credentials(raw.strip()))}' is not an http(s) URL "
                "with a host and a numeric port; give e.g. http://broker-1:7071/metrics"
            )
        if not p.path:
            u = urllib.parse.urlunsplit((p.scheme, p.netloc, "/metrics", p.query, p.fragment))
        out.append(u)
    return tuple(out)


def _labels_name(labels: dict[str, str]) -> str:
    return labels.get("name", "").lower()


def _broker_topic_count(samples: Sequence[tuple[str, dict[str, str], float]], metric: str) -> float | None:
    """A cluster-wide ``BrokerTopicMetrics`` counter (no topic label) under the common namings:
    ``..._count{name="BytesInPerSec"}`` (kbench, JMX exporter defaults), ``..._bytesin_total``
    (Strimzi), ``..._bytesinpersec_count`` (Confluent's examples)."""
    m = metric.lower()
    prefix = "kafka_server_brokertopicmetrics"
    direct = {f"{prefix}_{m}_total", f"{prefix}_{m}persec_count", f"{prefix}_{m}persec_total", f"{prefix}_{m}_count"}
    by_label = {f"{prefix}_count", f"{prefix}_count_total", f"{prefix}_total"}
    for name, labels, value in samples:
        if "topic" in labels:
            continue
        if name in direct or (name in by_label and _labels_name(labels) == f"{m}persec"):
            return value
    return None


def parse(text: str, url: str, at: float | None = None) -> BrokerMetrics:
    """The figures kbench reads from one endpoint's exposition text."""
    try:
        samples = [
            (s.name.lower(), dict(s.labels), float(s.value))
            for fam in text_string_to_metric_families(text)
            for s in fam.samples
        ]
    except ValueError as e:
        raise MetricsError(f"{display_url(url)}: not Prometheus exposition text ({e})") from None
    cpu = broker_id = version = jvm = None
    conv_requests = None
    for name, labels, value in samples:
        if name == "process_cpu_seconds_total" or (name == "process_cpu_seconds" and cpu is None):
            cpu = value
        elif "app_info" in name and name.startswith("kafka_server"):
            if version is None and labels.get("version"):
                version = labels["version"]
            ident = labels.get("id") or labels.get("broker_id")
            if broker_id is None and ident is not None and ident.isdigit():
                broker_id = int(ident)
        elif name == "jvm_runtime_info" and labels.get("version"):
            jvm = labels["version"]
        elif name.startswith("kafka_network_requestmetrics_messageconversionstimems_count") or (
            name.startswith("kafka_network_requestmetrics_count")
            and labels.get("name", "").lower() == "messageconversionstimems"
        ):
            if labels.get("request", "").lower() == "produce":
                conv_requests = value
    return BrokerMetrics(
        url=display_url(url),
        at=time.monotonic() if at is None else at,
        broker_id=broker_id,
        version=version,
        cpu_s=cpu,
        bytes_in=_broker_topic_count(samples, "BytesIn"),
        bytes_out=_broker_topic_count(samples, "BytesOut"),
        produce_conversions=_broker_topic_count(samples, "ProduceMessageConversions"),
        produce_conversion_requests=conv_requests,
        jvm=jvm,
        replication_bytes_in=_broker_topic_count(samples, "ReplicationBytesIn"),
        replication_bytes_out=_broker_topic_count(samples, "ReplicationBytesOut"),
    )


def scrape(url: str, timeout: float = SCRAPE_TIMEOUT_S) -> BrokerMetrics:
    """Read and parse one endpoint within ``timeout`` seconds overall (connect, headers and body);
    :class:`MetricsError` (one line, no credentials) on failure.

    ``http://user:password@host:port/metrics`` sends HTTP basic authentication, to that origin
    only: a redirect to another origin is followed without it (kbench.kafka.httpget).
    """
    p = urllib.parse.urlsplit(url)
    shown = display_url(url)
    auth = None
    if p.username is not None:
        cred = f"{urllib.parse.unquote(p.username)}:{urllib.parse.unquote(p.password or '')}"
        auth = "Basic " + base64.b64encode(cred.encode()).decode()
    try:
        resp = httpget.get(shown, {"Accept": "text/plain;version=0.0.4"}, timeout, MAX_SCRAPE_BYTES, auth=auth)
    except httpget.HttpError as e:
        if "MiB" in str(e):
            raise MetricsError(
                f"broker metrics {shown}: answer over {MAX_SCRAPE_BYTES >> 20} MiB; export fewer MBeans (includeObjectNames)"
            ) from None
        raise MetricsError(
            f"broker metrics {shown} unreachable ({e}); check --broker-metrics and that the exporter listens there"
        ) from None
    if resp.status != 200:
        raise MetricsError(f"broker metrics {shown}: HTTP {resp.status} {resp.reason}")
    return parse(resp.body.decode("utf-8", errors="replace"), url)


def scrape_all(urls: Sequence[str], timeout: float = SCRAPE_TIMEOUT_S) -> list[BrokerMetrics | MetricsError]:
    """Scrape every endpoint at once (in threads); a failed endpoint is its MetricsError, in place."""

    def one(u: str) -> BrokerMetrics | MetricsError:
        try:
            return scrape(u, timeout)
        except MetricsError as e:
            return e

    if not urls:
        return []
    with ThreadPoolExecutor(max_workers=min(16, len(urls))) as ex:
        return list(ex.map(one, urls))


def delta(before: BrokerMetrics, after: BrokerMetrics) -> MetricsDelta:
    """Figures of one endpoint between two scrapes (``None`` where either side lacks the counter)."""
    regressed = []

    def d(name: str) -> float | None:
        a, b = getattr(before, name), getattr(after, name)
        if a is None or b is None:
            return None
        if b < a:
            regressed.append(name)
        return b - a

    out = MetricsDelta(
        url=after.url,
        broker_id=after.broker_id if after.broker_id is not None else before.broker_id,
        wall_s=after.at - before.at,
        cpu_s=d("cpu_s"),
        bytes_in=d("bytes_in"),
        bytes_out=d("bytes_out"),
        produce_conversions=d("produce_conversions"),
        replication_bytes_in=d("replication_bytes_in"),
        replication_bytes_out=d("replication_bytes_out"),
    )
    return MetricsDelta(**{**out.__dict__, "regressed": tuple(regressed)})
