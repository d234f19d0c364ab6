"""The environment gate (E0): checks run before any collection, each blocking or a warning.

A check's outcome is ``pass``, ``fail`` or ``unknown`` (could not be determined, e.g. no
cpufreq in a VM).  Only a *blocking* check that *fails* refuses to collect (unless
``--force``, which the manifest records).  Every check reads from roots given in
:class:`GateContext`, so tests run them against fixture files.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kbench.engine.machine import java_major
from kbench.engine.plan import Plan
from kbench.engine.transports.base import TransportInfo
from kbench.kafka import procstat
from kbench.model import codecs

__all__ = ["CheckResult", "GateContext", "GateReport", "CHECKS", "run_gate", "steal_pct", "swap_pages"]

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


def _read(p: Path) -> str | None:
    try:
        return p.read_text()
    except OSError:
        return None


def sample(proc: Path) -> ProcSample:
    return ProcSample(_read(proc / "stat") or "", _read(proc / "vmstat") or "")


def steal_pct(before: str, after: str) -> float | None:
    """System-wide steal as % of all CPU time between two ``/proc/stat`` texts
    (:func:`kbench.kafka.procstat.steal_pct`, the one steal rule; None when it cannot tell)."""
    return procstat.steal_pct(procstat.parse_system(before), procstat.parse_system(after))


_BUSY = "import sys,time\nsys.stdout.write('1');sys.stdout.flush()\nt=time.monotonic()+float(sys.argv[1])\nwhile time.monotonic()<t: pass\n"


def busy_load(cpus: int, seconds: float) -> list[subprocess.Popen[str]]:
    """One busy-looping process per CPU for ``seconds``, returned once every one is spinning
    (each says so on its stdout): CPU steal on a shared VM shows under load, not idle."""
    procs = [
        subprocess.Popen([sys.executable, "-c", _BUSY, f"{seconds + 5.0}"], stdout=subprocess.PIPE, text=True)
        for _ in range(max(1, cpus))
    ]
    for p in procs:
        assert p.stdout is not None
        p.stdout.read(1)
    return procs


def _stop(procs: Sequence[subprocess.Popen[str]]) -> None:
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()
        if p.stdout is not None:
            p.stdout.close()


def swap_pages(before: str, after: str) -> int | None:
    def val(text: str) -> int | None:
        vals = {}
        for line in text.splitlines():
            k, _, v = line.partition(" ")
            vals[k] = v
        try:
            return int(vals["pswpin"]) + int(vals["pswpout"])
        except (KeyError, ValueError):
            return None

    a, b = val(before), val(after)
    return None if a is None or b is None else b - a


def _r(name: str, sev: str, ok: bool | None, detail: str) -> CheckResult:
    return CheckResult(name, sev, "unknown" if ok is None else ("pass" if ok else "fail"), detail)


# ---------------------------------------------------------------------------- checks


def check_broker_versions(ctx: GateContext) -> CheckResult:
    """Equal versions block when they differ; a version nobody reported is a warning saying how
    to supply it (``--broker-metrics`` or ``--broker-version``), never a silent pass nor a block."""
    name = "broker versions equal"
    vs = list(ctx.broker_versions)
    if not vs:
        return _r(
            name,
            BLOCKING,
            None if ctx.transport_kind not in ("sim", "dry") else True,
            f"no brokers (transport {ctx.transport_kind})",
        )
    known = [v for v in vs if v is not None]
    srcs = list(ctx.broker_version_sources) + [""] * len(vs)
    shown = ", ".join(
        f"broker {i}: {v or 'unknown'}{f' ({srcs[i]})' if v and srcs[i] else ''}" for i, v in enumerate(vs)
    )
    if len(set(known)) > 1:
        return _r(name, BLOCKING, False, shown)
    if len(known) < len(vs):
        return _r(
            name,
            WARNING,
            None,
            f"{shown}; the cluster does not report its version: give --broker-metrics URL,... (a Prometheus "
            "JMX exporter exporting kafka.server:type=app-info) or --broker-version X.Y.Z",
        )
    return _r(name, BLOCKING, True, shown)


def check_topic_compression(ctx: GateContext) -> CheckResult:
    """The plan sets ``compression.type`` on every topic it creates and reads it back per cell
    (a mismatch makes that cell FAILED_TOPIC_CONFIG), so the broker default does not block."""
    planned = sorted(set(ctx.planned_topic_compression)) or ["producer"]
    per_topic = f"plan sets compression.type on each topic: {', '.join(planned)}; read back per cell"
    if ctx.transport_kind in ("sim", "dry"):
        return _r("topic compression.type", BLOCKING, True, per_topic)
    defaults = sorted({str(d) for d in ctx.broker_default_compression if d is not None})
    default = f"broker default {', '.join(defaults)} (not used: the topic sets its own)" if defaults else ""
    old = [v for v in ctx.broker_versions if v is not None and _version_tuple(v) < (2, 1)]
    if "zstd" in planned and old:
        return _r(
            "topic compression.type",
            BLOCKING,
            False,
            f"{per_topic}; brokers {sorted(set(old))} predate zstd (Kafka 2.1): drop zstd from topic_compression",
        )
    return _r("topic compression.type", BLOCKING, True, per_topic + (f"; {default}" if default else ""))


def _version_tuple(v: str) -> tuple[int, ...]:
    out = []
    for part in v.split(".")[:3]:
        digits = "".join(ch for ch in part if ch.isdigit())
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


def check_replication(ctx: GateContext) -> CheckResult:
    """Replication factor, min.insync.replicas and acks that fit together and fit the cluster."""
    name = "replication / min.insync / acks"
    rf, misr = ctx.replication_factor, ctx.min_insync_replicas
    acks = sorted(set(ctx.planned_acks))
    n = len(ctx.broker_versions)
    desc = (
        f"RF {rf}, min.insync.replicas {misr if misr is not None else 'broker default'}, acks {', '.join(acks) or '-'}"
    )
    if ctx.transport_kind in ("sim", "dry"):
        return _r(name, WARNING, True, f"{desc} (not replicated by transport {ctx.transport_kind})")
    if n and rf > n:
        return _r(name, BLOCKING, False, f"{desc}: RF {rf} exceeds the {n} brokers; lower replication_factor")
    if misr is not None and misr > rf:
        return _r(
            name,
            BLOCKING,
            False,
            f"{desc}: min.insync.replicas {misr} > RF {rf}: every acks=all produce would fail; lower it",
        )
    weak = [a for a in acks if a not in ("all", "-1")]
    if misr is not None and misr > 1 and weak:
        return _r(name, WARNING, False, f"{desc}: min.insync.replicas only applies to acks=all, not acks {weak}")
    if rf > 1 and misr is None:
        return _r(
            name,
            WARNING,
            None,
            f"{desc}: the topics get the cluster's min.insync.replicas; set transport.min_insync_replicas",
        )
    return _r(name, BLOCKING, True, desc)


def check_broker_count(ctx: GateContext) -> CheckResult:
    """The cluster's broker count against the topology the plan describes (a warning)."""
    n = len(ctx.broker_versions)
    if ctx.transport_kind in ("sim", "dry") or ctx.planned_brokers is None:
        return _r("broker count", WARNING, True, f"{n} brokers")
    return _r(
        "broker count",
        WARNING,
        n == ctx.planned_brokers,
        f"{n} brokers reachable, the plan describes {ctx.planned_brokers}"
        + ("" if n == ctx.planned_brokers else " (per-broker figures compare only like topologies)"),
    )


