"""Read Kafka log segments (``.log`` files or topic-partition directories) batch by batch.

The parsing runs in C (``csrc/segment.c``) over an mmap of each file, iterating batches the way
Kafka's ``FileLogInputStream`` does.  Broken input never raises: a partial trailing batch, a bad
CRC or an undecodable batch becomes a row whose ``status`` says what is wrong.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from kbench import _native
from kbench.model.paths import not_a_regular_file
from kbench.model.stats import counted_distribution

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = [
    "BatchRow",
    "SegmentError",
    "Summarizer",
    "Summary",
    "iter_file",
    "log_files",
    "topic_dirs",
    "scan_bytes",
    "scan_file",
    "scan_paths",
    "summarize",
]

BATCH_OVERHEAD = 61


class SegmentError(ValueError):
    """A path given to the inspector is not a segment or a partition directory."""


@dataclass(slots=True)
class BatchRow:
    """One batch of a segment as stored (stored_bytes = 12 + batchLength).

    Not frozen: a frozen dataclass's ``__init__`` costs 3x more, which shows when a segment
    holds 100k batches."""

    file: str
    position: int
    base_offset: int
    last_offset: int
    records: int
    stored_bytes: int
    magic: int
    codec: str | None
    attributes: int
    partition_leader_epoch: int
    producer_id: int
    max_timestamp: int
    crc_valid: bool | None
    uncompressed_bytes: int | None  # records region after decompression
    status: str
    message: str

    @property
    def uncompressed_batch_bytes(self) -> int | None:
        """The batch's size had it been stored uncompressed (header + raw records)."""
        return None if self.uncompressed_bytes is None else BATCH_OVERHEAD + self.uncompressed_bytes

    @property
    def ratio(self) -> float | None:
        u = self.uncompressed_batch_bytes
        return None if u is None or self.stored_bytes <= 0 else u / self.stored_bytes

    CSV_FIELDS: ClassVar[tuple[str, ...]] = (
        "file",
        "position",
        "base_offset",
        "last_offset",
        "records",
        "stored_bytes",
        "codec",
        "uncompressed_bytes",
        "ratio",
        "crc_valid",
        "magic",
        "partition_leader_epoch",
        "producer_id",
        "max_timestamp",
        "status",
        "message",
    )

    def csv_row(self) -> dict[str, object]:
        r = self.ratio
        return {
            "file": self.file,
            "position": self.position,
            "base_offset": self.base_offset,
            "last_offset": self.last_offset,
            "records": self.records,
            "stored_bytes": self.stored_bytes,
            "codec": self.codec or "",
            "uncompressed_bytes": "" if self.uncompressed_bytes is None else self.uncompressed_bytes,
            "ratio": "" if r is None else f"{r:.4f}",
            "crc_valid": "" if self.crc_valid is None else str(self.crc_valid).lower(),
            "magic": self.magic,
            "partition_leader_epoch": self.partition_leader_epoch,
            "producer_id": self.producer_id,
            "max_timestamp": self.max_timestamp,
            "status": self.status,
            "message": self.message,
        }


def scan_bytes(
    data: Buffer,
    name: str = "<buffer>",
    *,
    decompress: bool = True,
    verify_crc: bool = True,
    max_uncompressed: int = 256 << 20,
) -> list[BatchRow]:
    """Rows for every batch in a buffer holding a segment."""
    return _rows(_native.segment_scan(data, decompress, verify_crc, max_uncompressed), name)


#: The smallest a record can be in a records region (length, attributes, timestamp delta,
#: offset delta, key length, value length, header count: one byte each).
MIN_RECORD_BYTES = 7


def _implausible(count: int, base: int, last: int, size: int, codec: str | None) -> str | None:
    """Why a header's recordsCount cannot be true (checked even without decompression):
    more records than the batch's offset range, or than its records region can hold."""
    if count < 0:
        return f"recordsCount {count} is negative"
    if count > last - base + 1:
        return f"recordsCount {count} exceeds the batch's offset range ({last - base + 1} offsets)"
    if codec == "none" and count * MIN_RECORD_BYTES > size - BATCH_OVERHEAD:
        return f"recordsCount {count} cannot fit in {size - BATCH_OVERHEAD} bytes of records"
    return None


def _check_count(row: BatchRow) -> BatchRow:
    if row.status == "ok":
        why = _implausible(row.records, row.base_offset, row.last_offset, row.stored_bytes, row.codec)
        if why is not None:
            row.status, row.message = "corrupt", f"corrupt batch at position {row.position}: {why}"
    return row


def _rows(raw: list[tuple], name: str) -> list[BatchRow]:
    rows = [
        BatchRow(
            name,
            pos,
            base,
            last,
            count,
            size,
            magic,
            codec,
            attrs,
            ple,
            pid,
            maxts,
            crc,
            None if unc < 0 else unc,
            status,
            msg,
        )
        for (pos, base, last, count, size, magic, codec, attrs, ple, pid, maxts, crc, unc, status, msg) in raw
    ]
    return [_check_count(r) for r in rows]


#: Batches read from a file per call into C: the rows a scan holds at once.
SCAN_ROWS = 4096


