"""The simulator's Python side, figure by figure: the CSV row a SimResult becomes (every column
against a hand-written value), its ratios and CPU-s/GB, the config bounds, the corpus offsets,
the CSV writer, and the stored-bytes prediction against the simulation's own segments.  Pure
Python (one small native run at the end), no Kafka: these are the tests the mutation run uses."""

from __future__ import annotations

import csv
import math
import random
from pathlib import Path

import pytest

from kbench.model import batch, corpus
from kbench.model import simulator as sim

TS = 1_700_000_000_000


def _batch(part: int, records: int, raw: int, stored: int, reason: str, codec: str = "zstd") -> sim.SimBatch:
    return sim.SimBatch(part, records, raw, stored + 3, "zstd", reason, 0.0, 1.0, 0, 0, stored, codec)


def _result(mismatches: int = 0, payload: int = 2_000_000_000) -> sim.SimResult:
    cfg = sim.SimConfig(
        codec="zstd",
        level=3,
        topic_compression="lz4",
        client="librdkafka",
        batch_size=4096,
        linger_ms=7.5,
        partitions=3,
        rate=1234.0,
        arrival="poisson",
        partitioner="round-robin",
        keys=9,
        seed=42,
    )
    stages = {
        "producer": sim.StageResult("producer", 1.23456789, 2.0, 11, 12, 4, 100),
        "broker": sim.StageResult("broker", 0.25, 2.5, 21, 22, 5, 101),
        "consumer": sim.StageResult("consumer", 0.125, 3.0, 31, 32, 6, 102),
    }
    batches = (
        _batch(0, 10, 1000, 100, "full"),
        _batch(1, 20, 2000, 300, "linger", codec="lz4"),
        _batch(2, 30, 3000, 200, "linger", codec="lz4"),
        _batch(0, 40, 4000, 400, "flush", codec="lz4"),
    )
    return sim.SimResult(
        config=cfg,
        corpus="json",
        corpus_sha256="ab" * 32,
        corpus_entropy=5.123456,
        payload_bytes=payload,
        raw_batch_bytes=3_000_000_000,
        produced_bytes=900_000,
        stored_bytes=700_000_000,
        recompressed=3,
        verified=100 - mismatches,
        mismatches=mismatches,
        stages=stages,
        batches=batches,
    )


def test_row_is_every_figure_of_the_result() -> None:
    r = _result()
    assert r.stored_ratio == 3e9 / 7e8 and r.payload_ratio == 2e9 / 7e8
    assert r.cpu_s_per_gb("producer") == 1.23456789 / 2 and r.cpu_s_per_gb("consumer") == 0.0625
    assert r.stored_codecs == {"zstd": 1, "lz4": 3}
    assert r.close_reasons == {"full": 1, "linger": 2, "flush": 1}
    assert r.row() == {
        "status": "OK",
        "corpus": "json",
        "corpus_sha256": "ab" * 32,
        "entropy_bits_per_byte": 5.1235,
        "client": "librdkafka",
        "codec": "zstd:3",
        "topic_compression": "lz4",
        "batch_size": 4096,
        "linger_ms": 7.5,
        "partitions": 3,
        "rate": 1234.0,
        "arrival": "poisson",
        "partitioner": "round-robin",
        "keys": 9,
        "seed": 42,
        "records": 100,
        "payload_bytes": 2_000_000_000,
        "raw_batch_bytes": 3_000_000_000,
        "produced_bytes": 900_000,
        "stored_bytes": 700_000_000,
        "stored_ratio": 4.2857,  # 4 decimals
        "payload_ratio": 2.8571,
        "stored_codecs": "lz4=3;zstd=1",
        "recompressed_batches": 3,
        "batches": 4,
        "records_per_batch_p50": 20.0,
        "records_per_batch_p90": 40.0,
        "records_per_batch_p99": 40.0,
        "records_per_batch_max": 40.0,
        "stored_batch_bytes_p50": 200.0,
        "stored_batch_bytes_p90": 400.0,
        "stored_batch_bytes_p99": 400.0,
        "stored_batch_bytes_max": 400.0,
        "raw_batch_bytes_p50": 2000.0,
        "closed_full": 1,
        "closed_linger": 2,
        "closed_flush": 1,
        "verified_records": 100,
        "mismatches": 0,
        "producer_cpu_s": 1.234568,  # 6 decimals
        "producer_cpu_s_per_gb": 0.6173,  # 4 decimals
        "producer_bytes_in": 11,
        "producer_bytes_out": 12,
        "broker_cpu_s": 0.25,
        "broker_cpu_s_per_gb": 0.125,
        "broker_bytes_in": 21,
        "broker_bytes_out": 22,
        "consumer_cpu_s": 0.125,
        "consumer_cpu_s_per_gb": 0.0625,
        "consumer_bytes_in": 31,
        "consumer_bytes_out": 32,
    }


