"""The simulated transport: batch, compress, validate, store and consume a corpus without a cluster.

Producer, broker and consumer run as three native threads inside ``kbench._native.sim_run``
(``csrc/sim.c``); the producer's batching follows ``docs/batching-model.md``.  The broker writes
real segment files (``<out>/<topic>-<p>/00000000000000000000.log``) that Kafka's own
``DumpLogSegments`` and ``kbench inspect`` read.
"""

from __future__ import annotations

import array
import csv
import io
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kbench import _native
from kbench.model import codecs
from kbench.model.batch import Record
from kbench.model.corpus import Corpus
from kbench.model.csvcell import safe_row
from kbench.model.paths import atomic_write
from kbench.model.stats import distribution

__all__ = ["SimBatch", "SimConfig", "SimResult", "StageResult", "predict_stored_bytes", "run", "write_csv"]

ROLES = ("producer", "broker", "consumer")


@dataclass(frozen=True)
class SimConfig:
    codec: str = "none"
    level: int | None = None
    topic_compression: str | None = None  # None / "producer": keep the producer's codec
    topic_level: int | None = None
    client: str = "java"  # java | librdkafka
    batch_size: int = 16384
    linger_ms: float = 5.0
    partitions: int = 1
    rate: float = 10_000.0
    arrival: str = "fixed"  # fixed | poisson
    partitioner: str = "default"  # default (murmur2 keys, sticky null keys) | round-robin
    keys: int = 0  # 0: null keys; N: keys drawn from N distinct values
    seed: int = 1
    topic: str = "kbench-sim"
    start_ts_ms: int | None = None  # CreateTime of the first record; None = now
    max_uncompressed: int = 256 << 20

    def validate(self) -> None:
        if self.client not in ("java", "librdkafka"):
            raise ValueError(f"unknown client '{self.client}'; use java or librdkafka")
        if self.arrival not in ("fixed", "poisson"):
            raise ValueError(f"unknown arrival '{self.arrival}'; use fixed or poisson")
        if self.partitioner not in ("default", "round-robin"):
            raise ValueError(f"unknown partitioner '{self.partitioner}'; use default or round-robin")
        if self.partitions < 1:
            raise ValueError(f"--partitions must be >= 1, got {self.partitions}")
        if self.batch_size < 0:
            raise ValueError(f"--batch-size must be >= 0, got {self.batch_size}")
        if self.linger_ms < 0:
            raise ValueError(f"--linger-ms must be >= 0, got {self.linger_ms}")
        if self.rate <= 0:
            raise ValueError(f"--rate must be > 0 records/s, got {self.rate}")
        if self.keys < 0:
            raise ValueError(f"--keys must be >= 0, got {self.keys}")
        if "/" in self.topic or not self.topic:
            raise ValueError(f"bad topic name '{self.topic}'")


@dataclass(frozen=True)
class StageResult:
    role: str
    cpu_s: float
    wall_s: float
    bytes_in: int
    bytes_out: int
    batches: int
    records: int


@dataclass(frozen=True)
class SimBatch:
    partition: int
    records: int
    raw_bytes: int  # uncompressed records region
    produced_bytes: int  # the batch as the producer sent it
    produced_codec: str
    close_reason: str  # full | linger | flush
    t_open_ms: float
    t_close_ms: float
    base_offset: int
    position: int
    stored_bytes: int
    stored_codec: str


