"""Helpers of the oracle tests (tests/test_oracles_*.py): a corpus file of known records,
RecordBatch v2 framing read with struct and decompressed by the Python codec bindings, Kafka's
DumpLogSegments totals, a broker that keeps deleted topics' files, and a keeper that hard-links
a running cluster's segment files.  No kbench code computes anything here.
"""

from __future__ import annotations

import json
import os
import random
import re
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import lz4.frame
import zstandard

from kbench.kafka import kafka_dist

BATCH_HEADER = 61  # RecordBatch v2: baseOffset .. recordsCount, before the records section


@contextmanager
def keeping_cluster(directory: Path) -> Iterator[object]:
    """One broker that keeps a deleted topic's files for an hour (``log.segment.delete.delay.ms``,
    the broker's default of the topics' ``file.delete.delay.ms``), so an oracle can read what
    kbench measured after kbench deleted the topic."""
    from kbench.kafka.cluster import LocalCluster

    with LocalCluster(brokers=1, directory=directory, broker_config={"log.segment.delete.delay.ms": "3600000"}) as c:
        yield c


def write_corpus(path: Path, n: int = 700, seed: int = 11) -> list[bytes]:
    """JSON-ish lines of varied length (compressible, never containing a newline)."""
    rnd = random.Random(seed)
    words = ["order", "item", "price", "user", "region", "eu-west", "us-east", "status", "paid", "open"]
    recs = []
    for i in range(n):
        obj = {
            "id": i,
            "user": f"u{rnd.randrange(5000)}",
            "items": [{"sku": rnd.choice(words), "qty": rnd.randrange(1, 9)} for _ in range(rnd.randrange(1, 6))],
            "note": " ".join(rnd.choice(words) for _ in range(rnd.randrange(0, 30))),
        }
        recs.append(json.dumps(obj).encode())
    path.write_bytes(b"\n".join(recs) + b"\n")
    return recs


def cycled_bytes(records: list[bytes], sent: int) -> int:
    """Bytes of ``sent`` records taken in order from ``records``, wrapping round."""
    whole, rest = divmod(sent, len(records))
    return whole * sum(map(len, records)) + sum(len(r) for r in records[:rest])


def decompress(codec_id: int, data: bytes) -> bytes:
    if codec_id == 0:
        return data
    if codec_id == 3:  # lz4: Kafka writes LZ4 frames
        return lz4.frame.decompress(data)
    if codec_id == 4:  # zstd
        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    raise AssertionError(f"codec id {codec_id} not expected in this plan")


def parse_log(path: Path) -> list[tuple[int, int, int]]:
    """(stored bytes, uncompressed batch bytes, records) per batch of one segment file,
    RecordBatch v2 framing read here with struct (no kbench code)."""
    data = path.read_bytes()
    out, pos = [], 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack_from(">i", data, pos + 8)
        size = 12 + length
        assert data[pos + 16] == 2, f"{path}@{pos}: magic {data[pos + 16]}"
        (attrs,) = struct.unpack_from(">h", data, pos + 21)
        (count,) = struct.unpack_from(">i", data, pos + 57)
        raw = decompress(attrs & 0x7, data[pos + BATCH_HEADER : pos + size])
        out.append((size, BATCH_HEADER + len(raw), count))
        pos += size
    assert pos == len(data), f"{path}: {len(data) - pos} trailing bytes"
    return out


def dump_log_segments(files: list[Path]) -> str:
    return kafka_dist.run_tool(
        "kafka.tools.DumpLogSegments", ["--deep-iteration", "--files", ",".join(map(str, files))], timeout=300
    ).stdout


def dump_totals(text: str) -> dict[str, int]:
    """Batch sizes, batch record counts and record valueSizes summed over DumpLogSegments' output."""
    batch = [line for line in text.splitlines() if line.startswith("baseOffset:")]
    recs = [line for line in text.splitlines() if line.lstrip().startswith("| offset:")]
    return {
        "batches": len(batch),
        "stored": sum(int(re.search(r"\bsize: (\d+)", b).group(1)) for b in batch),  # type: ignore[union-attr]
        "count": sum(int(re.search(r"\bcount: (\d+)", b).group(1)) for b in batch),  # type: ignore[union-attr]
        "records": len(recs),
        "values": sum(int(re.search(r"\bvalueSize: (\d+)", r).group(1)) for r in recs),  # type: ignore[union-attr]
    }


def dump_codecs(text: str) -> set[str]:
    """The codecs of the batches DumpLogSegments printed (``compresscodec: LZ4`` → ``lz4``)."""
    return {m.lower() for m in re.findall(r"\bcompresscodec: (\w+)", text)}


def partition_dirs(log_dir: Path, topic: str, partitions: int) -> list[Path]:
    """The partition directories of ``topic``, live or renamed for deletion."""
    out = []
    for p in range(partitions):
        found = [d for d in log_dir.iterdir() if d.name == f"{topic}-{p}" or d.name.startswith(f"{topic}-{p}.")]
        found = [d for d in found if d.name == f"{topic}-{p}" or d.name.endswith("-delete")]
        assert len(found) == 1, (topic, p, sorted(x.name for x in log_dir.iterdir()))
        out.append(found[0])
    return out


class LogKeeper:
    """Hard-links every ``.log`` file of a ``kbench-*`` partition directory under ``root`` into
    ``keep/<partition dir>/`` as soon as it appears (polled until stopped)."""

    def __init__(self, root: Path, keep: Path) -> None:
        self.root, self.keep = root, keep
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _sweep(self) -> None:
        for data in self.root.glob("kbench-cluster-*/node-*/data"):
            try:
                parts = [d for d in data.iterdir() if d.name.startswith("kbench-")]
            except FileNotFoundError:
                continue
            for d in parts:
                name = d.name.split(".")[0]  # "<topic>-<p>" (a "-delete" dir keeps it before the dot)
                try:
                    for f in d.iterdir():
                        if f.suffix == ".log" and not (self.keep / name / f.name).exists():
                            (self.keep / name).mkdir(parents=True, exist_ok=True)
                            os.link(f, self.keep / name / f.name)
                except FileNotFoundError:
                    continue

    def _loop(self) -> None:
        while not self._stop.wait(0.02):
            self._sweep()

    def __enter__(self) -> LogKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def dump_batches(text: str) -> list[dict[str, str]]:
    """The batch lines of DumpLogSegments output as key -> value (``baseOffset: 0 count: 10 ...``)."""
    return [dict(re.findall(r"(\w+): (\S+)", line)) for line in text.splitlines() if line.startswith("baseOffset:")]