def check_broker_observability(ctx: GateContext) -> CheckResult:
    """Where broker CPU and stored bytes will come from; what cannot be read says how to supply it."""
    name = "broker CPU / stored bytes sources"
    if ctx.transport_kind in ("sim", "dry"):
        return _r(name, WARNING, True, f"transport {ctx.transport_kind}")
    srcs = list(ctx.broker_cpu_sources)
    if not srcs and not ctx.broker_versions:
        return _r(name, WARNING, None, "no brokers to look at yet (kbench run starts or reaches them)")
    blind = [i for i, s in enumerate(srcs) if not s]
    stored = ctx.stored_bytes_source or "DescribeLogDirs (codec inferred from topic config)"
    detail = f"broker CPU from {', '.join(s or 'nowhere' for s in srcs) or 'nowhere'}; stored bytes from {stored}"
    if blind or not srcs:
        return _r(
            name,
            WARNING,
            False,
            f"{detail}: broker CPU will be NA (D, F); give --broker-metrics URL,... (Prometheus JMX exporter) or --broker-pid",
        )
    return _r(name, WARNING, True, detail)


def check_governor(ctx: GateContext) -> CheckResult:
    govs = {
        (_read(p) or "").strip() for p in ctx.sys_root.glob("devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor")
    }
    govs.discard("")
    if not govs:
        return _r("CPU governor", WARNING, None, "no cpufreq governor exposed (VM or fixed frequency)")
    return _r("CPU governor", WARNING, govs == {"performance"}, f"{', '.join(sorted(govs))} (want performance)")


