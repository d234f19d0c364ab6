"""Malformed input: every decoder raises CodecError and never crashes.

Truncations at every prefix length of a small frame, single-bit flips at every bit, and
random inputs.  The same fuzz loop runs in C under AddressSanitizer + UBSan
(tests/c/test_codecs_asan.c via test_c_asan.py).
"""

from __future__ import annotations

import random

import pytest

from kbench.model import codecs

CODECS = ["gzip", "snappy", "lz4", "zstd"]


def _try(buf: bytes, codec: str) -> None:
    try:
        codecs.decompress(buf, codec, max_size=1 << 20)
    except codecs.CodecError:
        pass


@pytest.mark.parametrize("codec", CODECS)
def test_truncated_frames_raise(codec: str, json_bytes: bytes) -> None:
    frame = codecs.compress(json_bytes[:3000], codec)
    for n in range(len(frame)):
        if codec == "snappy" and n == 16:  # the bare xerial header is a valid empty stream
            continue
        with pytest.raises(codecs.CodecError):
            codecs.decompress(frame[:n], codec)


@pytest.mark.parametrize("codec", CODECS)
def test_bit_flips_never_crash(codec: str, json_bytes: bytes) -> None:
    frame = codecs.compress(json_bytes[:600], codec)
    for bit in range(len(frame) * 8):
        b = bytearray(frame)
        b[bit // 8] ^= 1 << (bit % 8)
        _try(bytes(b), codec)


@pytest.mark.parametrize("codec", CODECS)
def test_random_input_never_crashes(codec: str) -> None:
    rng = random.Random(codec)
    prefixes = {
        "gzip": b"\x1f\x8b\x08\x00",
        "snappy": b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01",
        "lz4": bytes.fromhex("04224d18604082"),
        "zstd": bytes.fromhex("28b52ffd"),
    }
    for _ in range(3000):
        body = rng.randbytes(rng.randint(0, 300))
        _try(body, codec)
        _try(prefixes[codec] + body, codec)
