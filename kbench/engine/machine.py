"""What a run ran on: the machine (arch, CPU model, cores, memory), kernel and versions.

All readers take the ``/proc`` root as a parameter so tests can point them at fixtures.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import kbench
from kbench.model import codecs, cpuinfo

__all__ = ["Machine", "describe", "java_version", "librdkafka_version", "memory_total", "versions"]


@dataclass(frozen=True)
class Machine:
    """What a run ran on.  ``logical_cores`` and ``physical_cores`` count the CPUs the run may
    use (its CPU affinity, e.g. under ``taskset``), ``host_logical_cores`` all of the host's."""

    arch: str
    cpu_model: str
    physical_cores: int | None
    logical_cores: int
    memory_bytes: int | None
    kernel: str
    os: str
    hostname_hash: str  # a hash, not the name: manifests get shared
    host_logical_cores: int = 0
    cpu_affinity: str = ""  # the CPU ids the run may use, e.g. "0-3,8"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _cpuinfo(proc: Path) -> tuple[str, int | None]:
    return cpuinfo.read_cpuinfo(proc)


def _affinity() -> list[int]:
    """The CPU ids this process may run on (all CPUs where the OS has no affinity call)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 0))


def _ranges(ids: list[int]) -> str:
    """``0-3,8`` for [0, 1, 2, 3, 8]."""
    runs: list[list[int]] = []
    for i in ids:
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _physical_cores_sysfs(sys_root: Path, cpus: list[int] | None = None) -> int | None:
    """Distinct (package, core) pairs among ``cpus`` (all CPUs when None)."""
    ids: set[tuple[str, str]] = set()
    dirs = (
        [sys_root / f"devices/system/cpu/cpu{c}/topology" for c in cpus]
        if cpus is not None
        else list(sys_root.glob("devices/system/cpu/cpu[0-9]*/topology"))
    )
    for topo in dirs:
        try:
            ids.add(((topo / "physical_package_id").read_text().strip(), (topo / "core_id").read_text().strip()))
        except OSError:
            continue
    return len(ids) or None


def memory_total(proc: Path = Path("/proc")) -> int | None:
    """Bytes of physical memory (/proc/meminfo MemTotal), or None when unreadable."""
    try:
        m = re.search(r"^MemTotal:\s+(\d+) kB", (proc / "meminfo").read_text(), re.M)
    except OSError:
        return None
    return int(m.group(1)) * 1024 if m else None


def describe(proc: Path = Path("/proc"), sys_root: Path = Path("/sys")) -> Machine:
    import hashlib

    model, phys = _cpuinfo(proc)
    host = os.cpu_count() or 0
    cpus = _affinity()
    if cpus and len(cpus) < host:  # pinned (taskset, cgroup cpuset): the cores of those CPUs
        phys = _physical_cores_sysfs(sys_root, cpus)
    else:
        phys = phys or _physical_cores_sysfs(sys_root)
    return Machine(
        arch=platform.machine(),
        cpu_model=model,
        physical_cores=phys,
        logical_cores=len(cpus) or host,
        memory_bytes=memory_total(proc),
        kernel=platform.release(),
        os=platform.platform(),
        hostname_hash=hashlib.sha256(platform.node().encode()).hexdigest()[:12],
        host_logical_cores=host,
        cpu_affinity=_ranges(cpus),
    )


def librdkafka_version() -> str | None:
    """The librdkafka version loaded at run time (the one the C drivers are linked against)."""
    from kbench.kafka.drivers import librdkafka_version as loaded

    return loaded()


def java_version() -> str | None:
    """``java -version``'s version string, or None without Java."""
    from kbench.kafka import kafka_dist

    try:
        exe = kafka_dist.java()
    except Exception:  # noqa: BLE001 - no Java is a result, not an error
        return None
    try:
        p = subprocess.run([exe, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r'version "([^"]+)"', p.stderr + p.stdout)
    return m.group(1) if m else None


def java_major(version: str | None) -> int | None:
    if not version:
        return None
    parts = version.split(".")
    try:
        return int(parts[1]) if parts[0] == "1" else int(parts[0].split("-")[0].split("+")[0])
    except (ValueError, IndexError):
        return None


def versions(with_java: bool = True) -> dict[str, str | None]:
    """kbench, librdkafka, codec libraries, Kafka (pinned) and Java versions."""
    from kbench.kafka.kafka_dist import KAFKA_VERSION

    lib = codecs.library_versions()
    return {
        "kbench": kbench.__version__,
        "python": platform.python_version(),
        "librdkafka": librdkafka_version(),
        "libzstd": lib.get("zstd"),
        "liblz4": lib.get("lz4"),
        "snappy": lib.get("snappy"),
        "zlib": lib.get("zlib"),
        "kafka_pinned": KAFKA_VERSION,
        "java": java_version() if with_java and (shutil.which("java") or os.environ.get("JAVA_HOME")) else None,
    }