def check_clocksource(ctx: GateContext) -> CheckResult:
    cs = (_read(ctx.sys_root / "devices/system/clocksource/clocksource0/current_clocksource") or "").strip()
    if not cs:
        return _r("clock source", WARNING, None, "current_clocksource unreadable")
    good = {"tsc", "arch_sys_counter", "kvm-clock", "hyperv_clocksource_tsc_page"}
    return _r("clock source", WARNING, cs in good, f"{cs} (fast: {', '.join(sorted(good))})")


def check_steal(ctx: GateContext) -> CheckResult:
    lim = ctx.steal_limit_pct
    s = ctx.steal_under_load
    how = (
        f"under load ({ctx.loaded_cpus} CPUs busy for {ctx.sample_s:.1f}s)"
        if ctx.loaded_cpus
        else "(steal source given, no load applied)"
    )
    if s is None:
        if ctx.before is None or ctx.after is None:
            return _r("CPU steal", BLOCKING, None, "not sampled")
        s = steal_pct(ctx.before.stat, ctx.after.stat)
        how = f"over {ctx.sample_s:.1f}s"
    if s is None:
        return _r("CPU steal", BLOCKING, None, "cannot tell (/proc/stat unreadable or no time sampled)")
    if s > lim:
        verdict = "runs will likely be INVALID; use a quieter machine, or raise max_steal_pct in the plan (recorded next to every number)"
    else:
        verdict = "runs should stay valid"
    return _r("CPU steal", BLOCKING, s <= lim, f"{s:.2f}% {how}, plan limit {lim:g}%: {verdict}")


def check_load(ctx: GateContext) -> CheckResult:
    text = _read(ctx.proc / "loadavg")
    if not text:
        return _r("load average", WARNING, None, "/proc/loadavg unreadable")
    la = float(text.split()[0])
    per = la / max(1, ctx.cpu_count)
    return _r(
        "load average",
        WARNING,
        per <= ctx.max_load_per_cpu,
        f"{la:.2f} on {ctx.cpu_count} CPUs ({per:.2f}/CPU, limit {ctx.max_load_per_cpu}): other load skews results",
    )


def check_disk(ctx: GateContext) -> CheckResult:
    frees = []
    for p in ctx.disk_paths:
        q = Path(p)
        while not q.exists() and q != q.parent:
            q = q.parent
        try:
            frees.append((str(p), shutil.disk_usage(q).free))
        except OSError:
            return _r("free disk", BLOCKING, None, f"cannot stat {p}")
    worst = min(frees, key=lambda x: x[1])
    return _r(
        "free disk",
        BLOCKING,
        worst[1] >= ctx.min_free_bytes,
        f"{worst[1] / GIB:.1f} GiB free at {worst[0]} (need {ctx.min_free_bytes / GIB:.1f} GiB)",
    )


