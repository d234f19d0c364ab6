"""The /proc CPU sampler."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kbench.kafka import procstat
from kbench.kafka.procstat import NA, NEGATIVE, OK, ProcCpu, Snapshot


def burn(seconds_of_cpu: float = 0.2) -> None:
    start = os.times()
    while (os.times().user - start.user) < seconds_of_cpu:
        sum(range(1000))


def test_own_cpu_delta_is_positive_and_series_is_sampled() -> None:
    with procstat.Sampler([os.getpid()], interval=0.02) as s:
        burn()
    r = s.result
    assert r is not None
    d = r.for_pid(os.getpid())
    assert d is not None and d.status == OK
    assert d.user_s is not None and d.user_s >= 0.1
    assert len(r.series) >= 2
    assert r.series[0].t_ns <= r.series[-1].t_ns
    assert r.steal_pct is not None and 0 <= r.steal_pct <= 100
    assert r.iowait_pct is not None and 0 <= r.iowait_pct <= 100


def test_vanished_pid_is_na_never_zero() -> None:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    snap = procstat.snapshot([p.pid, os.getpid()])
    gone = snap.get(p.pid)
    assert gone is not None and gone.user_s is None and gone.sys_s is None and gone.comm is None
    a = procstat.snapshot([os.getpid(), p.pid])
    d = procstat.delta(a, procstat.snapshot([os.getpid(), p.pid]))
    assert [x.status for x in d] == [OK, NA]
    assert d[1].total_s is None


def test_pid_that_dies_during_the_window_is_na() -> None:
    p = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    a = procstat.snapshot([p.pid])
    assert a.procs[0].ok
    p.communicate(b"")
    d = procstat.delta(a, procstat.snapshot([p.pid]))
    assert d[0].status == NA and d[0].user_s is None


def test_negative_delta_is_flagged() -> None:
    a = Snapshot(0, None, (ProcCpu(1, None, "x", 5.0, 1.0),))
    b = Snapshot(1, None, (ProcCpu(1, None, "x", 4.0, 1.5),))
    d = procstat.delta(a, b)[0]
    assert d.status == NEGATIVE and d.user_s == pytest.approx(-1.0)


def test_threads_are_listed_on_request() -> None:
    snap = procstat.snapshot([os.getpid()], threads=True)
    assert snap.get(os.getpid()) is not None
    assert snap.get(os.getpid(), os.getpid()) is not None  # the main thread


def test_bad_pid_is_rejected() -> None:
    with pytest.raises(ValueError, match="bad pid"):
        procstat.snapshot([0])
