"""What the environment gate reads and reports: each check's result, the /proc samples, the
context of roots and facts a check reads (so tests run them on fixture files), the report, and
the short CPU load the steal check measures under."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kbench.kafka import procstat

__all__ = [
    "BLOCKING",
    "BUSY_SCRIPT",
    "CheckResult",
    "GIB",
    "GateContext",
    "GateReport",
    "ProcSample",
    "WARNING",
    "busy_load",
    "read_text",
    "sample",
    "steal_pct",
    "stop_procs",
    "swap_pages",
]


BLOCKING = "blocking"


WARNING = "warning"


GIB = 1 << 30


@dataclass(frozen=True)
class CheckResult:
    name: str
    severity: str  # blocking | warning
    outcome: str  # pass | fail | unknown
    detail: str

    @property
    def blocks(self) -> bool:
        return self.severity == BLOCKING and self.outcome == "fail"


@dataclass(frozen=True)
class ProcSample:
    """The /proc texts sampled at one instant (for deltas over the gate's window)."""

    stat: str
    vmstat: str


@dataclass
class GateContext:
    """Everything the checks look at; defaults read the live machine."""

    proc: Path = Path("/proc")
    sys_root: Path = Path("/sys")
    transport_kind: str = "local"
    broker_versions: Sequence[str | None] = ()
    broker_default_compression: Sequence[str | None] = ()
    planned_topic_compression: Sequence[str] = ()
    #: per broker, where its version came from ("local cluster", "metrics", "--broker-version", "")
    broker_version_sources: Sequence[str] = ()
    #: per broker, where its CPU will come from ("/proc", "metrics", "" = nowhere)
    broker_cpu_sources: Sequence[str] = ()
    planned_brokers: int | None = None  # transport.brokers of the plan (the topology it describes)
    replication_factor: int = 1
    min_insync_replicas: int | None = None
    planned_acks: Sequence[str] = ()
    stored_bytes_source: str = ""  # "segment files" (local log dirs) or "DescribeLogDirs"
    disk_paths: Sequence[Path] = (Path("."),)
    min_free_bytes: int = 2 * GIB
    min_open_files: int = 4096
    max_load_per_cpu: float = 0.5
    min_mem_available: int = 1 * GIB
    librdkafka_version: str | None = None
    java_version: str | None = None
    codec_versions: Mapping[str, str] = field(default_factory=dict)
    corpus_entropies: Mapping[str, float] = field(default_factory=dict)
    sample_s: float = 1.0
    cpu_count: int = field(default_factory=lambda: os.cpu_count() or 1)
    open_files_limit: int | None = None
    time_sync: Callable[[], bool | None] | None = None
    before: ProcSample | None = None
    after: ProcSample | None = None
    #: The plan's steal limit (``max_steal_pct``): a run above it is INVALID.
    steal_limit_pct: float = procstat.STEAL_LIMIT_PCT
    #: Where the steal figure's counters come from (None: ``proc``/stat); tests inject one.
    steal_source: procstat.StealSource | None = None
    #: Steal measured under load by :func:`run_gate` (None: from ``before``/``after``).
    steal_under_load: float | None = None
    loaded_cpus: int = 0


@dataclass(frozen=True)
class GateReport:
    results: tuple[CheckResult, ...]
    forced: bool = False

    @property
    def blocked(self) -> bool:
        return any(r.blocks for r in self.results)

    @property
    def blocking_failures(self) -> list[CheckResult]:
        return [r for r in self.results if r.blocks]

    def as_dict(self) -> dict[str, Any]:
        return {"blocked": self.blocked, "forced": self.forced, "checks": [asdict(r) for r in self.results]}

    def table(self) -> str:
        w = max(len(r.name) for r in self.results)
        lines = []
        for r in self.results:
            mark = {"pass": "ok  ", "fail": "FAIL" if r.severity == BLOCKING else "warn", "unknown": "?   "}[r.outcome]
            lines.append(f"  [{mark}] {r.name.ljust(w)}  {r.severity:<8}  {r.detail}")
        return "\n".join(lines)


def read_text(p: Path) -> str | None:
    try:
        return p.read_text()
    except OSError:
        return None


def sample(proc: Path) -> ProcSample:
    return ProcSample(read_text(proc / "stat") or "", read_text(proc / "vmstat") or "")


def steal_pct(before: str, after: str) -> float | None:
    """System-wide steal as % of all CPU time between two ``/proc/stat`` texts
    (:func:`kbench.kafka.procstat.steal_pct`, the one steal rule; None when it cannot tell)."""
    return procstat.steal_pct(procstat.parse_system(before), procstat.parse_system(after))


BUSY_SCRIPT = "import sys,time\nsys.stdout.write('1');sys.stdout.flush()\nt=time.monotonic()+float(sys.argv[1])\nwhile time.monotonic()<t: pass\n"


def busy_load(cpus: int, seconds: float) -> list[subprocess.Popen[str]]:
    """One busy-looping process per CPU for ``seconds``, returned once every one is spinning
    (each says so on its stdout): CPU steal on a shared VM shows under load, not idle."""
    procs = [
        subprocess.Popen([sys.executable, "-c", BUSY_SCRIPT, f"{seconds + 5.0}"], stdout=subprocess.PIPE, text=True)
        for _ in range(max(1, cpus))
    ]
    for p in procs:
        assert p.stdout is not None
        p.stdout.read(1)
    return procs


def stop_procs(procs: Sequence[subprocess.Popen[str]]) -> None:
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()
        if p.stdout is not None:
            p.stdout.close()


def swap_pages(before: str, after: str) -> int | None:
    def val(text: str) -> int | None:
        vals = procstat.parse_vmstat(text)
        try:
            return vals["pswpin"] + vals["pswpout"]
        except KeyError:
            return None

    a, b = val(before), val(after)
    return None if a is None or b is None else b - a
