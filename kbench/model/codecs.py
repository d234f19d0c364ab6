"""Kafka-exact codecs: compress and decompress exactly as the Java producer frames them.

See docs/codecs.md for the framing of each codec and the level ranges (KIP-390).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kbench import _native
from kbench._native import CodecError

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = [
    "CodecError",
    "CodecSpec",
    "TOPIC_COMPRESSION",
    "available",
    "batch_codec",
    "compress",
    "decompress",
    "library_versions",
    "parse_spec",
    "stored_codec",
    "topic_compression",
]

#: Kafka's topic ``compression.type`` values (``none`` is accepted and read as ``uncompressed``).
TOPIC_COMPRESSION = ("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")

#: Default decompression limit: 256 MiB, far above Kafka's message.max.bytes.
DEFAULT_MAX_SIZE = 256 * 1024 * 1024


@dataclass(frozen=True)
class CodecSpec:
    """A codec and an optional level, as written ``zstd:3`` or ``lz4``."""

    codec: str
    level: int | None = None

    def __str__(self) -> str:
        return self.codec if self.level is None else f"{self.codec}:{self.level}"


def available() -> list[str]:
    """The codecs this build supports, in Kafka's codec-id order."""
    return list(_native.available())


def compress(data: Buffer, codec: str, level: int | None = None) -> bytes:
    """Compress any buffer-protocol object in Kafka's framing for ``codec``."""
    return _native.compress(data, codec, level)


def decompress(data: Buffer, codec: str, max_size: int = DEFAULT_MAX_SIZE) -> bytes:
    """Decompress a Kafka-framed buffer; output above ``max_size`` bytes raises CodecError."""
    return _native.decompress(data, codec, max_size)


def library_versions() -> dict[str, str]:
    """Versions of zlib, snappy, liblz4 and libzstd that kbench is linked with."""
    return dict(_native.codec_library_versions())


def parse_spec(text: str) -> CodecSpec:
    """Parse ``codec[:level]`` and check it against Kafka's ranges; raises CodecError."""
    name, sep, lvl = text.strip().partition(":")
    level: int | None = None
    if sep:
        try:
            level = int(lvl)
        except ValueError:
            raise CodecError(f"bad level '{lvl}' in '{text}'; write codec:level, e.g. zstd:3") from None
    # Validates the name and level in C (the same rules the codecs use).
    _native.compress(b"", name, level)
    return CodecSpec(name, level)


def topic_compression(value: str) -> str:
    """A topic ``compression.type`` in Kafka's spelling: ``none`` (ours, and a codec's name)
    reads as ``uncompressed``; a level (``zstd:3``) is not part of a topic setting."""
    v = value.strip().lower().partition(":")[0]
    return "uncompressed" if v in ("none", "uncompressed") else v


def batch_codec(name: str) -> str:
    """The codec name a record batch carries (``none`` … ``zstd``) for a codec or a
    ``compression.type``: ``uncompressed`` reads as ``none``, a level is dropped."""
    v = name.strip().lower().partition(":")[0]
    return "none" if v in ("none", "uncompressed") else v


def stored_codec(topic: str, producer: CodecSpec) -> str:
    """The codec the broker stores batches with: the producer's for ``compression.type=producer``,
    else the topic's (recompression)."""
    tc = topic_compression(topic)
    return producer.codec if tc == "producer" else batch_codec(tc)
