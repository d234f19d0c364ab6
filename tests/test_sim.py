"""The batching model and the simulated transport."""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import pytest

from kbench import _native
from kbench.cli import main as cli_main
from kbench.model import batch, corpus, segment
from kbench.model import simulator as sim

TS = 1_700_000_000_000


@pytest.fixture(scope="module")
def json_corpus() -> corpus.Corpus:
    return corpus.load("json", size=2 << 20)


def test_murmur2_matches_java_utils() -> None:
    # org.apache.kafka.common.utils.UtilsTest.testMurmur2
    cases = {
        b"21": -973932308,
        b"foobar": -790332482,
        b"a-little-bit-long-string": -985981536,
        b"a-little-bit-longer-string": -1486304829,
        b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
        b"abc": 479470107,
    }
    for data, h in cases.items():
        assert _native.murmur2(data) == h
    assert _native.partition_for_key(b"foobar", 7) == (-790332482 & 0x7FFFFFFF) % 7


def _run(c: corpus.Corpus, tmp: Path, **kw) -> sim.SimResult:
    kw.setdefault("start_ts_ms", TS)
    return sim.run(c, sim.SimConfig(**kw), tmp)


def test_every_record_verified_and_segments_match(json_corpus: corpus.Corpus, tmp_path: Path) -> None:
    r = _run(json_corpus, tmp_path, codec="zstd", partitions=4, rate=45_000, keys=64)
    assert r.mismatches == 0 and r.verified == len(json_corpus.records)
    rows = segment.scan_paths([tmp_path])
    assert all(x.status == "ok" and x.crc_valid for x in rows)
    assert sum(x.stored_bytes for x in rows) == r.stored_bytes
    assert sum(x.records for x in rows) == len(json_corpus.records)
    # the batch ratio's numerator is the stored batches' uncompressed size (61-byte header + raw
    # records region, read back from the segments), not the record values' bytes
    assert r.raw_batch_bytes == sum(x.uncompressed_batch_bytes or 0 for x in rows)
    assert r.raw_batch_bytes > r.payload_bytes
    # keyed records land where Java's partitioner puts them
    for d in sorted(tmp_path.glob("kbench-sim-*")):
        p = int(d.name.rsplit("-", 1)[1])
        data = (d / "00000000000000000000.log").read_bytes()
        for b in segment.scan_file(d / "00000000000000000000.log"):
            for rec in batch.decode(data[b.position : b.position + b.stored_bytes]).records:
                assert _native.partition_for_key(rec.key, 4) == p
    for role in sim.ROLES:
        assert r.stages[role].cpu_s > 0
    assert r.stages["broker"].bytes_in == r.produced_bytes


def test_ratio_rises_with_batch_size(json_corpus: corpus.Corpus, tmp_path: Path) -> None:
    for codec in ("lz4", "zstd"):
        ratios = [
            _run(
                json_corpus,
                tmp_path / f"{codec}{bs}",
                codec=codec,
                batch_size=bs,
                linger_ms=100,
                partitions=8,
                rate=45_000,
            ).stored_ratio
            for bs in (16 << 10, 64 << 10, 1 << 20)
        ]
        assert ratios[0] < ratios[1] < ratios[2], (codec, ratios)
    none = _run(json_corpus, tmp_path / "none", codec="none")
    assert none.stored_ratio == 1.0


def test_topic_compression_recompresses_on_the_broker(json_corpus: corpus.Corpus, tmp_path: Path) -> None:
    same = _run(json_corpus, tmp_path / "a", codec="zstd", partitions=8, rate=45_000)
    other = _run(json_corpus, tmp_path / "b", codec="zstd", partitions=8, rate=45_000, topic_compression="lz4")
    assert same.stored_codecs == {"zstd": len(same.batches)} and same.recompressed == 0
    assert other.stored_codecs == {"lz4": len(other.batches)} and other.recompressed == len(other.batches)
    assert {b.codec for b in segment.scan_paths([tmp_path / "b"])} == {"lz4"}
    assert other.mismatches == 0
    # the broker now compresses as well as validating: its thread CPU rises.  gzip compresses
    # ~10x slower than zstd decompresses, so the rise stands far above scheduling noise.
    gz = _run(json_corpus, tmp_path / "g", codec="zstd", partitions=8, rate=45_000, topic_compression="gzip")
    assert gz.stored_codecs == {"gzip": len(gz.batches)}
    assert gz.stages["broker"].cpu_s > same.stages["broker"].cpu_s * 2
    level_only = _run(
        json_corpus, tmp_path / "c", codec="zstd", level=3, partitions=8, topic_compression="zstd", topic_level=9
    )
    assert level_only.recompressed == 0  # a level difference alone does not recompress


def test_close_reasons_and_java_fill(json_corpus: corpus.Corpus, tmp_path: Path) -> None:
    slow = _run(json_corpus, tmp_path / "slow", codec="lz4", batch_size=1 << 20, linger_ms=5, rate=1000)
    assert set(slow.close_reasons) <= {"linger", "flush"} and slow.close_reasons["linger"] > 0
    assert all(b.records <= 6 for b in slow.batches)  # 1000/s for 5 ms
    fast = _run(json_corpus, tmp_path / "fast", codec="none", batch_size=16384, linger_ms=1000, rate=1e6)
    full = [b for b in fast.batches if b.close_reason == "full"]
    assert len(full) >= len(fast.batches) - 2
    # Java, uncompressed: a batch closes when the next record would pass batch.size
    assert all(b.produced_bytes <= 16384 for b in full)
    assert max(b.produced_bytes for b in full) > 16384 - 1500


