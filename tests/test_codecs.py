"""Codecs: Kafka framing pinned byte for byte, levels, errors, limits."""

from __future__ import annotations

import array
import struct
import zlib

import pytest

import kbench
from kbench.model import codecs

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
# The records region of reference Example C: one record, key null, value "hello".
HELLO_RECORDS = bytes.fromhex("16000000010a68656c6c6f00")


def test_available_lists_all_five() -> None:
    assert codecs.available() == CODECS


def test_codec_error_is_value_error() -> None:
    assert issubclass(kbench.CodecError, ValueError)
    assert codecs.CodecError is kbench.CodecError


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("size", [0, 1, 100, 16383, 16384, 16385, 70000])
def test_round_trip(codec: str, size: int, json_bytes: bytes) -> None:
    data = (json_bytes * (size // len(json_bytes) + 1))[:size]
    assert codecs.decompress(codecs.compress(data, codec), codec) == data


def test_lz4_frame_header_is_kafkas() -> None:
    out = codecs.compress(b"x" * 1000, "lz4")
    assert out[:7] == bytes.fromhex("04224d18604082")
    assert out[-4:] == b"\0\0\0\0"  # end mark, no content checksum


def test_lz4_golden_vector_stored_raw() -> None:
    # 12 bytes do not compress: one raw block (bit 31 set), as in the reference's Example C.
    out = codecs.compress(HELLO_RECORDS, "lz4")
    assert out == bytes.fromhex("04224d186040820c000080") + HELLO_RECORDS + bytes(4)


def test_lz4_blocks_are_64k_and_independent() -> None:
    data = bytes(range(256)) * 1024  # 256 KiB
    out = codecs.compress(data, "lz4")
    off, sizes = 7, []
    while True:
        (bs,) = struct.unpack_from("<I", out, off)
        off += 4
        if bs == 0:
            break
        sizes.append(bs & 0x7FFFFFFF)
        off += bs & 0x7FFFFFFF
    assert off == len(out)
    assert len(sizes) == 4  # 4 × 64 KiB blocks


def test_lz4_incompressible_block_stored_raw(random_bytes: bytes) -> None:
    out = codecs.compress(random_bytes[:5000], "lz4")
    (bs,) = struct.unpack_from("<I", out, 7)
    assert bs == 0x80000000 | 5000
    assert out[11 : 11 + 5000] == random_bytes[:5000]


def test_snappy_xerial_header_and_golden_vector() -> None:
    out = codecs.compress(HELLO_RECORDS, "snappy")
    assert out[:8] == b"\x82SNAPPY\x00"
    assert struct.unpack(">ii", out[8:16]) == (1, 1)  # version 1, minimum compatible 1
    # one chunk: BE length 14, then a raw block: varint 12, literal tag (12-1)<<2, 12 bytes
    assert out[16:] == bytes.fromhex("0000000e0c2c") + HELLO_RECORDS


def test_snappy_xerial_chunks_are_32k() -> None:
    data = b"abcdefgh" * 10000  # 80000 bytes -> 3 chunks
    out = codecs.compress(data, "snappy")
    off, n = 16, 0
    while off < len(out):
        (clen,) = struct.unpack_from(">I", out, off)
        off += 4 + clen
        n += 1
    assert off == len(out) and n == 3


def test_snappy_reader_accepts_raw_block_like_librdkafka() -> None:
    raw = bytes.fromhex("0c2c") + HELLO_RECORDS
    assert codecs.decompress(raw, "snappy") == HELLO_RECORDS


def test_gzip_header_is_javas_and_single_member() -> None:
    out = codecs.compress(HELLO_RECORDS, "gzip")
    assert out[:10] == bytes.fromhex("1f8b08000000000000ff")  # JDK >= 16 GZIPOutputStream
    crc, isize = struct.unpack("<II", out[-8:])
    assert crc == zlib.crc32(HELLO_RECORDS) and isize == len(HELLO_RECORDS)
    # The reference's Example C deflate bytes (zlib level 6, windowBits -15).
    assert out[10:-8] == bytes.fromhex("1363606060e4ca48cdc9c9670000")
    d = zlib.decompressobj(31)
    assert d.decompress(out) == HELLO_RECORDS and d.eof and d.unused_data == b""


def test_gzip_reader_accepts_concatenated_members_like_java() -> None:
    two = codecs.compress(b"abc", "gzip") + codecs.compress(b"def", "gzip")
    assert codecs.decompress(two, "gzip") == b"abcdef"


def test_zstd_frame_has_no_checksum_and_no_content_size() -> None:
    out = codecs.compress(b"hello world " * 100, "zstd")
    assert out[:4] == bytes.fromhex("28b52ffd")
    fhd = out[4]
    assert fhd & 0x04 == 0, "checksum flag must be off"
    assert fhd >> 6 == 0 and fhd & 0x20 == 0, "no content size, not single-segment (unknown size, like zstd-jni)"


def test_zstd_uses_unknown_size_parameters() -> None:
    out = codecs.compress(b"a" * 10000, "zstd", 3)
    window_log = 10 + (out[5] >> 3)
    assert window_log == kbench._native.zstd_cparams(3)["wlog"] == 21


@pytest.mark.parametrize(
    "codec,levels",
    [("gzip", [1, 6, 9]), ("lz4", [1, 3, 9, 12, 17]), ("zstd", [-5, -1, 1, 3, 9, 19, 22])],
)
def test_levels_in_kafka_range_round_trip(codec: str, levels: list[int], json_bytes: bytes) -> None:
    sizes = set()
    for lv in levels:
        out = codecs.compress(json_bytes, codec, lv)
        assert codecs.decompress(out, codec) == json_bytes
        sizes.add(len(out))
    assert len(sizes) > 1, "levels must change the output"


@pytest.mark.parametrize(
    "codec,level",
    [
        ("gzip", 0),
        ("gzip", 10),
        ("lz4", 0),
        ("lz4", 18),
        ("zstd", 23),
        ("zstd", 0),
        ("zstd", -200000),
        ("snappy", 1),
        ("none", 1),
    ],
)
def test_levels_out_of_range_fail(codec: str, level: int) -> None:
    with pytest.raises(kbench.CodecError, match=codec):
        codecs.compress(b"x", codec, level)


def test_unknown_codec_fails_with_the_fix() -> None:
    with pytest.raises(kbench.CodecError, match="use one of none, gzip, snappy, lz4, zstd"):
        codecs.compress(b"x", "brotli")


def test_parse_spec() -> None:
    assert codecs.parse_spec("zstd:3") == codecs.CodecSpec("zstd", 3)
    assert str(codecs.parse_spec("lz4")) == "lz4"
    with pytest.raises(kbench.CodecError):
        codecs.parse_spec("zstd:x")
    with pytest.raises(kbench.CodecError):
        codecs.parse_spec("gzip:12")


@pytest.mark.parametrize("codec", CODECS)
def test_any_buffer_protocol_object(codec: str) -> None:
    data = b"kafka " * 500
    for obj in (bytearray(data), memoryview(data), array.array("B", data), memoryview(data)[10:]):
        expect = bytes(obj)
        assert codecs.decompress(codecs.compress(obj, codec), codec) == expect
        assert codecs.decompress(bytearray(codecs.compress(obj, codec)), codec) == expect


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_decompression_bomb_fails_cleanly(codec: str) -> None:
    bomb = codecs.compress(bytes(16 << 20), codec)
    with pytest.raises(kbench.CodecError, match="max_size"):
        codecs.decompress(bomb, codec, max_size=1 << 20)
    assert len(codecs.decompress(bomb, codec, max_size=16 << 20)) == 16 << 20


def test_error_carries_library_message() -> None:
    bad = bytearray(codecs.compress(b"hello world " * 100, "zstd"))
    bad[8] ^= 0xFF
    bad[9] ^= 0xFF
    with pytest.raises(kbench.CodecError, match="zstd"):
        codecs.decompress(bytes(bad), "zstd")


def test_library_versions() -> None:
    v = codecs.library_versions()
    assert set(v) == {"zlib", "snappy", "lz4", "zstd"}
    assert all(v.values())