def check_open_files(ctx: GateContext) -> CheckResult:
    soft = ctx.open_files_limit
    if soft is None:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return _r("open-file limit", BLOCKING, True, "unlimited")
    return _r(
        "open-file limit",
        BLOCKING,
        soft >= ctx.min_open_files,
        f"soft limit {soft} (need {ctx.min_open_files}; raise with ulimit -n)",
    )


def check_librdkafka(ctx: GateContext) -> CheckResult:
    v = ctx.librdkafka_version
    if ctx.transport_kind in ("sim", "dry"):
        return _r(
            "librdkafka version", BLOCKING, True, f"{v or 'not loaded'} (not used by transport {ctx.transport_kind})"
        )
    if not v:
        return _r("librdkafka version", BLOCKING, False, "librdkafka not loadable; install librdkafka1")
    try:
        major, minor = (int(x) for x in v.split(".")[:2])
    except ValueError:
        return _r("librdkafka version", BLOCKING, None, f"unparsable version {v}")
    return _r(
        "librdkafka version", BLOCKING, (major, minor) >= (1, 9), f"{v} (need >= 1.9 for zstd levels and KIP-390)"
    )


def check_codec_libs(ctx: GateContext) -> CheckResult:
    need = ("zstd", "lz4", "snappy", "zlib")
    missing = [n for n in need if not ctx.codec_versions.get(n)]
    detail = ", ".join(f"{k} {v}" for k, v in sorted(ctx.codec_versions.items()))
    return _r(
        "codec library versions", BLOCKING, not missing, detail + (f"; missing {', '.join(missing)}" if missing else "")
    )


def check_java(ctx: GateContext) -> CheckResult:
    if ctx.transport_kind not in ("local", "testbed"):
        return _r("Java version", BLOCKING, True, f"{ctx.java_version or 'absent'} (brokers not started by kbench)")
    major = java_major(ctx.java_version)
    if major is None:
        return _r(
            "Java version", BLOCKING, False, "java not found; install default-jdk-headless (Kafka 4 needs Java >= 17)"
        )
    return _r("Java version", BLOCKING, major >= 17, f"{ctx.java_version} (Kafka 4 brokers need >= 17)")


def check_swap(ctx: GateContext) -> CheckResult:
    if ctx.before is None or ctx.after is None:
        return _r("swap activity", WARNING, None, "not sampled")
    n = swap_pages(ctx.before.vmstat, ctx.after.vmstat)
    if n is None:
        return _r("swap activity", WARNING, None, "/proc/vmstat unreadable")
    return _r("swap activity", WARNING, n == 0, f"{n} pages swapped in/out over {ctx.sample_s:.1f}s")


def _adjtimex_synced() -> bool | None:
    """True when the kernel clock is NTP-synchronised (adjtimex state != TIME_ERROR)."""
    path = ctypes.util.find_library("c")
    if not path:
        return None
    try:
        libc = ctypes.CDLL(path, use_errno=True)
        buf = ctypes.create_string_buffer(512)  # struct timex, modes = 0: read only
        state = libc.adjtimex(buf)
    except (OSError, AttributeError):
        return None
    if state < 0:
        return None
    return state != 5  # TIME_ERROR: clock not synchronised


def check_time_sync(ctx: GateContext) -> CheckResult:
    fn = ctx.time_sync or _adjtimex_synced
    ok = fn()
    detail = {
        True: "kernel clock synchronised",
        False: "kernel clock NOT synchronised (adjtimex TIME_ERROR); cross-host latencies are meaningless",
        None: "unknown",
    }[ok]
    return _r("time sync", WARNING, ok, detail)


def check_memory(ctx: GateContext) -> CheckResult:
    text = _read(ctx.proc / "meminfo") or ""
    for line in text.splitlines():
        if line.startswith("MemAvailable:"):
            avail = int(line.split()[1]) * 1024
            return _r(
                "available memory",
                WARNING,
                avail >= ctx.min_mem_available,
                f"{avail / GIB:.1f} GiB available (want {ctx.min_mem_available / GIB:.1f})",
            )
    return _r("available memory", WARNING, None, "/proc/meminfo unreadable")


