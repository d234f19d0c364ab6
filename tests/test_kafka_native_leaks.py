"""The Kafka-side bindings (histogram, /proc sampler, producer/consumer error paths) do not
leak, and the driver loops run without the GIL."""

from __future__ import annotations

import os
import socket
import threading
import time
from array import array

import pytest
from leakcheck import rss_kib

from kbench import _native


def _churn(n: int) -> None:
    pid = os.getpid()
    payload, offsets = b"abc" * 10, array("q", [0, 10, 30])
    for i in range(n):
        h = _native.Histogram()
        for v in (1, 1000, 10**9, -1, 10**13):
            h.record(v + i)
        g = _native.Histogram.decode(h.encode())
        g.merge(h)
        g.buckets()
        _native.proc_snapshot([pid, 999_999], threads=(i % 10 == 0))
        for kind in ("producer", "consumer"):
            try:
                if kind == "producer":
                    _native.Producer(
                        {"bootstrap.servers": "127.0.0.1:1", "no.such": "1"}, "t", payload, offsets, count=1
                    ).run()
                else:
                    _native.Consumer({"bootstrap.servers": "127.0.0.1:1", "no.such": "1"}, "t", expected=10).run()
            except _native.KafkaError:
                pass
        try:
            _native.Producer({}, "t", payload, array("q", [0, 99]), count=1)
        except ValueError:
            pass
    s = _native.ProcSampler([pid], interval=0.001)
    s.start()
    time.sleep(0.01)
    s.stop()


@pytest.mark.slow
def test_no_rss_growth() -> None:
    _churn(200)
    before = rss_kib()
    _churn(1500)
    grown = rss_kib() - before
    assert grown < 1024, f"RSS grew by {grown} KiB"


def test_producer_run_releases_the_gil() -> None:
    """While run() waits (bounded) for an unreachable broker, a Python thread keeps running."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = _native.Producer(
        {"bootstrap.servers": f"127.0.0.1:{port}"}, "t", b"x", array("q", [0, 1]), count=1, connect_timeout=1.0
    )
    box: dict[str, BaseException] = {}

    def worker() -> None:
        try:
            p.run()
        except BaseException as e:  # noqa: BLE001
            box["e"] = e

    t = threading.Thread(target=worker)
    t.start()
    n, start = 0, time.monotonic()
    while t.is_alive():
        n += 1
    elapsed = time.monotonic() - start
    t.join()
    assert isinstance(box.get("e"), _native.KafkaError)
    assert elapsed > 0.9 and n > 100_000, (n, elapsed)
    with pytest.raises(RuntimeError, match="runs once"):
        p.run()
