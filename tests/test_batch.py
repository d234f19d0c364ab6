"""RecordBatch v2 encoder/decoder against the published vectors and malformed input."""

from __future__ import annotations

import os

import pytest

import kbench
from kbench.model import batch
from kbench.model.batch import Header, Record

TS = 1_700_000_000_000
EXAMPLE_A = bytes.fromhex(
    "00000000000000000000003dffffffff02e641a44b0000000000000000018bcfe568000000018bcfe56800"
    "ffffffffffffffffffffffffffff0000000116000000010a68656c6c6f00"
)
EXAMPLE_B = bytes.fromhex(
    "00000000000000000000004bffffffff028ee4dd0f0000000000010000018bcfe568000000018bcfe56803"
    "ffffffffffffffffffffffffffff00000002"
    "14000000046b31047631001c000602046b320476320202680278"
)
RAW_A = bytes.fromhex("16000000010a68656c6c6f00")
# Example C of the reference: records region and CRC per codec (Java framing).
EXAMPLE_C = {
    "gzip": ("1f8b08000000000000ff1363606060e4ca48cdc9c96700003ea907970c000000", "f7ee9943"),
    "snappy": ("82534e415050590000000001000000010000000e0c2c" + RAW_A.hex(), "f9ce1f58"),
    "lz4": ("04224d186040820c000080" + RAW_A.hex() + "00000000", "9472652b"),
}


@pytest.mark.parametrize("impl", batch.crc32c_impls())
def test_crc32c_check_value_on_every_path(impl: str) -> None:
    assert batch.crc32c(b"123456789", impl=impl) == 0xE3069283
    assert batch.crc32c(b"", impl=impl) == 0


def test_hardware_crc_present_and_paths_agree() -> None:
    impls = batch.crc32c_impls()
    assert "table" in impls
    if os.uname().machine == "x86_64":
        assert "sse4.2" in impls  # every x86-64 CPU this project targets has SSE4.2
    data = os.urandom(70_001)
    ref = batch.crc32c(data, impl="table")
    for impl in impls:
        for start in range(0, 9):  # unaligned heads and odd tails
            assert batch.crc32c(data[start : start + 4099], impl=impl) == batch.crc32c(
                data[start : start + 4099], impl="table"
            )
        assert batch.crc32c(data, impl=impl) == ref
    assert batch.crc32c(data) == ref
    with pytest.raises(ValueError, match="not available"):
        batch.crc32c(b"x", impl="no-such-impl")


def test_example_a_exact_bytes_java() -> None:
    out = batch.encode([Record(value=b"hello", timestamp=TS)], "none")
    assert out == EXAMPLE_A
    assert batch.crc32c(out[21:]) == 0xE641A44B


def test_example_a_librdkafka_writes_ple_zero() -> None:
    out = batch.encode([Record(value=b"hello", timestamp=TS)], "none", client="librdkafka")
    assert out[12:16] == b"\x00\x00\x00\x00"
    assert out[:12] + b"\xff\xff\xff\xff" + out[16:] == EXAMPLE_A  # PLE is outside the CRC


def test_example_b_exact_bytes() -> None:
    recs = [
        Record(key=b"k1", value=b"v1", timestamp=TS),
        Record(key=b"k2", value=b"v2", timestamp=TS + 3, headers=(Header("h", b"x"),)),
    ]
    assert batch.encode(recs, "none") == EXAMPLE_B


@pytest.mark.parametrize("codec", sorted(EXAMPLE_C))
def test_example_c_compressed_exact_bytes(codec: str) -> None:
    region, crc = EXAMPLE_C[codec]
    out = batch.encode([Record(value=b"hello", timestamp=TS)], codec)
    assert out[61:].hex() == region
    assert out[17:21].hex() == crc
    assert out[21:23] == bytes([0, {"gzip": 1, "snappy": 2, "lz4": 3}[codec]])
    assert int.from_bytes(out[8:12], "big") == len(out) - 12


def test_sarama_record_decodes() -> None:
    # IBM/sarama record_test.go "uncompressed record": key 01020304, value 050607, header 08090a -> 0b0c, tsDelta 5
    hdr = bytearray(EXAMPLE_A[:61])
    region = bytes.fromhex("28000a00080102030406050607020608090a040b0c")
    hdr[8:12] = (49 + len(region)).to_bytes(4, "big")
    hdr[27:35] = (1479847795000).to_bytes(8, "big")
    hdr[35:43] = (1479847795005).to_bytes(8, "big")
    buf = bytes(hdr) + region
    crc = batch.crc32c(buf[21:])
    buf = buf[:17] + crc.to_bytes(4, "big") + buf[21:]
    b = batch.decode(buf)
    assert b.records[0].timestamp == 1479847795005
    assert b.records[0].headers == (Header("\x08\x09\x0a", b"\x0b\x0c"),)


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_roundtrip_every_codec(codec: str) -> None:
    recs = [
        Record(
            key=None if i % 3 == 0 else f"k{i}".encode(),
            value=None if i == 7 else (b"payload-%d " % i) * (i % 50),
            timestamp=TS + i * 7 - (20 if i == 5 else 0),
            headers=tuple(Header(f"h{j}", None if j == 1 else b"v" * j) for j in range(i % 3)),
        )
        for i in range(300)
    ]
    out = batch.encode(recs, codec, producer_id=42, producer_epoch=3, base_sequence=100, transactional=True)
    b = batch.decode(out)
    assert b.codec == codec and b.records_count == 300 and b.last_offset_delta == 299
    assert (b.producer_id, b.producer_epoch, b.base_sequence, b.is_transactional) == (42, 3, 100, True)
    assert b.base_timestamp == TS and b.max_timestamp == max(r.timestamp for r in recs)
    assert b.size == len(out)
    for i, (r, d) in enumerate(zip(recs, b.records)):
        assert (d.key, d.value, d.timestamp, d.headers, d.offset) == (r.key, r.value, r.timestamp, r.headers, i)


