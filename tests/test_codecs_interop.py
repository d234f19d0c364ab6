"""Interop, both directions, with independent implementations from PyPI.

zstd: ``zstandard``; lz4: ``lz4.frame``; snappy: ``cramjam`` raw blocks (the xerial chunks are
framed and unframed here by hand) and ``python-snappy``; gzip: ``cramjam.gzip`` and stdlib zlib.
"""

from __future__ import annotations

import gzip
import struct

import cramjam
import lz4.frame
import pytest
import snappy
import zstandard

from kbench.model import codecs

SIZES = [0, 1, 16383, 16384, 16385, 4 << 20]


@pytest.fixture(scope="module", params=SIZES, ids=lambda s: f"{s}B")
def payload(request: pytest.FixtureRequest, json_bytes: bytes) -> bytes:
    size = request.param
    return (json_bytes * (size // len(json_bytes) + 1))[:size]


def xerial_frame(data: bytes, block: int = 32768) -> bytes:
    out = bytearray(b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1))
    for i in range(0, len(data), block):
        c = bytes(cramjam.snappy.compress_raw(data[i : i + block]))
        out += struct.pack(">I", len(c)) + c
    return bytes(out)


def xerial_unframe(buf: bytes) -> bytes:
    assert buf[:8] == b"\x82SNAPPY\x00"
    off, out = 16, bytearray()
    while off < len(buf):
        (n,) = struct.unpack_from(">I", buf, off)
        off += 4
        out += snappy.uncompress(buf[off : off + n])
        off += n
    assert off == len(buf)
    return bytes(out)


# --- theirs read ours -------------------------------------------------------


@pytest.mark.parametrize("level", [-3, 1, 3, 9, 19])
def test_zstandard_reads_ours(payload: bytes, level: int) -> None:
    ours = codecs.compress(payload, "zstd", level)
    assert zstandard.ZstdDecompressor().decompressobj().decompress(ours) == payload


@pytest.mark.parametrize("level", [None, 1, 4, 12, 17])
def test_lz4_frame_reads_ours(payload: bytes, level: int | None) -> None:
    ours = codecs.compress(payload, "lz4", level)
    assert lz4.frame.decompress(ours) == payload


def test_snappy_libraries_read_our_xerial_chunks(payload: bytes) -> None:
    assert xerial_unframe(codecs.compress(payload, "snappy")) == payload


@pytest.mark.parametrize("level", [1, 6, 9])
def test_gzip_readers_read_ours(payload: bytes, level: int) -> None:
    ours = codecs.compress(payload, "gzip", level)
    assert gzip.decompress(ours) == payload
    assert bytes(cramjam.gzip.decompress(ours)) == payload


# --- ours read theirs -------------------------------------------------------


@pytest.mark.parametrize("level", [-3, 1, 3, 9, 19])
def test_we_read_zstandard(payload: bytes, level: int) -> None:
    for write_size in (True, False):
        theirs = zstandard.ZstdCompressor(
            level=level, write_content_size=write_size, write_checksum=not write_size
        ).compress(payload)
        assert codecs.decompress(theirs, "zstd") == payload
    streamed = zstandard.ZstdCompressor(level=level).compressobj()
    theirs = streamed.compress(payload) + streamed.flush()
    assert codecs.decompress(theirs, "zstd") == payload


@pytest.mark.parametrize("level", [0, 3, 9, 12])
def test_we_read_lz4_frame(payload: bytes, level: int) -> None:
    for kw in (
        {},
        {"content_checksum": True},
        {"block_checksum": True},
        {"source_size": len(payload)},
        {"block_size": lz4.frame.BLOCKSIZE_MAX4MB},
        {"block_size": lz4.frame.BLOCKSIZE_MAX256KB},
    ):
        kw = dict(kw)
        size = kw.pop("source_size", 0)
        c = lz4.frame.LZ4FrameCompressor(compression_level=level, block_linked=False, **kw)
        theirs = c.begin(size) + c.compress(payload) + c.flush()
        assert codecs.decompress(theirs, "lz4") == payload, kw


def test_we_reject_linked_lz4_blocks_like_kafka() -> None:
    c = lz4.frame.LZ4FrameCompressor(block_linked=True)
    theirs = c.begin() + c.compress(b"abc" * 100) + c.flush()
    assert theirs[4] == 0x40  # FLG without the block-independence bit
    with pytest.raises(codecs.CodecError, match="dependent block"):
        codecs.decompress(theirs, "lz4")


def test_we_read_snappy_raw_and_xerial(payload: bytes) -> None:
    assert codecs.decompress(xerial_frame(payload), "snappy") == payload
    assert codecs.decompress(snappy.compress(payload), "snappy") == payload  # raw block, as librdkafka writes
    assert codecs.decompress(bytes(cramjam.snappy.compress_raw(payload)), "snappy") == payload


@pytest.mark.parametrize("level", [1, 6, 9])
def test_we_read_gzip(payload: bytes, level: int) -> None:
    assert codecs.decompress(gzip.compress(payload, compresslevel=level), "gzip") == payload
    assert codecs.decompress(bytes(cramjam.gzip.compress(payload, level=level)), "gzip") == payload


def test_ratio_matches_reference_libraries(json_bytes: bytes) -> None:
    """Same algorithm, same level: sizes equal to within the framing bytes."""
    data = json_bytes * 4
    ours = codecs.compress(data, "lz4")
    theirs = lz4.frame.compress(data, block_linked=False, block_size=lz4.frame.BLOCKSIZE_MAX64KB)
    assert abs(len(ours) - len(theirs)) <= 16
    ours_z = codecs.compress(data, "zstd", 3)
    theirs_z = zstandard.ZstdCompressor(level=3).compress(data)
    assert abs(len(ours_z) - len(theirs_z)) / len(theirs_z) < 0.02
