"""The librdkafka driver's own CPU window (``kbench.kafka.worker``) is exact, not in 10 ms ticks.

A consumer at 2,000 records/s uses 1–3 % of a core: over a 1.7 s window that is 20–50 ms, and
/proc's 10 ms ticks once read it as 0 (a CI run on 2026-12-06).  The window now reads
``getrusage(RUSAGE_SELF)`` (microseconds); here it is checked against ``CLOCK_PROCESS_CPUTIME_ID``
(``time.process_time``), an interface it does not use, over burns that fall between two ticks.
(The C producer's process total is checked the same way in tests/c/test_threadcpu.c.)
"""

from __future__ import annotations

import time

import pytest

from kbench.kafka import worker


def _burn(s: float) -> None:
    end = time.process_time() + s
    while time.process_time() < end:
        pass


@pytest.mark.parametrize("burn_s", [0.003, 0.025, 0.105])
def test_consumer_cpu_window_agrees_with_the_process_clock(burn_s: float) -> None:
    w = worker._Window(0.0)
    p0 = time.process_time()
    w.start()
    p1 = time.process_time()
    _burn(burn_s)
    p2 = time.process_time()
    cpu = w.stop()
    p3 = time.process_time()
    total = cpu["usr_s"] + cpu["sys_s"]
    assert cpu["usr_s"] >= 0 and cpu["sys_s"] >= 0, cpu
    # the reads' own CPU lies between the clock reads; ticks would be up to 10 ms off
    assert p2 - p1 - 0.001 <= total <= p3 - p0 + 0.001, (cpu, p2 - p1, p3 - p0)
    assert total > 0, cpu  # 3 ms: below one tick, where /proc read 0


def test_a_window_that_never_opened_reads_none_with_its_reason() -> None:
    w = worker._Window(60.0)
    w.start()
    cpu = w.stop()
    assert cpu["usr_s"] is None and cpu["sys_s"] is None
    assert cpu["note"] == "run shorter than the steady-window skip"
