"""Proof against a real broker (Kafka 4.1, local KRaft cluster): segments written by the broker
from librdkafka (kbench's C producer) and from Kafka's Java ``ProducerPerformance``, for every
codec, are read by ``kbench inspect`` with the same per-batch offsets, counts, sizes and codecs
that ``DumpLogSegments`` prints; and for the same records and batch boundaries kbench's encoder
(the one the simulated transport's producer and broker stages use) predicts the stored bytes
within 1 %.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kbench.cli import main as cli_main
from kbench.kafka import admin, kafka_dist
from kbench.kafka.drivers import ProducerSpec, produce
from kbench.model import batch, segment
from kbench.model.simulator import predict_stored_bytes

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
N = 3000
pytestmark = pytest.mark.kafka


def _partition_dir(cluster, topic: str) -> Path:
    dirs = [Path(d) / f"{topic}-0" for d in cluster.log_dirs]
    found = [d for d in dirs if (d / "00000000000000000000.log").exists()]
    assert len(found) == 1, dirs
    return found[0]


def _produce_librdkafka(cluster, topic: str, codec: str, records) -> None:
    spec = ProducerSpec(
        topic=topic,
        props=cluster.client_props(
            **{"compression.type": codec, "linger.ms": "20", "batch.size": "65536", "acks": "1"}
        ),
        mode="saturated",
        count=N,
    )
    r = produce(spec, records)
    assert (r.delivered, r.failed) == (N, 0)


def _produce_java(cluster, topic: str, codec: str, payload_file: Path) -> None:
    cmd = kafka_dist.java_command(
        "org.apache.kafka.tools.ProducerPerformance",
        [
            "--topic",
            topic,
            "--num-records",
            str(N),
            "--payload-file",
            str(payload_file),
            "--throughput",
            "-1",
            "--producer-props",
            f"bootstrap.servers={cluster.bootstrap_servers}",
            f"compression.type={codec}",
            "linger.ms=20",
            "batch.size=65536",
            "acks=1",
        ],
        heap="256m",
        jvm_opts=["-Dlog4j2.level=WARN"],
    )
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"{N} records sent" in proc.stdout, proc.stdout[-2000:]


@pytest.fixture(scope="module")
def broker_segments(kafka1, json_records, tmp_path_factory) -> dict[tuple[str, str], Path]:
    payload = tmp_path_factory.mktemp("payload") / "records.txt"
    payload.write_bytes(b"\n".join(json_records) + b"\n")
    out = {}
    for codec in CODECS:
        for client in ("librdkafka", "java"):
            topic = f"seg-{client}-{codec}"
            admin.create_topic(kafka1.client_props(), topic, partitions=1, replication_factor=1)
            if client == "librdkafka":
                _produce_librdkafka(kafka1, topic, codec, json_records)
            else:
                _produce_java(kafka1, topic, codec, payload)
            out[(client, codec)] = _partition_dir(kafka1, topic)
    return out


def test_inspect_matches_dump_log_segments_on_broker_segments(broker_segments, dump_log_segments) -> None:
    files = {k: d / "00000000000000000000.log" for k, d in broker_segments.items()}
    dumped = dump_log_segments(list(files.values()))
    for (client, codec), f in files.items():
        ours = segment.scan_file(f)
        theirs = dumped[str(f)]
        assert len(ours) == len(theirs) > 1, (client, codec)
        assert sum(r.records for r in ours) == N
        for o, t in zip(ours, theirs):
            assert o.status == "ok" and o.crc_valid and t["isvalid"] == "true"
            assert (o.base_offset, o.last_offset, o.records, o.position, o.stored_bytes) == (
                int(t["baseOffset"]),
                int(t["lastOffset"]),
                int(t["count"]),
                int(t["position"]),
                int(t["size"]),
            )
            assert o.codec == t["compresscodec"]
            assert o.partition_leader_epoch == int(t["partitionLeaderEpoch"])
        stored = {r.codec for r in ours}
        # librdkafka may send a batch uncompressed when compression does not shrink it
        assert stored == {codec} or (client == "librdkafka" and stored <= {codec, "none"}), (client, codec, stored)


def test_inspect_prints_summary_on_a_partition_directory(broker_segments, capsys) -> None:
    d = broker_segments[("java", "zstd")]
    assert cli_main(["inspect", str(d)]) == 0
    out = capsys.readouterr().out
    assert f"{N} records" in out and "codecs: zstd" in out and "stored batch bytes: p50" in out


@pytest.mark.parametrize("client", ["librdkafka", "java"])
def test_sim_encoder_predicts_broker_stored_bytes(broker_segments, client: str) -> None:
    for codec in CODECS:
        f = broker_segments[(client, codec)] / "00000000000000000000.log"
        data = f.read_bytes()
        groups = []
        for r in segment.scan_file(f):
            b = batch.decode(data[r.position : r.position + r.stored_bytes])
            groups.append(b.records)
        actual = len(data)
        predicted = predict_stored_bytes(groups, codec, client=client)
        assert abs(predicted - actual) <= 0.01 * actual, (client, codec, predicted, actual)
