"""A tool's steady window, seen from outside the tool: run it, read its output as it comes and, at
every progress event it prints (a chunk of records, a periodic stats line), note the time, its
cumulative count and the process's CPU (user + sys of every thread, from /proc/PID/stat).

The window is first event .. last event before the tool's final flush, so the process's start-up,
connection and group join (before the first event) and its teardown (after the last) are outside
it.  The whole process (wall from start to exit, CPU from its rusage) is kept apart.

Used by consumer_vs_peers.py and producer_vs_peers_rdkafka.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbench.experiments.g_drain import write_back

CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` so far (all its threads); None once gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            rest = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(rest[11]) + int(rest[12])) / CLK_TCK


@dataclass(frozen=True)
class Sample:
    t: float  # monotonic seconds since the process started
    count: int  # the tool's cumulative count at this event
    cpu_s: float  # the process's CPU at this event


@dataclass
class Run:
    samples: list[Sample] = field(default_factory=list)
    wall_s: float = 0.0  # whole process: start .. exit
    cpu_s: float = 0.0  # whole process: rusage at exit
    rc: int = 0
    stderr: str = ""
    stdout_tail: bytes = b""
    writeback_s: float = 0.0  # the os.sync before the tool started (write_back)

    def window(self, last: int = -1) -> dict[str, float]:
        """Rate and CPU per record over samples[0] .. samples[last]."""
        if len(self.samples) < 2:
            raise RuntimeError(f"no steady window: {len(self.samples)} progress events; stderr {self.stderr[-300:]!r}")
        a, b = self.samples[0], self.samples[last]
        n = b.count - a.count
        dt = b.t - a.t
        if n <= 0 or dt <= 0:
            raise RuntimeError(f"empty steady window ({n} records over {dt:.3f} s)")
        return {
            "window_s": dt,
            "window_records": n,
            "msgs_per_s": n / dt,
            "cpu_us_per_record": (b.cpu_s - a.cpu_s) / n * 1e6,
            "window_cpu_pct": (b.cpu_s - a.cpu_s) / dt * 100,
        }


#: A parser: fed each chunk of stdout, returns the cumulative counts of the progress events in it.
Parser = Callable[[bytes], list[int]]


def newline_counter() -> Parser:
    """Every chunk is a progress event: the count is the newlines so far (one record a line)."""
    total = 0

    def feed(chunk: bytes) -> list[int]:
        nonlocal total
        total += chunk.count(b"\n")
        return [total]

    return feed


def line_parser(count_of: Callable[[str], int | None]) -> Parser:
    """Each complete line that ``count_of`` gives a count for is a progress event."""
    buf = b""

    def feed(chunk: bytes) -> list[int]:
        nonlocal buf
        buf += chunk
        *lines, buf = buf.split(b"\n")
        out = []
        for ln in lines:
            c = count_of(ln.decode(errors="replace"))
            if c is not None:
                out.append(c)
        return out

    return feed


def run_sampled(cmd: Sequence[str], parser: Parser, timeout: float = 900.0, env: dict[str, str] | None = None) -> Run:
    """Run ``cmd`` with no dirty page left by the run before (``write_back``, G's own: a run
    leaves gigabytes of a broker's log dirty, whose writeback would slow the next tool; every tool
    alike), sampling the time and its CPU at each progress event ``parser`` finds."""
    run = Run(writeback_s=write_back())
    with tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, env=env)
        assert p.stdout is not None
        fd = p.stdout.fileno()
        tail = b""
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            t = time.monotonic() - t0
            cpu = proc_cpu_s(p.pid)
            counts = parser(chunk)
            if cpu is not None:
                run.samples.extend(Sample(t, c, cpu) for c in counts)
            tail = (tail + chunk)[-65536:]
            if t > timeout:
                p.kill()
        _, status, ru = os.wait4(p.pid, 0)
        run.wall_s = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        p.stdout.close()
        run.rc = p.returncode
        run.cpu_s = ru.ru_utime + ru.ru_stime
        err.seek(0)
        run.stderr = err.read().decode(errors="replace")
        run.stdout_tail = tail
    return run


def finish(
    res: dict[str, Any], tools: Sequence[str], min_window: float, out: Path | None, table: str, hint: str
) -> int:
    """Record the windows shorter than ``min_window`` in ``res``, write it as JSON to ``out``, print
    ``table``; exit status 1 (and why, with ``hint``) when a window was too short."""
    short = [
        f"{codec} {tool} {r[tool]['window_s']:.2f} s"
        for codec, c in res["codecs"].items()
        for r in c["runs"]
        for tool in tools
        if r[tool]["window_s"] < min_window
    ]
    res["short_windows"] = short
    if out:
        out.write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
    print(table)
    if short:
        print(f"windows shorter than {min_window} s ({hint}): {', '.join(short)}", file=sys.stderr)
        return 1
    return 0
