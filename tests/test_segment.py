"""The segment reader and ``kbench inspect``: broken input is reported per batch, never a crash."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from kbench.cli import main as cli_main
from kbench.model import batch, segment
from kbench.model.batch import Record

TS = 1_700_000_000_000


def _batches(codec: str, n: int = 5) -> list[bytes]:
    return [
        batch.encode([Record(value=(b"event %d/%d " % (b, i)) * 20, timestamp=TS + i) for i in range(b + 1)], codec)
        for b in range(n)
    ]


def _segment(tmp: Path, codec: str = "zstd", n: int = 5) -> Path:
    d = tmp / "topic-0"
    d.mkdir(parents=True, exist_ok=True)
    return segment.write_segment(d / "00000000000000000000.log", _batches(codec, n))


def test_rows_and_summary(tmp_path: Path) -> None:
    f = _segment(tmp_path)
    rows = segment.scan_file(f)
    assert [r.base_offset for r in rows] == [0, 1, 3, 6, 10]
    assert [r.records for r in rows] == [1, 2, 3, 4, 5]
    assert all(r.status == "ok" and r.crc_valid and r.codec == "zstd" and r.partition_leader_epoch == 0 for r in rows)
    assert sum(r.stored_bytes for r in rows) == f.stat().st_size
    for r in rows:
        b = batch.decode(f.read_bytes()[r.position : r.position + r.stored_bytes])
        assert r.uncompressed_bytes == b.uncompressed_size and r.ratio > 1
    s = segment.summarize(rows)
    assert (s.batches, s.records, s.codecs, s.problems) == (5, 15, {"zstd": 5}, {})
    assert s.records_per_batch == {"p50": 3, "p90": 5, "p99": 5, "max": 5}
    fast = segment.scan_file(f, decompress=False)
    assert all(r.uncompressed_bytes is None for r in fast) and all(r.crc_valid for r in fast)
    none = segment.scan_file(_segment(tmp_path / "n", "none"), decompress=False)
    assert all(r.uncompressed_bytes == r.stored_bytes - 61 and r.ratio == 1.0 for r in none)


def test_truncated_trailing_batch_and_bad_crc(tmp_path: Path) -> None:
    f = _segment(tmp_path)
    data = bytearray(f.read_bytes())
    rows = segment.scan_bytes(bytes(data))
    for cut in range(rows[-1].position + 1, len(data)):
        got = segment.scan_bytes(bytes(data[:cut]))
        assert [r.status for r in got] == ["ok"] * 4 + ["truncated"]
        assert got[-1].position == rows[-1].position
    data[rows[2].position + 70] ^= 0x55
    got = segment.scan_bytes(bytes(data))
    assert [r.status for r in got] == ["ok", "ok", "bad_crc", "ok", "ok"]
    assert got[2].crc_valid is False and "CRC mismatch" in got[2].message


def test_corrupt_size_legacy_and_garbage(tmp_path: Path) -> None:
    good = b"".join(_batches("lz4", 2))
    bad = bytearray(good)
    bad[8:12] = (3).to_bytes(4, "big")
    got = segment.scan_bytes(bytes(bad))
    assert [r.status for r in got] == ["corrupt"] and "smaller than the minimum" in got[0].message
    legacy = bytearray(good)
    legacy[16] = 1
    got = segment.scan_bytes(bytes(legacy))
    assert [r.status for r in got] == ["legacy", "ok"]
    # a batch whose records do not decode: reported, and iteration continues
    first_len = len(_batches("lz4", 1)[0])
    undecodable = bytearray(good)
    undecodable[70:74] = b"\xff\xff\xff\xff"
    undecodable[17:21] = batch.crc32c(bytes(undecodable[21:first_len])).to_bytes(4, "big")
    got = segment.scan_bytes(bytes(undecodable))
    assert [r.status for r in got] == ["corrupt", "ok"] and "does not decompress" in got[0].message
    assert segment.scan_bytes(b"") == []
    assert [r.status for r in segment.scan_bytes(b"\x00" * 10)] == ["truncated"]


def test_inspect_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _segment(tmp_path)
    out = tmp_path / "rows.csv"
    assert cli_main(["inspect", str(f.parent), "--csv", str(out)]) == 0
    text = capsys.readouterr().out
    assert "summary: 1 file(s), 5 batches, 15 records" in text
    assert "stored batch bytes: p50" in text and "codecs: zstd 5" in text
    rows = list(csv.DictReader(out.open()))
    assert [int(r["records"]) for r in rows] == [1, 2, 3, 4, 5] and {r["crc_valid"] for r in rows} == {"true"}
    with f.open("ab") as fh:
        fh.write(_batches("zstd", 1)[0][:40])
    assert cli_main(["inspect", str(f)]) == 1
    assert "TRUNCATED" in capsys.readouterr().out
    assert cli_main(["inspect", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "does not exist" in err[0]
    (tmp_path / "empty").mkdir()
    assert cli_main(["inspect", str(tmp_path / "empty")]) == 2


def test_file_reader_matches_buffer_reader_across_chunks(tmp_path: Path) -> None:
    # scan_file reads 8 MiB chunks; batches straddle chunk ends and one is larger than a chunk
    bs = [
        batch.encode(
            [Record(value=bytes(range(256)) * (i % 9 + 1), timestamp=i)] * (1 + i % 40), "none" if i % 3 else "lz4"
        )
        for i in range(700)
    ]
    bs.append(batch.encode([Record(value=b"x" * (9 << 20))], "none"))
    f = segment.write_segment(tmp_path / "00000000000000000000.log", bs)
    data = f.read_bytes()
    assert len(data) > 2 * (8 << 20)
    g = tmp_path / "cut.log"
    for cut in (len(data), len(data) - 5, len(data) - (9 << 20), 8 << 20, (8 << 20) + 3, 16, 5, 0):
        g.write_bytes(data[:cut])
        assert segment.scan_file(g) == segment.scan_bytes(data[:cut], str(g))
    bad = bytearray(data)
    bad[(8 << 20) - 30 : (8 << 20) + 30] = b"\x00" * 60
    g.write_bytes(bad)
    rows = segment.scan_file(g)
    assert rows == segment.scan_bytes(bytes(bad), str(g))
    assert any(r.status != "ok" for r in rows)


def test_offsets_wrap_like_java_longs() -> None:
    # baseOffset INT64_MIN with lastOffsetDelta -1 (a fuzzer find): no overflow trap, Java's wrap-around
    b = bytearray(_batches("none", 1)[0])
    b[0:8] = (-(1 << 63)).to_bytes(8, "big", signed=True)
    b[23:27] = (-1).to_bytes(4, "big", signed=True)
    rows = segment.scan_bytes(bytes(b))
    assert rows[0].base_offset == -(1 << 63) and rows[0].last_offset == (1 << 63) - 1
