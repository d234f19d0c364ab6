"""Per-host cgroups: a CPU set and a CFS quota, under cgroup v1 (``cpuset``, ``cpu``) or v2.

The layout is read from ``/proc/self/mounts``: v1 hierarchies that carry ``cpuset`` or ``cpu``
win (a hybrid machine's v2 mount often has no controllers); a v2-only machine uses the unified
hierarchy with the controllers its root already delegates (``cgroup.subtree_control``; kbench
never changes what the machine delegates).  A host's cgroup is ``<root>/kbench-<id>-<host>`` in
each hierarchy used.  Processes join it by writing their pid to ``cgroup.procs``.
"""

from __future__ import annotations

import errno
import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kbench.testbed.errors import TestbedError

__all__ = ["CgroupLayout", "create", "detect", "join", "procs", "remove"]

CFS_PERIOD_US = 100_000


@dataclass(frozen=True)
class CgroupLayout:
    """Where host cgroups go on this machine (``version`` 0: nowhere writable)."""

    version: int
    cpuset: Path | None = None  # the root that owns the cpuset controller
    cpu: Path | None = None  # the root that owns the cpu controller (CFS quota)
    plain: Path | None = None  # v2 without delegated controllers: membership only
    note: str = ""  # why something is missing

    @property
    def roots(self) -> tuple[Path, ...]:
        """The distinct hierarchy roots a host cgroup is made under."""
        out: list[Path] = []
        for p in (self.cpuset, self.cpu, self.plain):
            if p is not None and p not in out:
                out.append(p)
        return tuple(out)

    @property
    def can_quota(self) -> bool:
        return self.cpu is not None


def _writable(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK)


def detect(mounts: str | None = None) -> CgroupLayout:
    """This machine's cgroup layout (``mounts``: the text of /proc/self/mounts, for tests)."""
    if mounts is None:
        try:
            mounts = Path("/proc/self/mounts").read_text()
        except OSError:
            return CgroupLayout(0, note="/proc/self/mounts is unreadable")
    v1: dict[str, Path] = {}
    v2: Path | None = None
    for line in mounts.splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        _, where, fstype, opts = parts[:4]
        options = set(opts.split(","))
        if "rw" not in options:
            continue
        if fstype == "cgroup":
            for ctrl in ("cpuset", "cpu"):
                if ctrl in options and ctrl not in v1 and _writable(Path(where)):
                    v1[ctrl] = Path(where)
        elif fstype == "cgroup2" and v2 is None and _writable(Path(where)):
            v2 = Path(where)
    if v1:
        missing = [c for c in ("cpuset", "cpu") if c not in v1]
        return CgroupLayout(
            1,
            cpuset=v1.get("cpuset"),
            cpu=v1.get("cpu"),
            note=f"cgroup v1 has no writable {' or '.join(missing)} hierarchy" if missing else "",
        )
    if v2 is not None:
        try:
            delegated = set((v2 / "cgroup.subtree_control").read_text().split())
        except OSError:
            delegated = set()
        cpuset = v2 if "cpuset" in delegated else None
        cpu = v2 if "cpu" in delegated else None
        missing = [c for c in ("cpuset", "cpu") if c not in delegated]
        return CgroupLayout(
            2,
            cpuset=cpuset,
            cpu=cpu,
            plain=v2 if cpuset is None and cpu is None else None,
            note=f"cgroup v2 at {v2} does not delegate {' or '.join(missing)}" if missing else "",
        )
    return CgroupLayout(0, note="no writable cgroup hierarchy is mounted")


def paths(layout: CgroupLayout, name: str) -> tuple[Path, ...]:
    """The directories a host cgroup called ``name`` occupies (one per hierarchy root)."""
    return tuple(root / name for root in layout.roots)


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError as e:
        raise TestbedError(f"cannot write {value!r} to {path}: {e.strerror}; is the cgroup hierarchy writable?") from e


def _cpuset_file(d: Path, leaf: str) -> Path:
    """``cpuset.<leaf>``, or plain ``<leaf>`` on a v1 hierarchy mounted with noprefix."""
    f = d / f"cpuset.{leaf}"
    return f if f.exists() else d / leaf


def create(layout: CgroupLayout, name: str, cpus: Iterable[int], quota: float | None) -> tuple[Path, ...]:
    """Make the host cgroup ``name``: its CPU set and, when ``quota`` is set, its CFS quota."""
    made = paths(layout, name)
    cpu_list = ",".join(str(c) for c in sorted(cpus))
    for d in made:
        try:
            d.mkdir()
        except OSError as e:
            raise TestbedError(f"cannot make cgroup {d}: {e.strerror}; is the cgroup hierarchy writable?") from e
    if layout.cpuset is not None:
        d = layout.cpuset / name
        if layout.version == 1:
            # a v1 cpuset takes no task before it has CPUs and memory nodes
            _write(_cpuset_file(d, "cpus"), cpu_list)
            mems = _cpuset_file(layout.cpuset, "mems").read_text().strip()
            _write(_cpuset_file(d, "mems"), mems)
        else:
            _write(d / "cpuset.cpus", cpu_list)
    if quota is not None:
        if layout.cpu is None:
            raise TestbedError(f"no CPU quota possible here ({layout.note}); drop cpu_quota or use CPU sets")
        d = layout.cpu / name
        if layout.version == 1:
            period = int((d / "cpu.cfs_period_us").read_text())
            _write(d / "cpu.cfs_quota_us", str(max(1000, round(quota * period))))
        else:
            _write(d / "cpu.max", f"{max(1000, round(quota * CFS_PERIOD_US))} {CFS_PERIOD_US}")
    return made


def join(dirs: Iterable[Path], pid: int) -> None:
    """Move process ``pid`` (all its threads) into every directory of a host cgroup."""
    for d in dirs:
        (d / "cgroup.procs").write_text(str(pid))


def procs(d: Path) -> list[int]:
    try:
        return [int(x) for x in (d / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def remove(d: Path, timeout: float = 10.0) -> None:
    """Kill what still runs in cgroup directory ``d`` and remove it (gone already: nothing to do)."""
    if not d.exists():
        return
    deadline = time.monotonic() + timeout
    while True:
        for pid in procs(d):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            d.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as e:
            if e.errno != errno.EBUSY or time.monotonic() > deadline:
                raise TestbedError(
                    f"cannot remove cgroup {d}: {e.strerror}; kill what runs in it (cat {d}/cgroup.procs) and rmdir it"
                ) from e
        time.sleep(0.05)  # the killed processes are still exiting
