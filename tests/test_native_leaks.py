"""The Python bindings neither leak nor hold the GIL during codec work.

Leaks: RSS must not grow across many calls, successful and failing, once warmed up
(the C core itself runs under LeakSanitizer in test_c_asan.py).
"""

from __future__ import annotations

import threading

import pytest
from leakcheck import repeat_for, rss_kib, spin

from kbench import _native
from kbench.model import codecs


def _churn(n: int, data: bytes) -> None:
    for codec in ("gzip", "snappy", "lz4", "zstd"):
        blob = codecs.compress(data, codec)
        for _ in range(n):
            codecs.decompress(codecs.compress(data, codec), codec)
            try:
                codecs.decompress(blob[: len(blob) // 2], codec)
            except codecs.CodecError:
                pass
            try:
                codecs.decompress(blob, codec, max_size=10)
            except codecs.CodecError:
                pass
        b = _native.CodecBench(data, 4096, codec)
        b.compress(1)
        b.decompress(1)
        del b


@pytest.mark.slow
def test_no_rss_growth(json_bytes: bytes) -> None:
    data = json_bytes[:20000]
    _churn(300, data)
    before = rss_kib()
    _churn(1500, data)
    grown = rss_kib() - before
    # 4 codecs × 1500 iterations × (3 calls + objects): even a 100-byte leak per call
    # would add > 1.7 MiB.
    assert grown < 1024, f"RSS grew by {grown} KiB"


@pytest.mark.slow
def test_gil_released_during_compression(random_bytes: bytes) -> None:
    """A Python thread keeps running at a good share of its normal pace while another
    thread is inside a long zstd call; with the GIL held it would stall for the whole call."""
    data = random_bytes * 8  # 8 MiB
    probe = threading.Event()

    base_n, base_t = spin(probe, 0.2)
    rate = base_n / base_t
    done = threading.Event()

    def worker() -> None:
        repeat_for(lambda _: codecs.compress(data, "zstd", 19), 0.6)
        done.set()

    t = threading.Thread(target=worker)
    t.start()
    n, elapsed = spin(done)
    t.join()
    assert n > 0.3 * rate * elapsed, f"main thread ran {n} iterations in {elapsed:.2f}s; expected ~{rate * elapsed:.0f}"
