"""The /proc CPU sampler."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kbench.kafka import procstat
from kbench.kafka.procstat import NA, NEGATIVE, OK, ProcCpu, Snapshot


def burn(seconds_of_cpu: float = 0.2) -> None:
    start = os.times()
    while (os.times().user - start.user) < seconds_of_cpu:
        sum(range(1000))


def test_own_cpu_delta_is_positive_and_series_is_sampled() -> None:
    with procstat.Sampler([os.getpid()], interval=0.02) as s:
        burn(0.6)  # every CPU's time counts: on 1 CPU or more this passes STEAL_MIN_WINDOW_CPU_S
    r = s.result
    assert r is not None
    d = r.for_pid(os.getpid())
    assert d is not None and d.status == OK
    assert d.user_s is not None and d.user_s >= 0.1
    assert len(r.series) >= 2
    assert r.series[0].t_ns <= r.series[-1].t_ns
    assert r.steal_pct is not None and 0 <= r.steal_pct <= 100
    assert r.iowait_pct is not None and 0 <= r.iowait_pct <= 100
    with procstat.Sampler([os.getpid()], interval=0.02) as short:
        pass  # a window of a few clock ticks: steal cannot be told, never 100 %
    assert short.result is not None and short.result.steal_pct is None


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


def _proc_stat() -> procstat.SystemCpu:
    s = procstat.parse_system(Path("/proc/stat").read_text(), float(os.sysconf("SC_CLK_TCK")))
    assert s is not None
    return s


def test_system_counters_are_proc_stat_in_seconds() -> None:
    # the C reader's every field lies between two Python readings of /proc/stat taken around it
    # (the counters only grow): a wrong tick conversion, a dropped or swapped field cannot
    before = _proc_stat()
    c = procstat.snapshot([]).system
    after = _proc_stat()
    assert c is not None
    for name in ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "total"):
        assert getattr(before, name) - 1e-9 <= getattr(c, name) <= getattr(after, name) + 1e-9, name


def test_process_counters_agree_with_os_times() -> None:
    # /proc/<pid>/stat utime/stime and times(2) count the same ticks for the whole process
    burn(0.3)
    tick = 1.0 / os.sysconf("SC_CLK_TCK")
    t0 = os.times()
    me = procstat.snapshot([os.getpid()]).get(os.getpid())
    t1 = os.times()
    assert me is not None and me.user_s is not None and me.sys_s is not None
    assert t0.user - tick <= me.user_s <= t1.user + tick, (t0.user, me.user_s, t1.user)
    assert t0.system - tick <= me.sys_s <= t1.system + tick, (t0.system, me.sys_s, t1.system)


def test_delta_per_process_and_thread_with_gone_and_regressed_counters() -> None:
    """``procstat.delta`` on snapshots built by hand: user and system each differenced, threads
    matched by (pid, tid), a pid gone at the end NA (keeping its name), a counter that went down
    NEGATIVE with the delta kept."""
    P = procstat.ProcCpu
    a = procstat.Snapshot(
        0,
        None,
        (
            P(10, None, "java", 1.0, 2.0),
            P(10, 11, "rdk:main", 0.5, 0.25),
            P(10, 12, "app", 0.1, 0.1),
            P(20, None, "gone", 3.0, 4.0),
            P(30, None, "restarted", 5.0, 5.0),
        ),
    )
    b = procstat.Snapshot(
        1,
        None,
        (
            P(10, None, "java", 1.5, 2.75),
            P(10, 12, "app", 0.3, 0.1),
            P(10, 11, "rdk:main2", 0.75, 0.5),
            P(30, None, "restarted", 0.5, 6.0),
        ),
    )
    d = {(x.pid, x.tid): x for x in procstat.delta(a, b)}
    assert list(d) == [(10, None), (10, 11), (10, 12), (20, None), (30, None)]
    assert (d[10, None].user_s, d[10, None].sys_s, d[10, None].status) == (0.5, 0.75, "OK")
    assert d[10, None].total_s == 1.25
    assert (d[10, 11].user_s, d[10, 11].sys_s, d[10, 11].comm) == (0.25, 0.25, "rdk:main2")
    assert d[10, 12].user_s == pytest.approx(0.2) and d[10, 12].sys_s == 0.0
    gone = d[20, None]
    assert (gone.user_s, gone.sys_s, gone.status, gone.comm, gone.total_s) == (None, None, "NA", "gone", None)
    back = d[30, None]
    assert (back.user_s, back.sys_s, back.status) == (-4.5, 1.0, "NEGATIVE")
    # unreadable at the start (None counters): NA, named after the end's comm when the start has none
    c = procstat.Snapshot(0, None, (P(40, None, None, None, None),))
    (x,) = procstat.delta(c, procstat.Snapshot(1, None, (P(40, None, "late", 1.0, 1.0),)))
    assert (x.pid, x.tid, x.comm, x.status) == (40, None, "late", "NA")