def test_row_of_a_mismatch_and_of_nothing_stored() -> None:
    row = _result(mismatches=2).row()
    assert row["status"] == "FAILED_VERIFY" and row["mismatches"] == 2 and row["verified_records"] == 98
    r = _result(payload=0)
    assert math.isnan(r.cpu_s_per_gb("broker")) and r.payload_ratio == 0.0
    empty = sim.SimResult(**{**r.__dict__, "stored_bytes": 0, "batches": ()})
    assert math.isnan(empty.stored_ratio) and math.isnan(empty.payload_ratio)
    assert (empty.row()["closed_full"], empty.row()["closed_linger"], empty.row()["closed_flush"]) == (0, 0, 0)
    assert sim.SimResult(**{**r.__dict__, "config": sim.SimConfig()}).row()["topic_compression"] == "producer"


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"client": "go"}, "unknown client 'go'; use java or librdkafka"),
        ({"arrival": "burst"}, "unknown arrival 'burst'; use fixed or poisson"),
        ({"partitioner": "hash"}, "unknown partitioner 'hash'; use default or round-robin"),
        ({"partitions": 0}, "--partitions must be >= 1, got 0"),
        ({"batch_size": -1}, "--batch-size must be >= 0, got -1"),
        ({"linger_ms": -0.5}, "--linger-ms must be >= 0, got -0.5"),
        ({"rate": 0.0}, "--rate must be > 0 records/s, got 0.0"),
        ({"keys": -1}, "--keys must be >= 0, got -1"),
        ({"topic": "a/b"}, "bad topic name 'a/b'"),
        ({"topic": ""}, "bad topic name ''"),
    ],
)
def test_config_bounds_name_the_value(kw: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError) as e:
        sim.SimConfig(**kw).validate()  # type: ignore[arg-type]
    assert str(e.value) == message


def test_config_edges_that_are_allowed() -> None:
    for kw in (
        {"client": "java"},
        {"client": "librdkafka", "arrival": "poisson", "partitioner": "round-robin"},
        {"partitions": 1, "batch_size": 0, "linger_ms": 0.0, "rate": 0.001, "keys": 0},
    ):
        sim.SimConfig(**kw).validate()  # type: ignore[arg-type]


def test_offsets_are_the_cumulative_record_lengths() -> None:
    assert list(sim._offsets([b"ab", b"", b"cde"])) == [0, 2, 2, 5]
    assert list(sim._offsets([])) == [0]


