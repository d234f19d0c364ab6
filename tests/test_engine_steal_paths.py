"""The injected steal source on the Dask path (kbench.engine.transports.kafka + measure.assemble).

A Dask pool reports the highest steal its drivers' hosts measured (``driver_steal_pct``, read
from each worker's live /proc/stat).  When a test injects the run's steal source, that figure is
the run's steal on every path: the workers' own live figure must not override it (else a busy
host makes a repetition INVALID in a test that injected 0 %).  Without an injected source the
drivers' hosts count, the highest figure wins.  No Kafka, no Dask: the transport's measuring
step runs over a fake pool that opens and closes the broker window as a pool does.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from kbench.engine.cell import Cell
from kbench.engine.transports.base import RunRequest
from kbench.engine.transports.kafka import KafkaTransport
from kbench.engine.transports.measure import Jobs, PoolResult, StoredInfo, Window
from kbench.kafka import procstat
from kbench.model.corpus import Corpus

PRODUCER: dict[str, Any] = {"sent": 100, "delivered": 100, "failed": 0, "undelivered": 0, "bytes": 1000}
PRODUCER |= {"send_seconds": 1.0, "achieved_rate": 100.0, "delivered_rate": 100.0}


class FakeDaskPool:
    """What DaskPool.run does to the window, and a driver host that measured 40 % steal."""

    def __init__(self, driver_steal_pct: float | None) -> None:
        self.driver_steal_pct = driver_steal_pct

    def run(self, req: RunRequest, jobs: Jobs, window: Window) -> PoolResult:
        window.open()
        window.nic_start()
        window.nic_end()
        window.close()
        return PoolResult(PRODUCER, None, (), 1000, driver_steal_pct=self.driver_steal_pct)


def _measure(steal_source: procstat.StealSource | None, driver_steal_pct: float | None) -> float | None:
    cell = Cell("c1", "s", ("B",), "lz4", "json", 16384, 5.0, 1, "all", 100.0, "producer")
    req = RunRequest(cell, "t", Corpus("json", (b"x" * 10,)), 100.0, 1.0, 0.0, steal_source=steal_source)
    t: Any = SimpleNamespace(
        _local=object(),
        dask=FakeDaskPool(driver_steal_pct),
        brokers=(),
        _snapshot=lambda: procstat.snapshot([]),
        _probe=None,
        _jobs=lambda r: Jobs(PRODUCER, None, 100),
        _stored=lambda r, readback: StoredInfo(),
    )
    t._window = lambda r: KafkaTransport._window(t, r)
    return KafkaTransport._measure(t, req, None).steal_pct


def test_an_injected_steal_is_the_runs_steal_on_the_dask_path() -> None:
    assert _measure(procstat.FixedSteal(0.0), 40.0) == pytest.approx(0.0)
    assert _measure(procstat.FixedSteal(2.5), 40.0) == pytest.approx(2.5)
    assert _measure(procstat.FixedSteal(None), 40.0) is None  # injected "not measurable" stays NA


def test_without_an_injected_source_the_driver_hosts_steal_counts() -> None:
    steal = _measure(None, 40.0)
    assert steal is not None and steal >= 40.0
    assert _measure(procstat.FixedSteal(0.0), None) == pytest.approx(0.0)
