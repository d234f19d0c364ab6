"""Broker metrics over Prometheus and DescribeLogDirs output, without a broker."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from kbench.kafka import logdirs, metrics

KBENCH_TEXT = """\
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 12.5
jvm_runtime_info{runtime="OpenJDK Runtime Environment",vendor="Debian",version="17.0.15"} 1
kafka_server_app_info_version{id="2",version="4.1.2"} 1.0
kafka_server_app_info_start_time_ms{id="2"} 1.7E12
# TYPE kafka_server_brokertopicmetrics_count counter
kafka_server_brokertopicmetrics_count_total{name="BytesInPerSec"} 1000.0
kafka_server_brokertopicmetrics_count_total{name="BytesOutPerSec"} 2000.0
kafka_server_brokertopicmetrics_count_total{name="BytesInPerSec",topic="t"} 7.0
kafka_server_brokertopicmetrics_count_total{name="ProduceMessageConversionsPerSec"} 3.0
kafka_network_requestmetrics_messageconversionstimems_count{request="Produce"} 4.0
"""

STRIMZI_TEXT = """\
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 3.25
# TYPE kafka_server_brokertopicmetrics_bytesin_total counter
kafka_server_brokertopicmetrics_bytesin_total 11.0
kafka_server_brokertopicmetrics_bytesin_total{topic="orders"} 5.0
# TYPE kafka_server_brokertopicmetrics_bytesout_total counter
kafka_server_brokertopicmetrics_bytesout_total 22.0
"""

# Exporter defaults without lowercaseOutputName (e.g. a hand-written MSK-style config)
MIXED_CASE_TEXT = """\
process_cpu_seconds_total 1.0
kafka_server_BrokerTopicMetrics_Count{name="BytesInPerSec",} 9.0
kafka_server_BrokerTopicMetrics_Count{name="BytesOutPerSec",} 8.0
"""


def test_parse_kbench_config_output() -> None:
    m = metrics.parse(KBENCH_TEXT, "http://u:secret@b2:7071/metrics", at=5.0)
    assert m.url == "http://b2:7071/metrics" and "secret" not in repr(m)
    assert (m.broker_id, m.version, m.jvm) == (2, "4.1.2", "17.0.15")
    assert (m.cpu_s, m.bytes_in, m.bytes_out) == (12.5, 1000.0, 2000.0)  # the topic-labelled series is not taken
    assert (m.produce_conversions, m.produce_conversion_requests) == (3.0, 4.0)


def test_parse_strimzi_and_mixed_case_namings() -> None:
    s = metrics.parse(STRIMZI_TEXT, "http://b:9404/metrics")
    assert (s.cpu_s, s.bytes_in, s.bytes_out, s.broker_id, s.version) == (3.25, 11.0, 22.0, None, None)
    m = metrics.parse(MIXED_CASE_TEXT, "http://b:11001/metrics")
    assert (m.bytes_in, m.bytes_out) == (9.0, 8.0)


def test_delta_and_regressed_counters() -> None:
    a = metrics.parse(KBENCH_TEXT, "http://b/metrics", at=1.0)
    b = metrics.parse(KBENCH_TEXT.replace("12.5", "14.0").replace("} 1000.0", "} 1500.0"), "http://b/metrics", at=3.5)
    d = metrics.delta(a, b)
    assert (d.cpu_s, d.bytes_in, d.bytes_out, d.wall_s, d.regressed) == (1.5, 500.0, 0.0, 2.5, ())
    back = metrics.delta(b, a)
    assert back.cpu_s == -1.5 and "cpu_s" in back.regressed  # reported, never clamped


def test_parse_urls() -> None:
    assert metrics.parse_urls("b1:7071, http://b2:7071/m ,") == ("http://b1:7071/metrics", "http://b2:7071/m")
    with pytest.raises(metrics.MetricsError, match="not an http"):
        metrics.parse_urls("ftp://user:pw@b1/x")
    try:
        metrics.parse_urls("ftp://user:pw@b1/x")
    except metrics.MetricsError as e:
        assert "pw" not in str(e)


class _Handler(http.server.BaseHTTPRequestHandler):
    seen_auth: list[str | None] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        _Handler.seen_auth.append(self.headers.get("Authorization"))
        body = (KBENCH_TEXT if self.path == "/metrics" else "not { prometheus").encode()
        self.send_response(200 if self.path != "/missing" else 404)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def server() -> Iterator[str]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


def test_scrape_over_http_with_basic_auth(server: str) -> None:
    _Handler.seen_auth.clear()
    m = metrics.scrape(f"http://kb:pa55@{server}/metrics")
    assert m.cpu_s == 12.5 and m.url == f"http://{server}/metrics"
    assert _Handler.seen_auth == ["Basic a2I6cGE1NQ=="]  # kb:pa55
    got = metrics.scrape_all([f"http://{server}/metrics", f"http://{server}/missing"])
    assert isinstance(got[0], metrics.BrokerMetrics) and isinstance(got[1], metrics.MetricsError)
    assert "HTTP 404" in str(got[1])


def test_unreachable_endpoint_is_one_line_without_credentials() -> None:
    with pytest.raises(metrics.MetricsError) as e:
        metrics.scrape("http://kb:pa55@127.0.0.1:1/metrics", timeout=2)
    assert "unreachable" in str(e.value) and "pa55" not in str(e.value) and "\n" not in str(e.value)


LOG_DIRS_OUT = """Querying brokers for log directories information
Received log directory information from brokers 1,2
{"brokers":[{"broker":1,"logDirs":[{"partitions":[{"partition":"my-topic-0","size":100,"offsetLag":0,"isFuture":false},{"partition":"my-topic-1","size":50,"offsetLag":0,"isFuture":false},{"partition":"other-0","size":7,"offsetLag":0,"isFuture":false}],"error":null,"logDir":"/d1"}]},{"broker":2,"logDirs":[{"partitions":[{"partition":"my-topic-0","size":90,"offsetLag":0,"isFuture":false},{"partition":"my-topic-1","size":50,"offsetLag":0,"isFuture":true}],"error":null,"logDir":"/d2"}]}],"version":1}
"""


def test_log_dirs_parse_and_stored_bytes() -> None:
    sizes = logdirs.parse(LOG_DIRS_OUT)
    assert {(s.broker, s.topic, s.partition, s.size) for s in sizes} == {
        (1, "my-topic", 0, 100),
        (1, "my-topic", 1, 50),
        (1, "other", 0, 7),
        (2, "my-topic", 0, 90),  # the future replica of partition 1 is left out
    }
    stored, note = logdirs.stored_bytes(sizes, "my-topic", 2)
    assert stored == 150 and "differ" in note  # largest replica of partition 0, plus partition 1
    assert logdirs.stored_bytes(sizes, "my-topic", 3)[0] is None
    with pytest.raises(logdirs.LogDirsError):
        logdirs.parse("Exception in thread main")


def test_stored_codec_inference_says_how() -> None:
    assert logdirs.infer_stored_codec("producer", "zstd:3")[0] == "zstd"
    codec, how = logdirs.infer_stored_codec("lz4", "zstd:3")
    assert codec == "lz4" and "compression.type=lz4" in how
    assert logdirs.infer_stored_codec("uncompressed", "gzip")[0] == "none"


def test_java_client_properties_carry_security_without_rdkafka_only_keys() -> None:
    j = logdirs.java_client_properties(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanisms": "SCRAM-SHA-512",
            "sasl.username": "u",
            "sasl.password": 'p"w',
            "ssl.ca.location": "/etc/ca.pem",
            "linger.ms": "5",
        }
    )
    assert j["security.protocol"] == "SASL_SSL" and j["sasl.mechanism"] == "SCRAM-SHA-512"
    assert "ScramLoginModule" in j["sasl.jaas.config"] and 'password="p\\"w"' in j["sasl.jaas.config"]
    assert "ssl.ca.location" not in j and "linger.ms" not in j and "sasl.password" not in j
    assert (j["ssl.truststore.type"], j["ssl.truststore.location"]) == ("PEM", "/etc/ca.pem")


def test_java_client_properties_map_pem_keystores(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "c.pem").write_text("-----BEGIN CERTIFICATE-----\nC\n-----END CERTIFICATE-----\n")
    (tmp_path / "k.pem").write_text("-----BEGIN PRIVATE KEY-----\nK\n-----END PRIVATE KEY-----\n")
    j = logdirs.java_client_properties(
        {
            "security.protocol": "SSL",
            "ssl.certificate.location": str(tmp_path / "c.pem"),
            "ssl.key.location": str(tmp_path / "k.pem"),
            "ssl.key.password": "kp",
        }
    )
    assert j["ssl.keystore.type"] == "PEM" and "BEGIN PRIVATE KEY" in j["ssl.keystore.key"]
    assert "BEGIN CERTIFICATE" in j["ssl.keystore.certificate.chain"] and j["ssl.key.password"] == "kp"
    assert "ssl.key.location" not in j