@dataclass(frozen=True)
class SimResult:
    config: SimConfig
    corpus: str
    corpus_sha256: str
    corpus_entropy: float
    payload_bytes: int
    raw_batch_bytes: int
    produced_bytes: int
    stored_bytes: int
    recompressed: int
    verified: int
    mismatches: int
    stages: dict[str, StageResult]
    batches: tuple[SimBatch, ...] = field(repr=False)
    segment_dir: Path = Path(".")

    @property
    def stored_ratio(self) -> float:
        """Uncompressed batch bytes (61-byte headers + raw records) over stored bytes."""
        return self.raw_batch_bytes / self.stored_bytes if self.stored_bytes else float("nan")

    @property
    def payload_ratio(self) -> float:
        """Record value bytes over stored bytes."""
        return self.payload_bytes / self.stored_bytes if self.stored_bytes else float("nan")

    def cpu_s_per_gb(self, role: str) -> float:
        """CPU-seconds of a role per GB (1e9 bytes) of uncompressed payload."""
        return self.stages[role].cpu_s / (self.payload_bytes / 1e9) if self.payload_bytes else float("nan")

    @property
    def stored_codecs(self) -> dict[str, int]:
        return dict(Counter(b.stored_codec for b in self.batches))

    @property
    def close_reasons(self) -> dict[str, int]:
        return dict(Counter(b.close_reason for b in self.batches))

    def row(self) -> dict[str, object]:
        """One tidy CSV row for this run."""
        c = self.config
        rec = distribution([b.records for b in self.batches])
        size = distribution([b.stored_bytes for b in self.batches])
        raw = distribution([b.raw_bytes for b in self.batches])
        reasons = self.close_reasons
        row: dict[str, object] = {
            "status": "OK" if self.mismatches == 0 else "FAILED_VERIFY",
            "corpus": self.corpus,
            "corpus_sha256": self.corpus_sha256,
            "entropy_bits_per_byte": round(self.corpus_entropy, 4),
            "client": c.client,
            "codec": str(codecs.CodecSpec(c.codec, c.level)),
            "topic_compression": c.topic_compression or "producer",
            "batch_size": c.batch_size,
            "linger_ms": c.linger_ms,
            "partitions": c.partitions,
            "rate": c.rate,
            "arrival": c.arrival,
            "partitioner": c.partitioner,
            "keys": c.keys,
            "seed": c.seed,
            "records": self.stages["producer"].records,
            "payload_bytes": self.payload_bytes,
            "raw_batch_bytes": self.raw_batch_bytes,
            "produced_bytes": self.produced_bytes,
            "stored_bytes": self.stored_bytes,
            "stored_ratio": round(self.stored_ratio, 4),
            "payload_ratio": round(self.payload_ratio, 4),
            "stored_codecs": ";".join(f"{k}={v}" for k, v in sorted(self.stored_codecs.items())),
            "recompressed_batches": self.recompressed,
            "batches": len(self.batches),
            "records_per_batch_p50": rec["p50"],
            "records_per_batch_p90": rec["p90"],
            "records_per_batch_p99": rec["p99"],
            "records_per_batch_max": rec["max"],
            "stored_batch_bytes_p50": size["p50"],
            "stored_batch_bytes_p90": size["p90"],
            "stored_batch_bytes_p99": size["p99"],
            "stored_batch_bytes_max": size["max"],
            "raw_batch_bytes_p50": raw["p50"],
            "closed_full": reasons.get("full", 0),
            "closed_linger": reasons.get("linger", 0),
            "closed_flush": reasons.get("flush", 0),
            "verified_records": self.verified,
            "mismatches": self.mismatches,
        }
        for role in ROLES:
            st = self.stages[role]
            row[f"{role}_cpu_s"] = round(st.cpu_s, 6)
            row[f"{role}_cpu_s_per_gb"] = round(self.cpu_s_per_gb(role), 4)
            row[f"{role}_bytes_in"] = st.bytes_in
            row[f"{role}_bytes_out"] = st.bytes_out
        return row


def _offsets(records: Sequence[bytes]) -> array.array:
    offs = array.array("Q", [0]) * (len(records) + 1)
    acc = 0
    for i, r in enumerate(records):
        acc += len(r)
        offs[i + 1] = acc
    return offs


def run(corpus: Corpus, config: SimConfig, out_dir: Path | str) -> SimResult:
    """Run the three stages over every record of the corpus; segments go under out_dir."""
    config.validate()
    if not corpus.records:
        raise ValueError("the corpus has no records")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tc = config.topic_compression
    topic_codec = None if tc in (None, "producer") else codecs.batch_codec(tc)
    start = config.start_ts_ms if config.start_ts_ms is not None else int(time.time() * 1000)
    res = _native.sim_run(
        corpus.payload,
        _offsets(corpus.records),
        str(out),
        config.topic,
        config.client,
        config.codec,
        config.level,
        topic_codec,
        config.topic_level,
        config.partitions,
        config.partitioner,
        config.batch_size,
        float(config.linger_ms),
        float(config.rate),
        config.arrival == "poisson",
        config.seed,
        config.keys,
        start,
        config.max_uncompressed,
    )
    stages = {
        role: StageResult(
            role,
            res[role]["cpu_ns"] / 1e9,
            res[role]["wall_ns"] / 1e9,
            res[role]["bytes_in"],
            res[role]["bytes_out"],
            res[role]["batches"],
            res[role]["records"],
        )
        for role in ROLES
    }
    batches = tuple(SimBatch(*t) for t in res["batches"])
    return SimResult(
        config=config,
        corpus=corpus.name,
        corpus_sha256=corpus.sha256,
        corpus_entropy=corpus.entropy,
        payload_bytes=res["payload_bytes"],
        raw_batch_bytes=res["raw_batch_bytes"],
        produced_bytes=res["produced_bytes"],
        stored_bytes=res["stored_bytes"],
        recompressed=res["recompressed"],
        verified=res["verified"],
        mismatches=res["mismatches"],
        stages=stages,
        batches=batches,
        segment_dir=out,
    )


def write_csv(results: Sequence[SimResult], path: Path | str) -> Path:
    """Write one row per run, atomically (temporary file then rename)."""
    p = Path(path)
    if not results:
        raise ValueError("no results to write")
    rows = [r.row() for r in results]
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(safe_row(r) for r in rows)
    return atomic_write(p, buf.getvalue().encode())  # no temporary file left, even when the rename fails


def predict_stored_bytes(
    batches: Sequence[Sequence[Record]],
    codec: str,
    level: int | None = None,
    *,
    client: str = "java",
    topic_compression: str | None = None,
    topic_level: int | None = None,
) -> int:
    """Stored bytes for given records and batch boundaries: each group is encoded by the same C
    encoder the simulated producer uses (client rules: librdkafka falls back to uncompressed when
    compression grows a batch) and, when the topic names another codec, rebuilt with it as the
    simulated broker does.  Used to check the simulation against a real broker's segments."""
    from kbench.model import batch as batch_mod

    total = 0
    for recs in batches:
        data, stored = batch_mod.encode_ex(list(recs), codec, level, client=client)
        if topic_compression not in (None, "producer") and topic_compression != stored:
            data = batch_mod.encode(list(recs), topic_compression, topic_level)
        total += len(data)
    return total
