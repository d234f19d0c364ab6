"""``kbench run --metrics-port N``: the live figures in Prometheus text format, so a run shows up
beside the brokers' dashboards.  A private registry (only kbench's figures, read from the
:class:`~kbench.engine.live.LiveBoard` at each scrape); a figure not measured is absent, not 0."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from kbench.engine.live import LiveBoard

__all__ = ["GAUGES", "MetricsServer"]

#: Gauge name (without the kbench_ prefix) -> (LiveSnapshot.as_dict key, help).
GAUGES: dict[str, tuple[str, str]] = {
    "messages_per_second": ("msgs_s", "records acknowledged per second, the repetition in progress"),
    "megabytes_per_second": ("mb_s", "payload MB (10^6 bytes) acknowledged per second"),
    "produce_rtt_p50_milliseconds": ("p50_ms", "the producer's request round trip p50, last statistics window"),
    "produce_rtt_p99_milliseconds": ("p99_ms", "the producer's request round trip p99, last statistics window"),
    "producer_cpu_percent": ("producer_cpu_pct", "the producer's CPU over the last second, % of one core"),
    "consumer_cpu_percent": ("consumer_cpu_pct", "the consumers' CPU over the last second, % of one core, summed"),
    "broker_cpu_percent": ("broker_cpu_pct", "the brokers' CPU over the last second, % of one core, summed"),
    "repetition_elapsed_seconds": ("rep_elapsed_s", "seconds since the repetition in progress started"),
    "run_elapsed_seconds": ("run_elapsed_s", "seconds since the run started"),
    "repetitions_planned": ("reps_total", "repetitions the run will do (retries added as they are decided)"),
}


class _Collector(Collector):
    def __init__(self, board: LiveBoard) -> None:
        self.board = board

    def collect(self) -> Iterator[Any]:
        d = self.board.snapshot().as_dict()
        for name, (key, doc) in GAUGES.items():
            g = GaugeMetricFamily(f"kbench_{name}", doc, labels=["repetition"])
            if d[key] is not None:
                g.add_metric([d["label"]], float(d[key]))
            yield g
        c = CounterMetricFamily("kbench_repetitions_ended", "repetitions ended, by status", labels=["status"])
        for status, n in sorted(d["statuses"].items()):
            c.add_metric([status], float(n))
        yield c


class MetricsServer:
    """An HTTP server of the board's figures on ``addr:port`` (port 0: any free one)."""

    def __init__(self, board: LiveBoard, port: int, addr: str = "0.0.0.0") -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(_Collector(board))
        self._server, self._thread = start_http_server(port, addr=addr, registry=self.registry)
        self.port = int(self._server.server_address[1])

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
