"""What librdkafka's zstd decompression costs when a frame does not carry its content size.

librdkafka (2.0.2 here; the same code in later versions) sizes a zstd batch's output buffer from the
frame's content size.  A frame without one (written by a streaming encoder: the Java client's
zstd-jni, or a librdkafka linked to a shared libzstd such as Debian's) gets a buffer of twice its
compressed size; ``ZSTD_decompress`` fails with dstSize_tooSmall once that is full, and librdkafka
grows the buffer (+ max(2x, 4000) bytes) and decompresses the whole frame again.

This measures that cost on the built-in JSON corpus with the libzstd librdkafka links
(``libzstd.so.1``, through ctypes): each 64 KiB slice of the corpus compressed at --level without
its content size (as those producers write it), then decompressed (a) into a buffer of the right
size, once, and (b) as librdkafka does: 2x the compressed size, then grown until it fits.  The
figure is microseconds per record (the corpus's mean record), the median of --rounds rounds; one
round decompresses the whole corpus --passes times.  The frames' compression ratio decides how
many attempts librdkafka needs: at about 5:1 the second buffer (6x) fits.

Usage: python benchmarks/zstd_unsized_frames.py [--level 3] [--rounds 7] [--out r.json]
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import json
import statistics
import sys
import time
from pathlib import Path

import zstandard

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kbench.model import corpus  # noqa: E402

DST_TOO_SMALL = 70  # ZSTD_error_dstSize_tooSmall


def _lib() -> ctypes.CDLL:
    lib = ctypes.CDLL(ctypes.util.find_library("zstd") or "libzstd.so.1")
    lib.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
    lib.ZSTD_decompress.restype = ctypes.c_size_t
    lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
    lib.ZSTD_getErrorCode.argtypes = [ctypes.c_size_t]
    lib.ZSTD_versionString.restype = ctypes.c_char_p
    return lib


def librdkafka_way(lib: ctypes.CDLL, frame: bytes, out: ctypes.Array[ctypes.c_char]) -> tuple[int, int]:
    """Decompress ``frame`` as rd_kafka_zstd_decompress does without a content size: a buffer of
    2x the input, grown by max(2x, 4000) after each dstSize_tooSmall; (output bytes, attempts)."""
    size, attempts = 2 * len(frame), 0
    while True:
        attempts += 1
        r = lib.ZSTD_decompress(out, min(size, len(out)), frame, len(frame))
        if not lib.ZSTD_isError(r):
            return int(r), attempts
        if lib.ZSTD_getErrorCode(r) != DST_TOO_SMALL or size >= len(out):
            raise RuntimeError(f"ZSTD_decompress failed at a {size}-byte buffer")
        size += max(size * 2, 4000)


def measure(level: int, rounds: int, passes: int) -> dict[str, object]:
    lib = _lib()
    recs = corpus.generate("json", 4 << 20, seed=1).records
    raw = b"".join(recs)
    cz = zstandard.ZstdCompressor(level=level, write_content_size=False)
    frames = [cz.compress(raw[i : i + 65536]) for i in range(0, len(raw), 65536)]
    out = ctypes.create_string_buffer(1 << 22)
    attempts = [librdkafka_way(lib, f, out)[1] for f in frames]
    for f in frames:  # the exact way gives the same bytes
        assert lib.ZSTD_decompress(out, 1 << 22, f, len(f)) == len(
            zstandard.ZstdDecompressor().decompressobj().decompress(f)
        )

    def exact() -> None:
        for f in frames:
            lib.ZSTD_decompress(out, 1 << 22, f, len(f))

    def rdkafka() -> None:
        for f in frames:
            librdkafka_way(lib, f, out)

    per: dict[str, list[float]] = {"exact": [], "librdkafka": []}
    for _ in range(rounds):  # alternated, the first pair a warm-up
        for name, fn in (("exact", exact), ("librdkafka", rdkafka)):
            t0 = time.perf_counter()
            for _ in range(passes):
                fn()
            per[name].append((time.perf_counter() - t0) / passes / len(recs) * 1e6)
    per = {k: v[1:] for k, v in per.items()}
    return {
        "libzstd": lib.ZSTD_versionString().decode(),
        "level": level,
        "records": len(recs),
        "mean_record_bytes": len(raw) / len(recs),
        "frames": len(frames),
        "ratio": len(raw) / sum(len(f) for f in frames),
        "attempts_per_frame": statistics.mean(attempts),
        "us_per_record": {k: statistics.median(v) for k, v in per.items()},
        "us_per_record_range": {k: [min(v), max(v)] for k, v in per.items()},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--level", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--passes", type=int, default=20)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    res = measure(a.level, a.rounds, a.passes)
    us = res["us_per_record"]
    assert isinstance(us, dict)
    res["librdkafka_over_exact"] = us["librdkafka"] / us["exact"]
    text = json.dumps(res, indent=1, sort_keys=True)
    if a.out:
        a.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
