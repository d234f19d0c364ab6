"""The batch, segment and sim bindings neither leak nor hold the GIL while they work.

RSS must not grow across many calls, successful and failing (the C core itself runs under
ASan/LSan and TSan in test_native_sanitized.py).
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from leakcheck import repeat_for, rss_kib, spin

import kbench
from kbench import _native
from kbench.model import batch, corpus, segment
from kbench.model import simulator as sim
from kbench.model.batch import Header, Record


def _churn(n: int, seg: Path) -> None:
    recs = [
        Record(key=b"k%d" % i, value=b"value %d " % i * 10, timestamp=i, headers=(Header("h", b"x"),))
        for i in range(20)
    ]
    for _ in range(n):
        for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
            data = batch.encode(recs, codec, client="librdkafka" if n % 2 else "java")
            batch.decode(data)
            for bad in (data[:-3], data[:30], data[:17] + b"\0\0\0\0" + data[21:]):
                try:
                    batch.decode(bad)
                except kbench.BatchError:
                    pass
        try:
            batch.encode([Record(value=b"x", headers=(Header("h", b"v"),)), 42], "zstd")  # type: ignore[list-item]
        except TypeError:
            pass
        segment.scan_file(seg)
        _native.segment_scan(seg.read_bytes()[:-100])
        batch.crc32c_impls()


@pytest.mark.slow
def test_no_rss_growth(tmp_path: Path) -> None:
    c = corpus.load("json", size=256 << 10)
    r = sim.run(c, sim.SimConfig(codec="zstd", partitions=2, start_ts_ms=0), tmp_path)
    seg = tmp_path / "kbench-sim-0" / "00000000000000000000.log"
    _churn(50, seg)
    for _ in range(3):
        sim.run(c, sim.SimConfig(codec="lz4", partitions=2, topic_compression="gzip", start_ts_ms=0), tmp_path / "w")
    before = rss_kib()
    _churn(300, seg)
    for _ in range(10):
        sim.run(c, sim.SimConfig(codec="lz4", partitions=2, topic_compression="gzip", start_ts_ms=0), tmp_path / "w")
    grown = rss_kib() - before
    # 300 iterations x ~25 calls: a 100-byte leak per call would add > 700 KiB
    assert grown < 1024, f"RSS grew by {grown} KiB"
    assert r.mismatches == 0


@pytest.mark.slow
def test_gil_released_during_sim(tmp_path: Path) -> None:
    """A Python thread keeps running while another thread is inside sim_run (three C threads)."""
    c = corpus.load("json", size=8 << 20)
    probe = threading.Event()

    base_n, base_t = spin(probe, 0.2)
    rate = base_n / base_t
    done = threading.Event()

    def worker() -> None:
        cfg = sim.SimConfig(codec="zstd", level=9, topic_compression="gzip", partitions=4, start_ts_ms=0)
        repeat_for(lambda i: sim.run(c, cfg, tmp_path / str(i)), 0.6)
        done.set()

    t = threading.Thread(target=worker)
    t.start()
    n, elapsed = spin(done)
    t.join()
    assert n > 0.2 * rate * elapsed, f"main thread ran {n} iterations in {elapsed:.2f}s; expected ~{rate * elapsed:.0f}"
