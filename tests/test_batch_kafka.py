"""Proof against Kafka's own code: DumpLogSegments (Kafka 4.1 jars) reads what kbench writes.

Segments come from the simulated transport (its broker stage writes them) and from batches
encoded directly with every header feature; DumpLogSegments --deep-iteration must find every
batch valid with the same offsets, counts, positions, sizes, codecs and CRCs that kbench's own
inspector reports.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kbench.model import batch, corpus, segment
from kbench.model import simulator as sim
from kbench.model.batch import Header, Record

pytestmark = pytest.mark.kafka

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
TS = 1_700_000_000_000


def _direct_segment(path: Path, codec: str) -> Path:
    batches = []
    for b in range(6):
        recs = [
            Record(
                key=None if i % 4 == 0 else f"key-{b}-{i}".encode(),
                value=None if i == 3 else (f"value {b} {i} " * (i + 1)).encode(),
                timestamp=TS + b * 100 + i,
                headers=tuple(Header(f"h{j}", None if j else b"hv") for j in range(i % 3)),
            )
            for i in range(1 + b * 7)
        ]
        batches.append(
            batch.encode(
                recs,
                codec,
                level=None,
                client="librdkafka" if b % 2 else "java",
                producer_id=1000 + b if b >= 3 else -1,
                producer_epoch=0 if b >= 3 else -1,
                base_sequence=b * 10 if b >= 3 else -1,
                transactional=b == 5,
            )
        )
    return segment.write_segment(path, batches, leader_epoch=7)


@pytest.fixture(scope="module")
def segments(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    root = tmp_path_factory.mktemp("kafka-interop")
    corp = corpus.load("json", size=384 << 10)
    out: dict[str, list[Path]] = {}
    for codec in CODECS:
        files = []
        for client in ("java", "librdkafka"):
            cfg = sim.SimConfig(
                codec=codec,
                client=client,
                batch_size=8192,
                linger_ms=5,
                partitions=2,
                rate=20_000,
                keys=100,
                start_ts_ms=TS,
                topic=f"t-{client}",
            )
            r = sim.run(corp, cfg, root / codec)
            assert r.mismatches == 0 and r.verified == len(corp.records)
            files += sorted((root / codec).glob(f"t-{client}-*/*.log"))
        (root / codec / "direct-0").mkdir()
        files.append(_direct_segment(root / codec / "direct-0" / "00000000000000000000.log", codec))
        out[codec] = files
    return out


def test_dump_log_segments_reads_kbench_segments(segments: dict[str, list[Path]], dump_log_segments) -> None:
    all_files = [f for fs in segments.values() for f in fs]
    dumped = dump_log_segments(all_files)
    assert len(dumped) == len(all_files)
    for codec, files in segments.items():
        for f in files:
            theirs = dumped[str(f)]
            ours = segment.scan_file(f)
            assert ours and len(theirs) == len(ours), f
            for t, o in zip(theirs, ours):
                assert o.status == "ok"
                assert t["isvalid"] == "true"
                assert t["magic"] == "2"
                assert t["compresscodec"] == o.codec
                assert int(t["baseOffset"]) == o.base_offset
                assert int(t["lastOffset"]) == o.last_offset
                assert int(t["count"]) == o.records
                assert int(t["position"]) == o.position
                assert int(t["size"]) == o.stored_bytes
                assert int(t["crc"]) == batch.decode(f.read_bytes()[o.position : o.position + o.stored_bytes]).crc
                assert int(t["partitionLeaderEpoch"]) == o.partition_leader_epoch
                assert int(t["producerId"]) == o.producer_id
                assert int(t["CreateTime"]) == o.max_timestamp
            # every codec the test meant to write is what is stored
            if "direct" in f.parent.name or codec == "none":
                assert {o.codec for o in ours} == {codec}


def test_dump_log_segments_sees_every_record(segments: dict[str, list[Path]], tmp_path: Path) -> None:
    from kbench.kafka import kafka_dist

    files = [segments[c][-1] for c in CODECS]  # the direct segments: keys, nulls, headers, producer ids
    proc = kafka_dist.run_tool(
        "kafka.tools.DumpLogSegments", ["--deep-iteration", "--print-data-log", "--files", ",".join(map(str, files))]
    )
    theirs = [dict(re.findall(r"(\w+): (\S+)", ln)) for ln in proc.stdout.splitlines() if ln.startswith("| offset:")]
    ours = []
    for f in files:
        data = f.read_bytes()
        for b in segment.scan_file(f):
            ours.extend(batch.decode(data[b.position : b.position + b.stored_bytes]).records)
    assert len(theirs) == len(ours) > 0
    for t, o in zip(theirs, ours):
        assert int(t["offset"]) == o.offset
        assert int(t["CreateTime"]) == o.timestamp
        assert int(t["keySize"]) == (-1 if o.key is None else len(o.key))
        assert int(t["valueSize"]) == (-1 if o.value is None else len(o.value))
    header_lines = [ln for ln in proc.stdout.splitlines() if "headerKeys: [h0,h1]" in ln]
    assert len(header_lines) == sum(1 for o in ours if len(o.headers) == 2)
    assert any("isTransactional: true" in ln for ln in proc.stdout.splitlines())