def check_corpus_entropy(ctx: GateContext) -> CheckResult:
    near = [f"{k} ({v:.2f} bits/B)" for k, v in ctx.corpus_entropies.items() if v >= 6.3 and k != "random"]
    if not ctx.corpus_entropies:
        return _r("corpus entropy", WARNING, None, "no corpus")
    return _r(
        "corpus entropy",
        WARNING,
        not near,
        "near random: " + ", ".join(near)
        if near
        else ", ".join(f"{k} {v:.2f}" for k, v in ctx.corpus_entropies.items()) + " bits/B",
    )


CHECKS: tuple[Callable[[GateContext], CheckResult], ...] = (
    check_broker_versions,
    check_topic_compression,
    check_replication,
    check_broker_count,
    check_broker_observability,
    check_governor,
    check_clocksource,
    check_steal,
    check_load,
    check_disk,
    check_open_files,
    check_librdkafka,
    check_codec_libs,
    check_java,
    check_swap,
    check_time_sync,
    check_memory,
    check_corpus_entropy,
)


def topology_fields(plan: Plan, info: TransportInfo) -> dict[str, Any]:
    """The GateContext fields about the cluster's topology and what can be observed of it."""
    t = plan.transport
    return {
        "broker_version_sources": [
            b.version_source or ("local cluster" if info.kind in ("local", "testbed") and b.version else "")
            for b in info.brokers
        ],
        "broker_cpu_sources": ["/proc" if b.pid else ("metrics" if b.metrics_url else "") for b in info.brokers],
        "planned_brokers": t.brokers if (t.kind in ("local", "testbed") or t.brokers > 1) else None,
        "replication_factor": t.replication_factor,
        "min_insync_replicas": t.min_insync_replicas,
        "planned_acks": sorted({a for s in plan.sweeps for a in s.acks}),
        "stored_bytes_source": "segment files" if info.log_dirs else "",
    }


def run_gate(ctx: GateContext, force: bool = False) -> GateReport:
    """Sample /proc over ``ctx.sample_s`` with every CPU busy (unless given) and run every check."""
    if ctx.before is None:
        source = ctx.steal_source or (lambda: procstat.parse_system(_read(ctx.proc / "stat") or ""))
        load = busy_load(ctx.cpu_count, ctx.sample_s) if ctx.sample_s > 0 else []
        try:
            ctx.loaded_cpus = len(load)
            ctx.before, a = sample(ctx.proc), source()
            if ctx.sample_s > 0:
                time.sleep(ctx.sample_s)  # the measurement window for steal (under load) and swap
            ctx.after, b = sample(ctx.proc), source()
        finally:
            _stop(load)
        # with no time sampled, live counters cannot tell; an injected source always can
        ctx.steal_under_load = procstat.steal_pct(a, b) if (load or ctx.steal_source) else None
    elif ctx.steal_under_load is None and ctx.steal_source is not None:  # /proc samples given, steal injected
        ctx.steal_under_load = procstat.steal_pct(ctx.steal_source(), ctx.steal_source())
    if not ctx.codec_versions:
        ctx.codec_versions = codecs.library_versions()
    results = []
    for check in CHECKS:
        try:
            results.append(check(ctx))
        except Exception as e:  # noqa: BLE001 - a broken check is reported (and blocks), not fatal
            # a check that cannot run has not shown the machine fit: it fails, blocking, with its
            # own crash as the detail (a broken steal check must never let a run through)
            results.append(
                CheckResult(
                    check.__name__.removeprefix("check_"),
                    BLOCKING,
                    "fail",
                    f"check crashed ({type(e).__name__}: {e}); this is a kbench bug: report it, "
                    "or --force to run without this check",
                )
            )
    return GateReport(tuple(results), forced=force)
