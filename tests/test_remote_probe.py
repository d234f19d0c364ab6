"""The remote transport's broker probe (kbench.engine.transports.remote) against real HTTP.

A tiny HTTP server on 127.0.0.1 serves fake Prometheus exposition pages, one per path, which a
test may change between scrapes (a broker's exporter as kbench sees it; no broker involved).
Covered: matching endpoints to broker ids (by the ``id`` label, in the order given when no
endpoint reports one, refusals when neither works), a scrape that fails at a window edge (the
broker's CPU is NA and says why), a page without ``process_cpu_seconds_total`` (NA, naming the
missing counter), a CPU counter that went backwards (flagged, never clamped), and the Kafka byte
counters (NA on a failed scrape, per counter when not exported or gone backwards, said in the source).
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from kbench.engine.transports.base import TransportError
from kbench.engine.transports.remote import MetricsProbe, cpu_from_metrics, kafka_bytes
from kbench.kafka import metrics


def page(cpu: float | None, broker_id: int | None = None, bytes_in: float = 1000.0) -> str:
    lines = ["# TYPE kafka_server_brokertopicmetrics_count counter"]
    lines.append(f'kafka_server_brokertopicmetrics_count_total{{name="BytesInPerSec"}} {bytes_in}')
    lines.append(f'kafka_server_brokertopicmetrics_count_total{{name="BytesOutPerSec"}} {2 * bytes_in}')
    if cpu is not None:
        lines += ["# TYPE process_cpu_seconds_total counter", f"process_cpu_seconds_total {cpu}"]
    if broker_id is not None:
        lines.append(f'kafka_server_app_info_version{{id="{broker_id}",version="4.1.2"}} 1.0')
    return "\n".join(lines) + "\n"


class Pages:
    """Path -> (HTTP status, body); what the server answers, changeable between scrapes."""

    def __init__(self) -> None:
        self.by_path: dict[str, tuple[int, str]] = {}
        self.lock = threading.Lock()

    def set(self, path: str, body: str, status: int = 200) -> None:
        with self.lock:
            self.by_path[path] = (status, body)

    def get(self, path: str) -> tuple[int, str]:
        with self.lock:
            return self.by_path.get(path, (404, "no such page\n"))


@pytest.fixture()
def served() -> Iterator[tuple[str, Pages]]:
    pages = Pages()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            status, body = pages.get(self.path)
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", pages
    finally:
        srv.shutdown()
        srv.server_close()
        t.join()


def test_endpoints_are_matched_by_the_id_they_report_not_their_order(served: tuple[str, Pages]) -> None:
    base, pages = served
    pages.set("/b2", page(5.0, broker_id=2))
    pages.set("/b1", page(7.0, broker_id=1))
    probe = MetricsProbe.open([f"{base}/b2", f"{base}/b1"], [1, 2])
    assert probe.urls == {2: f"{base}/b2", 1: f"{base}/b1"}
    assert "broker id the endpoint reports" in probe.matching
    assert probe.version(1) == probe.version(2) == "4.1.2"
    assert probe.first[1].cpu_s == 7.0 and probe.first[2].cpu_s == 5.0
    edge = probe.edge()
    assert {b: m.cpu_s for b, m in edge.items() if isinstance(m, metrics.BrokerMetrics)} == {1: 7.0, 2: 5.0}


def test_endpoints_without_ids_are_matched_in_the_order_given_and_said_so(served: tuple[str, Pages]) -> None:
    base, pages = served
    pages.set("/x", page(1.0))
    pages.set("/y", page(2.0))
    probe = MetricsProbe.open([f"{base}/y", f"{base}/x"], [5, 3])
    assert probe.urls == {3: f"{base}/y", 5: f"{base}/x"}  # ids sorted ascending, endpoints as given
    assert "in the order given" in probe.matching and "report no broker id" in probe.matching
    assert probe.version(3) is None


def test_unmatchable_endpoints_are_refused_with_the_fix(served: tuple[str, Pages]) -> None:
    base, pages = served
    pages.set("/b7", page(1.0, broker_id=7))
    pages.set("/x", page(1.0))
    with pytest.raises(TransportError, match=r"broker ids \[7\].*\[1, 2\]"):
        MetricsProbe.open([f"{base}/b7"], [1, 2])
    with pytest.raises(TransportError, match="1 endpoints for 2 brokers.*one endpoint per broker"):
        MetricsProbe.open([f"{base}/x"], [1, 2])
    with pytest.raises(TransportError, match="HTTP 404"):
        MetricsProbe.open([f"{base}/x", f"{base}/gone"], [1, 2])


def test_a_scrape_that_fails_at_a_window_edge_makes_that_brokers_cpu_na(served: tuple[str, Pages]) -> None:
    base, pages = served
    pages.set("/b1", page(10.0, broker_id=1))
    probe = MetricsProbe.open([f"{base}/b1"], [1])
    before = probe.edge()
    pages.set("/b1", "exporter down\n", status=503)
    after = probe.edge()
    assert isinstance(after[1], metrics.MetricsError) and "HTTP 503" in str(after[1])
    s = cpu_from_metrics("broker-1", before[1], after[1])
    assert (s.usr_s, s.sys_s, s.total_s) == (None, None, None)
    assert s.note.startswith("metrics scrape failed:") and "HTTP 503" in s.note
    assert not s.broker_counters
    # the failure at the opening edge counts the same
    s0 = cpu_from_metrics("broker-1", after[1], before[1])
    assert s0.total_s is None and "HTTP 503" in s0.note
    # a broker missing from the edge entirely (None) is NA too
    assert cpu_from_metrics("broker-1", before[1], None).total_s is None


def test_a_page_without_the_cpu_counter_is_na_naming_the_counter(served: tuple[str, Pages]) -> None:
    base, pages = served
    pages.set("/b1", page(None, broker_id=1, bytes_in=100.0))
    probe = MetricsProbe.open([f"{base}/b1"], [1])
    before = probe.edge()
    pages.set("/b1", page(None, broker_id=1, bytes_in=400.0))
    after = probe.edge()
    s = cpu_from_metrics("broker-1", before[1], after[1])
    assert s.total_s is None and s.usr_s is None and s.sys_s is None
    assert "exports no process_cpu_seconds_total" in s.note and f"{base}/b1" in s.note


def test_cpu_and_bytes_over_a_window_and_a_counter_that_went_backwards(served: tuple[str, Pages]) -> None:
    base, pages = served
    pages.set("/b1", page(10.0, broker_id=1, bytes_in=1000.0))
    probe = MetricsProbe.open([f"{base}/b1"], [1])
    before = probe.edge()
    pages.set("/b1", page(12.5, broker_id=1, bytes_in=4000.0))
    after = probe.edge()
    s = cpu_from_metrics("broker-1", before[1], after[1])
    assert s.total_s == pytest.approx(2.5) and not s.regressed and s.wall_s >= 0
    assert s.broker_counters["bytes_in"] == pytest.approx(3000.0)
    assert s.broker_counters["bytes_out"] == pytest.approx(6000.0)
    assert s.source.endswith(f"from {base}/b1")
    pages.set("/b1", page(3.0, broker_id=1, bytes_in=5000.0))  # the broker restarted
    again = probe.edge()
    back = cpu_from_metrics("broker-1", after[1], again[1])
    assert back.regressed and back.total_s == pytest.approx(-9.5)  # reported, never clamped to 0


def test_kafka_bytes_na_on_a_failed_scrape_and_per_counter_when_missing_or_backwards(
    served: tuple[str, Pages],
) -> None:
    base, pages = served
    pages.set("/b1", page(10.0, broker_id=1, bytes_in=1000.0))  # no ReplicationBytes* on the page
    probe = MetricsProbe.open([f"{base}/b1"], [1])
    before = probe.edge()
    pages.set("/b1", page(11.0, broker_id=1, bytes_in=4000.0))
    after = probe.edge()
    b = kafka_bytes(before[1], after[1])
    assert (b["bytes_in"], b["bytes_out"]) == (pytest.approx(3000.0), pytest.approx(6000.0))
    assert b["replication_bytes_in"] is None and b["replication_bytes_out"] is None
    assert b["source"].startswith("metrics: BrokerTopicMetrics") and f"from {base}/b1" in b["source"]
    assert "not measured: replication_bytes_in, replication_bytes_out" in b["source"]
    # a counter that went backwards (a restart) is not measured, never a negative or clamped count
    pages.set("/b1", page(12.0, broker_id=1, bytes_in=10.0))
    back = kafka_bytes(after[1], probe.edge()[1])
    assert back["bytes_in"] is None and back["bytes_out"] is None and "bytes_in, bytes_out" in back["source"]
    # a failed scrape at either edge: every counter NA, with the scrape's error as the source
    pages.set("/b1", "exporter down\n", status=503)
    failed = probe.edge()
    for a, z in ((before[1], failed[1]), (failed[1], before[1]), (before[1], None)):
        na = kafka_bytes(a, z)
        assert all(na[k] is None for k in ("bytes_in", "bytes_out", "replication_bytes_in", "replication_bytes_out"))
        assert na["source"].startswith("metrics scrape failed:"), na
    assert "HTTP 503" in kafka_bytes(before[1], failed[1])["source"]
