"""Oracle for kbench's CPU figures: a child that burns a known amount of CPU, measured by kbench's
/proc sampler (``kbench.kafka.procstat``: ``_native.proc_snapshot`` and ``ProcSampler``) and by
the kernel through interfaces kbench does not use:

- the child's own ``times(2)`` at the edges of its burn (``os.times``: user and system apart);
- ``getrusage(RUSAGE_CHILDREN)`` of this process after the child is reaped (whole life);
- ``/usr/bin/time`` (GNU time, the child's ``wait4`` rusage, whole life);
- ``perf stat -e task-clock`` (the scheduler's CPU clock of the task, whole life, user + system;
  it also counts time the hypervisor stole while the task was on a CPU, which the kernel's
  utime/stime leave out: the test allows the machine's steal over the child's life, read from
  /proc/stat).

The child burns about 1.0 s of user CPU (a Python loop) and 0.6 s of system CPU (reading
``/dev/zero`` in 1 MiB blocks: the kernel's copy), between two lines it prints, and idles on
stdin before and after.  Agreement: within 5 % per component (docs/testing.md, "Oracles").
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kbench.kafka import procstat

pytestmark = pytest.mark.slow

REL = 0.05  # 5 %: docs/testing.md, "Oracles"
USR_S, SYS_S = 1.0, 0.6

CHILD = f"""
import os, sys
print(os.getpid(), flush=True)
sys.stdin.readline()
a = os.times()
end = a.user + {USR_S}
x = 0
while os.times().user < end:  # one times(2) call per 200k additions: user time, not system
    for _ in range(200_000):
        x += 1
fd = os.open("/dev/zero", os.O_RDONLY)
s0 = os.times().system
while os.times().system - s0 < {SYS_S}:
    os.read(fd, 1 << 20)