def test_write_csv_is_one_row_per_result(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as e:
        sim.write_csv([], tmp_path / "x.csv")
    assert str(e.value) == "no results to write"
    assert not (tmp_path / "x.csv").exists()
    a, b = _result(), _result(mismatches=1)
    out = sim.write_csv([a, b], tmp_path / "s.csv")
    assert out == tmp_path / "s.csv"
    assert out.read_bytes().count(b"\r\n") == 3  # header and two rows, the csv module's dialect
    rows = list(csv.DictReader(out.open(newline="")))
    assert list(rows[0]) == list(a.row())
    assert [r["status"] for r in rows] == ["OK", "FAILED_VERIFY"]
    assert rows[0]["stored_ratio"] == "4.2857" and rows[1]["mismatches"] == "1"
    assert len(list(csv.DictReader(sim.write_csv([a], tmp_path / "one.csv").open(newline="")))) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.csv", "s.csv"]


def _decoded_groups(seg: Path, r: sim.SimResult) -> list[list[batch.Record]]:
    log = (seg / f"{r.config.topic}-0" / "00000000000000000000.log").read_bytes()
    return [list(batch.decode(log[b.position : b.position + b.stored_bytes]).records) for b in r.batches]


def test_run_and_prediction_agree_on_the_segments(tmp_path: Path) -> None:
    """A short native run: its config reaches C (timestamps, topic, records), its stage figures
    are the C counters, and predict_stored_bytes (the batch encoder, another code path) rebuilds
    the stored bytes of the run's own batches, also when the topic recompresses them."""
    c = corpus.load("json", size=64 << 10)
    cfg = sim.SimConfig(codec="lz4", batch_size=4096, linger_ms=2.0, rate=20_000.0, start_ts_ms=TS, topic="t1")
    with pytest.raises(ValueError, match="the corpus has no records"):
        sim.run(corpus.Corpus("empty", ()), cfg, tmp_path / "none")
    seg = tmp_path / "seg"
    r = sim.run(c, cfg, seg)
    assert r.segment_dir == seg and r.config is cfg
    assert r.corpus == c.name and r.corpus_sha256 == c.sha256 and r.corpus_entropy == c.entropy
    assert r.payload_bytes == sum(len(x) for x in c.records) and r.verified == len(c.records)
    assert sorted(p.name for p in seg.iterdir()) == ["t1-0"]
    assert r.stages["producer"].records == len(c.records) == sum(b.records for b in r.batches)
    assert r.stages["producer"].batches == len(r.batches) > 1
    assert all(s.role == role and s.wall_s > 0 and s.cpu_s >= 0 for role, s in r.stages.items())
    assert (
        r.stored_bytes
        == sum(b.stored_bytes for b in r.batches)
        == (seg / "t1-0" / "00000000000000000000.log").stat().st_size
    )
    groups = _decoded_groups(seg, r)
    assert groups[0][0].timestamp == TS and groups[0][0].value == c.records[0]
    assert sim.predict_stored_bytes(groups, "lz4") == r.stored_bytes
    seg2 = tmp_path / "seg2"
    r2 = sim.run(c, sim.SimConfig(**{**cfg.__dict__, "topic_compression": "uncompressed"}), seg2)
    assert [b.records for b in r2.batches] == [b.records for b in r.batches]
    assert sim.predict_stored_bytes(groups, "lz4", topic_compression="none") == r2.stored_bytes > r.stored_bytes
    assert sim.predict_stored_bytes(groups, "lz4", topic_compression="lz4") == r.stored_bytes
    assert sim.predict_stored_bytes(groups, "lz4", topic_compression="producer") == r.stored_bytes
    z9 = sum(len(batch.encode(g, "zstd", 9)) for g in groups)
    assert sim.predict_stored_bytes(groups, "zstd", 9) == z9 != sim.predict_stored_bytes(groups, "zstd", 1)
    assert sim.predict_stored_bytes(groups, "lz4", topic_compression="zstd", topic_level=9) == z9
    rnd = random.Random(1)
    noise = [[batch.Record(value=rnd.randbytes(300)) for _ in range(8)]]
    fallback = sim.predict_stored_bytes(noise, "lz4", client="librdkafka")  # compression grows it: sent as none
    assert fallback == len(batch.encode(noise[0], "none", client="librdkafka")) < sim.predict_stored_bytes(noise, "lz4")