def test_librdkafka_sends_uncompressed_when_compression_grows() -> None:
    data = [os.urandom(200) for _ in range(5)]
    out, stored = batch.encode_ex([Record(value=v) for v in data], "gzip", client="librdkafka")
    assert stored == "none" and batch.decode(out).codec == "none"
    out, stored = batch.encode_ex([Record(value=v) for v in data], "gzip", client="java")
    assert stored == "gzip"


def test_levels_are_validated() -> None:
    with pytest.raises(kbench.CodecError):
        batch.encode([b"x"], "gzip", level=42)
    with pytest.raises(kbench.CodecError):
        batch.encode([b"x"], "brotli")


def _with_crc(buf: bytearray) -> bytes:
    buf[17:21] = batch.crc32c(bytes(buf[21:])).to_bytes(4, "big")
    return bytes(buf)


def test_malformed_input_raises_batch_error_with_offset() -> None:
    good = batch.encode([Record(key=b"k", value=b"v" * 40, timestamp=TS)] * 3, "none")
    for cut in range(len(good)):
        with pytest.raises(kbench.BatchError) as ei:
            batch.decode(good[:cut])
        assert ei.value.offset == cut  # truncation is reported where the input ends
    bad = bytearray(good)
    bad[70] ^= 0xFF
    with pytest.raises(kbench.BatchError, match="CRC mismatch") as ei:
        batch.decode(bytes(bad))
    assert ei.value.offset == 17
    bad = bytearray(good)
    bad[16] = 1
    with pytest.raises(kbench.BatchError, match="magic") as ei:
        batch.decode(bytes(bad))
    assert ei.value.offset == 16
    bad = bytearray(good)
    bad[22] = 5
    with pytest.raises(kbench.BatchError, match="compression type id 5") as ei:
        batch.decode(_with_crc(bad))
    assert ei.value.offset == 22
    with pytest.raises(kbench.BatchError, match="trailing") as ei:
        batch.decode(good + b"\0")
    assert ei.value.offset == len(good)
    bad = bytearray(good)
    bad[57:61] = (4).to_bytes(4, "big")  # one record more than present
    with pytest.raises(kbench.BatchError, match="records end after 3 of 4") as ei:
        batch.decode(_with_crc(bad))
    assert ei.value.offset == len(good)
    bad = bytearray(good)
    bad[61] = 0x7E  # first record's length varint claims 63 bytes: the record is not that long
    with pytest.raises(kbench.BatchError, match="Invalid record size") as ei:
        batch.decode(_with_crc(bad))
    assert ei.value.offset == 62
    assert isinstance(ei.value, ValueError)


def test_compressed_garbage_and_decompression_limit() -> None:
    big = batch.encode([Record(value=b"a" * 100_000)], "zstd")
    with pytest.raises(kbench.BatchError, match="limit") as ei:
        batch.decode(big, max_uncompressed=10_000)
    assert ei.value.offset == 61
    assert batch.decode(big, max_uncompressed=200_000).uncompressed_size > 100_000
    bad = bytearray(big)
    bad[70:80] = b"\xff" * 10
    with pytest.raises(kbench.BatchError, match="does not decompress") as ei:
        batch.decode(_with_crc(bad))
    assert ei.value.offset == 61


def test_error_inside_compressed_records_names_the_position() -> None:
    raw = bytearray(batch.encode([Record(value=b"xyz", timestamp=TS)] * 2, "none"))
    raw[57:61] = (3).to_bytes(4, "big")
    region = kbench.model.codecs.compress(bytes(raw[61:]), "lz4")
    buf = bytearray(raw[:61]) + region
    buf[8:12] = (len(buf) - 12).to_bytes(4, "big")
    buf[21:23] = (3).to_bytes(2, "big")
    with pytest.raises(
        kbench.BatchError, match=r"records end after 2 of 3 records \(byte 20 of the decompressed records\)"
    ):
        batch.decode(_with_crc(buf))


def test_any_buffer_protocol_input() -> None:
    out = batch.encode([Record(value=memoryview(b"hello"), key=bytearray(b"k"))], "snappy")
    assert batch.decode(memoryview(bytearray(out))).records[0].value == b"hello"


def test_librdkafka_frames_snappy_as_one_raw_block() -> None:
    recs = [Record(value=b"hello kafka " * 50, timestamp=TS)] * 3
    rdk, stored = batch.encode_ex(recs, "snappy", client="librdkafka")
    java = batch.encode(recs, "snappy")
    assert stored == "snappy"
    assert java[61:69] == b"\x82SNAPPY\x00" and rdk[61:69] != b"\x82SNAPPY\x00"
    raw = batch.encode(recs, "none")[61:]
    assert kbench.model.codecs.decompress(rdk[61:], "snappy") == raw  # the reader takes both framings
    assert batch.decode(rdk).records == batch.decode(java).records
    # 12 raw bytes grow to 14 as a snappy block: librdkafka then sends the batch uncompressed
    assert batch.encode_ex([Record(value=b"hello", timestamp=TS)], "snappy", client="librdkafka")[1] == "none"