def iter_file(
    path: Path | str, *, decompress: bool = True, verify_crc: bool = True, max_uncompressed: int = 256 << 20
) -> Iterator[BatchRow]:
    """Rows for every batch of one ``.log`` file, :data:`SCAN_ROWS` at a time (read in 8 MiB chunks,
    parsed in C without the GIL): memory is bounded whatever the number of batches."""
    p = Path(path)
    why = not_a_regular_file(p)
    if why is not None:
        raise SegmentError(f"{p}: {why}, not a segment file; give .log files or a topic-partition directory")
    start: int | None = 0
    while start is not None:
        raw, start = _native.segment_scan_file(
            str(p), decompress, verify_crc, max_uncompressed, start=start, max_rows=SCAN_ROWS
        )
        yield from _rows(raw, str(p))


def scan_file(
    path: Path | str, *, decompress: bool = True, verify_crc: bool = True, max_uncompressed: int = 256 << 20
) -> list[BatchRow]:
    """Rows for every batch of one ``.log`` file, as a list (:func:`iter_file` streams them)."""
    return list(iter_file(path, decompress=decompress, verify_crc=verify_crc, max_uncompressed=max_uncompressed))


def topic_dirs(log_dir: Path, topic: str) -> list[str]:
    """``topic``'s partition directories in ``log_dir`` (``<topic>-<partition>``), live or renamed
    for deletion (``<topic>-<partition>.<id>-delete``); none where the log dir is unreadable."""
    try:
        names = os.listdir(log_dir)
    except OSError:
        return []
    pre = f"{topic}-"
    return [n for n in names if n.startswith(pre) and n[len(pre) :].split(".", 1)[0].isdigit()]


def log_files(paths: Iterable[Path | str]) -> list[Path]:
    """Expand paths: a ``.log`` file stays, a directory gives its ``*.log`` files (a topic-partition
    directory) or those of its sub-directories (a log dir), in offset order."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_file():
            out.append(p)
        elif p.is_dir():
            found = sorted(p.glob("*.log")) or sorted(p.glob("*/*.log"))
            if not found:
                raise SegmentError(f"{p}: no .log segment files in it; give a topic-partition directory or .log files")
            out.extend(found)
        else:
            why = not_a_regular_file(p) or "is not a regular file"
            raise SegmentError(f"{p}: {why}, not a segment file; give .log files or a topic-partition directory")
    return out


def scan_paths(paths: Sequence[Path | str], *, decompress: bool = True, verify_crc: bool = True) -> list[BatchRow]:
    rows: list[BatchRow] = []
    for f in log_files(paths):
        rows.extend(scan_file(f, decompress=decompress, verify_crc=verify_crc))
    return rows


@dataclass(frozen=True)
class Summary:
    files: int
    batches: int
    records: int
    stored_bytes: int
    uncompressed_batch_bytes: int  # over batches whose uncompressed size is known
    ratio: float | None
    stored_size: dict[str, float]
    records_per_batch: dict[str, float]
    codecs: dict[str, int] = field(default_factory=dict)
    problems: dict[str, int] = field(default_factory=dict)


class Summarizer:
    """A :class:`Summary` built batch by batch (:meth:`add`), holding counts, not rows: the
    distributions are exact (a count per distinct size; distinct sizes are few, at most about
    sqrt(2 x bytes) of them)."""

    def __init__(self) -> None:
        self.files: set[str] = set()
        self.batches = self.records = self.stored = self.unc = self.stored_known = 0
        self.sizes: Counter[int] = Counter()
        self.counts: Counter[int] = Counter()
        self.codecs: Counter[str] = Counter()
        self.problems: Counter[str] = Counter()

    def add(self, r: BatchRow) -> BatchRow:
        self.files.add(r.file)
        if r.status != "ok":
            self.problems[r.status] += 1
        if r.status not in ("ok", "bad_crc"):
            return r
        self.batches += 1
        self.records += r.records
        self.stored += r.stored_bytes
        self.sizes[r.stored_bytes] += 1
        self.counts[r.records] += 1
        self.codecs[r.codec or "?"] += 1
        if r.uncompressed_bytes is not None:
            self.unc += r.uncompressed_batch_bytes or 0
            self.stored_known += r.stored_bytes
        return r

    def summary(self) -> Summary:
        return Summary(
            files=len(self.files),
            batches=self.batches,
            records=self.records,
            stored_bytes=self.stored,
            uncompressed_batch_bytes=self.unc,
            ratio=(self.unc / self.stored_known) if self.stored_known else None,
            stored_size=counted_distribution(self.sizes),
            records_per_batch=counted_distribution(self.counts),
            codecs=dict(self.codecs),
            problems=dict(self.problems),
        )


def summarize(rows: Iterable[BatchRow]) -> Summary:
    s = Summarizer()
    for r in rows:
        s.add(r)
    return s.summary()


def write_segment(path: Path | str, batches: Iterable[bytes], *, base_offset: int = 0, leader_epoch: int = 0) -> Path:
    """Write producer batches to a ``.log`` file as a leader broker stores them: absolute
    baseOffset assigned in order, partitionLeaderEpoch set (neither is covered by the CRC)."""
    p = Path(path)
    offset = base_offset
    tmp = p.with_name(f".{p.name}.tmp")
    with tmp.open("wb") as f:
        for b in batches:
            buf = bytearray(b)
            if len(buf) < BATCH_OVERHEAD:
                raise SegmentError(f"a batch of {len(buf)} bytes is shorter than the 61-byte header")
            buf[0:8] = offset.to_bytes(8, "big", signed=True)
            buf[12:16] = leader_epoch.to_bytes(4, "big", signed=True)
            offset += int.from_bytes(buf[23:27], "big", signed=True) + 1
            f.write(buf)
    tmp.replace(p)
    return p
