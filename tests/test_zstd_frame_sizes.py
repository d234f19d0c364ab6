"""benchmarks/zstd_frame_sizes.py counts the zstd batches whose frame carries its content size.

Its segment is built here: RecordBatch v2 headers (61 bytes, the codec in the attributes) around
frames python-zstandard writes with and without the size, and one gzip batch between them."""

from __future__ import annotations

import gzip
import struct
import subprocess
import sys
from pathlib import Path

import zstandard

ROOT = Path(__file__).resolve().parent.parent


def batch(codec: int, payload: bytes) -> bytes:
    # base offset, length (from the epoch on), epoch, magic 2, crc, attributes, then the bytes of
    # offsets, timestamps, producer and count (38): the script reads only length and attributes
    rest = struct.pack(">ibIh", 0, 2, 0, codec) + bytes(38) + payload
    return struct.pack(">qi", 0, len(rest)) + rest


def test_counts_sized_and_unsized_frames(tmp_path: Path) -> None:
    data = b'{"k": "value"}\n' * 4000
    sized = zstandard.ZstdCompressor(write_content_size=True).compress(data)
    unsized = zstandard.ZstdCompressor(write_content_size=False).compress(data)
    part = tmp_path / "topic-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(
        batch(4, unsized) + batch(1, gzip.compress(data)) + batch(4, sized) + batch(4, unsized)
    )
    p = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "zstd_frame_sizes.py"), str(part)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == f"{part}: zstd batches 3, with a content size 1, other codecs 1"


def test_a_directory_without_segments_is_one_line_and_exit_2(tmp_path: Path) -> None:
    p = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "zstd_frame_sizes.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "topic-partition directory" in p.stderr
