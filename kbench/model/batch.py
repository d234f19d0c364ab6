"""Kafka RecordBatch v2: encode records into the exact bytes a producer sends, decode them back.

The work is done in C (``csrc/recordbatch.c``); see docs/batch-format.md.  ``encode`` writes
what the Java producer writes (partitionLeaderEpoch -1) or, with ``client="librdkafka"``,
what librdkafka writes (partitionLeaderEpoch 0, and a batch whose compressed records would be
larger than the raw ones is sent uncompressed).  ``decode`` verifies the CRC, decompresses
within ``max_uncompressed`` bytes and checks every record; malformed input raises
:class:`BatchError` whose ``offset`` is the byte offset of the problem.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict, Unpack

from kbench import _native
from kbench._native import BatchError

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = [
    "Batch",
    "BatchError",
    "Header",
    "Record",
    "crc32c",
    "crc32c_impls",
    "decode",
    "encode",
    "RECORD_BATCH_OVERHEAD",
]

#: Size of the v2 batch header (DefaultRecordBatch.RECORD_BATCH_OVERHEAD).
RECORD_BATCH_OVERHEAD = 61
#: Default decompression limit for decode (256 MiB, far above message.max.bytes).
DEFAULT_MAX_UNCOMPRESSED = 256 << 20
CLIENTS = ("java", "librdkafka")


@dataclass(frozen=True)
class Header:
    key: str
    value: bytes | None


@dataclass(frozen=True)
class Record:
    """A record to encode, or one decoded (then ``offset`` and ``timestamp`` are absolute)."""

    value: bytes | None
    key: bytes | None = None
    timestamp: int = 0
    headers: tuple[Header, ...] = ()
    offset: int = 0
    attributes: int = 0


@dataclass(frozen=True)
class Batch:
    """A decoded RecordBatch v2: every header field, the stored codec and the records."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    codec: str
    uncompressed_size: int
    records: tuple[Record, ...] = field(repr=False)

    @property
    def size(self) -> int:
        """Bytes on the wire / on disk: 12 + batchLength."""
        return 12 + self.batch_length

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & 0x10)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & 0x20)

    @property
    def timestamp_type(self) -> str:
        return "LogAppendTime" if self.attributes & 0x08 else "CreateTime"


def _as_bytes(v: object) -> object:
    return v.encode() if isinstance(v, str) else v


def _record_tuple(r: Record | bytes | tuple) -> tuple:
    if isinstance(r, Record):
        return (
            _as_bytes(r.key),
            _as_bytes(r.value),
            int(r.timestamp),
            [(h.key.encode() if isinstance(h.key, str) else h.key, _as_bytes(h.value)) for h in r.headers],
        )
    if isinstance(r, (bytes, bytearray, memoryview, str)):
        return (None, _as_bytes(r), 0, [])
    raise TypeError(f"records must be Record or bytes, not {type(r).__name__}")


class BatchFields(TypedDict, total=False):
    """The batch header fields :func:`encode` takes, as :func:`encode_ex` defines them."""

    client: str
    base_offset: int
    partition_leader_epoch: int | None
    producer_id: int
    producer_epoch: int
    base_sequence: int
    transactional: bool


def encode(
    records: Iterable[Record | bytes], codec: str = "none", level: int | None = None, **fields: Unpack[BatchFields]
) -> bytes:
    """Encode records as one RecordBatch v2 with the records region compressed by ``codec``.

    ``client`` picks the producer's conventions: ``java`` (partitionLeaderEpoch -1) or
    ``librdkafka`` (partitionLeaderEpoch 0, uncompressed fallback when compression grows).
    """
    return encode_ex(records, codec, level, **fields)[0]


def encode_ex(
    records: Iterable[Record | bytes],
    codec: str = "none",
    level: int | None = None,
    *,
    client: str = "java",
    base_offset: int = 0,
    partition_leader_epoch: int | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
) -> tuple[bytes, str]:
    """Like :func:`encode`, also returning the codec actually stored (librdkafka may fall back to none)."""
    if client not in CLIENTS:
        raise BatchError(f"unknown client '{client}'; use java or librdkafka")
    if partition_leader_epoch is None:
        partition_leader_epoch = 0 if client == "librdkafka" else -1
    recs = [_record_tuple(r) for r in records]
    return _native.batch_encode(
        recs,
        codec,
        level,
        base_offset,
        partition_leader_epoch,
        producer_id,
        producer_epoch,
        base_sequence,
        transactional,
        client == "librdkafka",
    )


def decode(buf: Buffer, *, max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED, verify_crc: bool = True) -> Batch:
    """Decode exactly one RecordBatch v2 from any buffer; raises BatchError with ``.offset``."""
    hdr, recs = _native.batch_decode(buf, max_uncompressed, verify_crc)
    hdr.pop("crc_computed")
    base_off, base_ts = hdr["base_offset"], hdr["base_timestamp"]
    log_append = bool(hdr["attributes"] & 0x08)
    records = tuple(
        Record(
            value=value,
            key=key,
            timestamp=hdr["max_timestamp"] if log_append else base_ts + ts_delta,
            headers=tuple(Header(hk.decode("utf-8", "replace"), hv) for hk, hv in headers),
            offset=base_off + off_delta,
            attributes=attrs,
        )
        for off_delta, ts_delta, attrs, key, value, headers in recs
    )
    return Batch(records=records, **hdr)


def crc32c(data: Buffer, impl: str | None = None) -> int:
    """CRC-32C (Castagnoli) of a buffer; ``impl`` forces one implementation (see :func:`crc32c_impls`)."""
    return int(_native.crc32c(data, impl))


def crc32c_impls() -> list[str]:
    """CRC-32C implementations usable on this CPU ('table' always; 'sse4.2' or 'armv8' when present)."""
    return list(_native.crc32c_impls())


def crc32c_active() -> str:
    """The implementation :func:`crc32c` and the batch code use."""
    return str(_native.crc32c_active())