def test_java_estimates_compressed_size(json_corpus: corpus.Corpus, tmp_path: Path) -> None:
    r = _run(json_corpus, tmp_path, codec="zstd", batch_size=16384, linger_ms=1000, rate=1e6)
    full = [b for b in r.batches if b.close_reason == "full"]
    # CompressionRatioEstimator starts at 1.0 (x1.05): the first batches hold < 16 KiB of records ...
    assert all(b.raw_bytes < 16384 for b in full[:3])
    # ... then it improves by 0.005 per batch, so later batches hold more records than batch.size
    first = sum(b.raw_bytes for b in full[:10]) / 10
    last = sum(b.raw_bytes for b in full[-10:]) / 10
    assert last > 1.7 * first and last > 16384 * 1.5
    assert all(b.stored_bytes <= 16384 * 1.1 for b in full)


def test_librdkafka_limits_uncompressed_bytes(json_corpus: corpus.Corpus, tmp_path: Path) -> None:
    r = _run(json_corpus, tmp_path, client="librdkafka", codec="zstd", batch_size=16384, linger_ms=1000, rate=1e6)
    full = [b for b in r.batches if b.close_reason == "full"]
    assert full and all(61 + b.raw_bytes + 47 + len("kbench-sim") <= 16384 for b in full)
    rows = segment.scan_paths([tmp_path])
    assert {x.partition_leader_epoch for x in rows} == {0}


def test_librdkafka_falls_back_to_uncompressed(tmp_path: Path) -> None:
    c = corpus.load("random", size=64 << 10)
    r = _run(c, tmp_path / "r", client="librdkafka", codec="gzip", batch_size=4096, rate=1e6)
    j = _run(c, tmp_path / "j", client="java", codec="gzip", batch_size=4096, rate=1e6)
    assert j.stored_codecs == {"gzip": len(j.batches)}
    # random printable ASCII still shrinks a little under gzip; random bytes would not: check with bytes
    rb = corpus.Corpus("bytes", tuple(bytes((i * 7919 + k * 104729) % 251 for k in range(300)) for i in range(200)))
    rr = _run(rb, tmp_path / "rb", client="librdkafka", codec="lz4", batch_size=4096, rate=1e6)
    assert r.mismatches == rr.mismatches == 0
    assert sum(1 for b in rr.batches if b.produced_codec == "none") + sum(
        1 for b in rr.batches if b.produced_codec == "lz4"
    ) == len(rr.batches)


def test_round_robin_and_sticky(json_corpus: corpus.Corpus, tmp_path: Path) -> None:
    rr = _run(json_corpus, tmp_path / "rr", partitioner="round-robin", partitions=5, linger_ms=1000, rate=1e6)
    counts = defaultdict(int)
    for b in rr.batches:
        counts[b.partition] += b.records
    assert max(counts.values()) - min(counts.values()) <= 1
    sticky = _run(json_corpus, tmp_path / "st", partitions=5, linger_ms=1000, rate=1e6, batch_size=16384)
    full = [b for b in sticky.batches if b.close_reason == "full"]
    assert len({b.partition for b in sticky.batches}) > 1
    # sticky: a partition receives whole batches' worth of records before switching
    assert sum(b.produced_bytes for b in full) / len(full) > 12_000


def test_poisson_arrivals_are_seeded(json_corpus: corpus.Corpus, tmp_path: Path) -> None:
    a = _run(json_corpus, tmp_path / "a", arrival="poisson", rate=20_000, seed=3, partitions=3)
    b = _run(json_corpus, tmp_path / "b", arrival="poisson", rate=20_000, seed=3, partitions=3)
    c = _run(json_corpus, tmp_path / "c", arrival="poisson", rate=20_000, seed=4, partitions=3)
    key = lambda r: [(x.partition, x.records, x.close_reason) for x in r.batches]  # noqa: E731
    assert key(a) == key(b) != key(c)


def test_bad_config_is_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["sim", "--partitions", "0", "--corpus-size", "64KiB"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--partitions: 0 is out of range" in err[0]
    assert cli_main(["sim", "--batch-size", "16QB"]) == 2
    assert "bad size '16QB'" in capsys.readouterr().err


def test_sim_cli_prints_and_writes_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sim.csv"
    rc = cli_main(
        [
            "sim",
            "--corpus",
            "json",
            "--corpus-size",
            "1MiB",
            "--codec",
            "none",
            "--codec",
            "lz4",
            "--codec",
            "zstd:3",
            "--batch-size",
            "16KiB",
            "--batch-size",
            "1MiB",
            "--linger-ms",
            "100",
            "--partitions",
            "4",
            "--rate",
            "45000",
            "--csv",
            str(out),
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert "ratio" in text and "broker" in text
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 6 and all(r["status"] == "OK" for r in rows)
    by = {(r["codec"], r["batch_size"]): float(r["stored_ratio"]) for r in rows}
    assert by[("zstd:3", str(1 << 20))] > by[("zstd:3", "16384")] > by[("none", "16384")] == 1.0
    for r in rows:
        for role in sim.ROLES:
            assert float(r[f"{role}_cpu_s_per_gb"]) > 0
    assert not list(tmp_path.glob(".*tmp*"))


def test_topic_compression_uncompressed_decompresses_on_the_broker(json_corpus: corpus.Corpus, tmp_path: Path) -> None:
    r = _run(json_corpus, tmp_path, codec="lz4", partitions=2, topic_compression="uncompressed")
    assert r.stored_codecs == {"none": len(r.batches)} and r.recompressed == len(r.batches)
    assert r.stored_ratio == 1.0 and r.mismatches == 0