os.close(fd)
b = os.times()
print(b.user - a.user, b.system - a.system, flush=True)
sys.stdin.readline()
"""


def burn(cmd_prefix: list[str], tmp: Path) -> tuple[procstat.SamplerResult, int, tuple[float, float]]:
    """Run the child under ``cmd_prefix``; kbench's sampler around its burn, its own times(2)."""
    script = tmp / "burn.py"
    script.write_text(CHILD)
    p = subprocess.Popen(
        [*cmd_prefix, sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert p.stdin is not None and p.stdout is not None
    pid = int(p.stdout.readline())
    with procstat.Sampler([pid], interval=0.1) as s:
        p.stdin.write("go\n")
        p.stdin.flush()
        usr, sys_ = (float(x) for x in p.stdout.readline().split())
    p.stdin.write("exit\n")
    p.stdin.close()
    assert p.wait(60) == 0
    assert s.result is not None
    return s.result, pid, (usr, sys_)


def stolen_s() -> float:
    """CPU seconds the hypervisor stole so far, all CPUs together: the ``steal`` column of
    /proc/stat's ``cpu`` line, read here directly (not through kbench)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()
    assert fields[0] == "cpu" and len(fields) > 8, fields
    return int(fields[8]) / os.sysconf("SC_CLK_TCK")


def window(res: procstat.SamplerResult, pid: int) -> tuple[float, float]:
    d = res.for_pid(pid)
    assert d is not None and d.status == "OK" and d.user_s is not None and d.sys_s is not None, d
    return d.user_s, d.sys_s


def whole_life(res: procstat.SamplerResult, pid: int) -> tuple[float, float]:
    """The child's cumulative CPU at the end of the window (it idles until it exits)."""
    e = res.end.get(pid)
    assert e is not None and e.user_s is not None and e.sys_s is not None, e
    return e.user_s, e.sys_s


def test_sampler_against_times_and_getrusage(tmp_path: Path) -> None:
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    res, pid, own = burn([], tmp_path)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    usr, sys_ = window(res, pid)
    # the burn as the child's own times(2) saw it
    assert own[0] >= USR_S * 0.98 and own[1] >= SYS_S, own
    assert usr == pytest.approx(own[0], rel=REL) and sys_ == pytest.approx(own[1], rel=REL), (usr, sys_, own)
    # the whole life, as wait4 reported it to this process
    life = whole_life(res, pid)
    assert life[0] == pytest.approx(r1.ru_utime - r0.ru_utime, rel=REL), (life, r1.ru_utime - r0.ru_utime)
    assert life[1] == pytest.approx(r1.ru_stime - r0.ru_stime, rel=REL), (life, r1.ru_stime - r0.ru_stime)
    # the sampler's background series is cumulative and ends near the end snapshot
    assert res.series, "the sampler thread took samples"
    last = res.series[-1].get(pid)
    assert last is not None and last.user_s is not None and last.user_s <= life[0] + 0.01


def test_sampler_against_gnu_time(tmp_path: Path) -> None:
    exe = shutil.which("time", path="/usr/bin")
    assert exe, "/usr/bin/time (GNU time) is installed by scripts/setup.sh"
    out = tmp_path / "time.txt"
    res, pid, own = burn([exe, "-f", "%U %S", "-o", str(out)], tmp_path)
    u, s = (float(x) for x in out.read_text().split()[-2:])
    life = whole_life(res, pid)
    # GNU time prints 2 decimals: 5 ms of rounding on top of the tolerance
    assert abs(life[0] - u) <= REL * u + 0.005 and abs(life[1] - s) <= REL * s + 0.005, (life, u, s)
    usr, sys_ = window(res, pid)
    assert usr == pytest.approx(own[0], rel=REL) and sys_ == pytest.approx(own[1], rel=REL)


def test_sampler_against_perf_stat_task_clock(tmp_path: Path) -> None:
    exe = shutil.which("perf")
    assert exe, "perf (linux-perf) is installed by scripts/setup.sh"
    probe = subprocess.run([exe, "stat", "-x", ",", "-e", "task-clock", "--", "true"], capture_output=True, text=True)
    if probe.returncode != 0:  # perf_event_open refused (kernel.perf_event_paranoid, a seccomp profile)
        pytest.skip(f"perf stat does not work here: {probe.stderr.strip().splitlines()[-1:]}")
    out = tmp_path / "perf.csv"
    steal0 = stolen_s()
    res, pid, _ = burn([exe, "stat", "-x", ",", "-e", "task-clock", "-o", str(out), "--"], tmp_path)
    stolen = stolen_s() - steal0
    line = next(x for x in out.read_text().splitlines() if "task-clock" in x)
    task_clock_s = float(line.split(",")[0]) / 1e3  # msec
    life = sum(whole_life(res, pid))
    # task-clock runs while the task is on a (virtual) CPU, time the hypervisor stole included;
    # the kernel's utime + stime (what /proc, times(2), wait4 and GNU time report) leave stolen
    # ticks out.  So life = task-clock - the part of the machine's steal that fell on this task:
    # between task-clock minus all steal on every CPU over the child's life, and task-clock.
    low, high = (task_clock_s - stolen) * (1 - REL), task_clock_s * (1 + REL)
    assert low <= life <= high, (life, task_clock_s, stolen, line)


def test_clock_ticks_are_converted_with_the_systems_tick_rate() -> None:
    """A snapshot of this process agrees with its own times(2) right after (same kernel
    counters, read two ways): the conversion from clock ticks cannot be off by a factor."""
    x = 0
    end = os.times().user + 0.3
    while os.times().user < end:
        x += 1
    a = os.times()
    snap = procstat.snapshot([os.getpid()]).get(os.getpid())
    b = os.times()
    assert snap is not None and snap.user_s is not None and snap.sys_s is not None
    assert a.user - 0.011 <= snap.user_s <= b.user + 0.011, (a, snap, b)
    assert a.system - 0.011 <= snap.sys_s <= b.system + 0.011, (a, snap, b)
