"""Which zstd batches of a topic carry their frame's content size, read from its segment files.

librdkafka sizes a zstd batch's output buffer from the frame's content size; a frame without one
costs it a second decompression (benchmarks/zstd_unsized_frames.py).  This counts, per partition
directory given, the zstd batches whose frame header has the size (Frame_Content_Size present: the
descriptor's FCS flag or its single-segment flag, RFC 8878 §3.1.1.1.1).

Usage: python benchmarks/zstd_frame_sizes.py DIR [DIR ...]   (e.g. <log.dir>/<topic>-0)
"""

from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
HEADER = 61  # RecordBatch v2 header: base offset (8) + length (4) + 49 bytes to the records
ZSTD = 4  # attributes & 7


def count(segment: bytes) -> tuple[int, int, int]:
    """(zstd batches, of them with a content size, batches of other codecs) in one .log file."""
    zstd = sized = other = 0
    i = 0
    while i + HEADER <= len(segment):
        length = struct.unpack_from(">i", segment, i + 8)[0]
        if length <= 0 or i + 12 + length > len(segment):
            break
        attributes = struct.unpack_from(">h", segment, i + 21)[0]
        if attributes & 7 == ZSTD:
            frame = segment[i + HEADER : i + 12 + length]
            if frame[:4] != ZSTD_MAGIC:
                raise ValueError(f"batch at byte {i}: not a zstd frame")
            descriptor = frame[4]
            zstd += 1
            sized += (descriptor >> 6) > 0 or bool(descriptor & 0x20)
        else:
            other += 1
        i += 12 + length
    return zstd, sized, other


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+", type=Path, help="topic-partition directories")
    args = ap.parse_args()
    for d in args.dirs:
        logs = sorted(d.glob("*.log"))
        if not logs:
            print(f"{d}: no .log segment files; give a topic-partition directory", file=sys.stderr)
            return 2
        try:
            totals = [sum(x) for x in zip(*(count(f.read_bytes()) for f in logs), strict=True)]
        except ValueError as e:
            print(f"{d}: {e}; is it a Kafka topic-partition directory?", file=sys.stderr)
            return 2
        print(f"{d}: zstd batches {totals[0]}, with a content size {totals[1]}, other codecs {totals[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
