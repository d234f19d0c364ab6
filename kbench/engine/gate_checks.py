"""The environment gate's checks, each a function of the GateContext returning one CheckResult
(blocking or a warning), in the order :data:`CHECKS` runs them."""

from __future__ import annotations

import ctypes
import ctypes.util
import resource
import shutil
from collections.abc import Callable
from pathlib import Path

from kbench.engine.gate_context import (
    BLOCKING,
    GIB,
    WARNING,
    CheckResult,
    GateContext,
    read_text,
    steal_pct,
    swap_pages,
)
from kbench.engine.machine import java_major

__all__ = [
    "CHECKS",
    "adjtimex_synced",
    "check_broker_count",
    "check_broker_observability",
    "check_broker_versions",
    "check_clocksource",
    "check_codec_libs",
    "check_corpus_entropy",
    "check_disk",
    "check_governor",
    "check_java",
    "check_librdkafka",
    "check_load",
    "check_memory",
    "check_open_files",
    "check_replication",
    "check_result",
    "check_steal",
    "check_swap",
    "check_time_sync",
    "check_topic_compression",
    "version_tuple",
]


def check_result(name: str, sev: str, ok: bool | None, detail: str) -> CheckResult:
    return CheckResult(name, sev, "unknown" if ok is None else ("pass" if ok else "fail"), detail)


def check_broker_versions(ctx: GateContext) -> CheckResult:
    """Equal versions block when they differ; a version nobody reported is a warning saying how
    to supply it (``--broker-metrics`` or ``--broker-version``), never a silent pass nor a block."""
    name = "broker versions equal"
    vs = list(ctx.broker_versions)
    if not vs:
        return check_result(
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
        return check_result(name, BLOCKING, False, shown)
    if len(known) < len(vs):
        return check_result(
            name,
            WARNING,
            None,
            f"{shown}; the cluster does not report its version: give --broker-metrics URL,... (a Prometheus "
            "JMX exporter exporting kafka.server:type=app-info) or --broker-version X.Y.Z",
        )
    return check_result(name, BLOCKING, True, shown)


def check_topic_compression(ctx: GateContext) -> CheckResult:
    """The plan sets ``compression.type`` on every topic it creates and reads it back per cell
    (a mismatch makes that cell FAILED_TOPIC_CONFIG), so the broker default does not block."""
    planned = sorted(set(ctx.planned_topic_compression)) or ["producer"]
    per_topic = f"plan sets compression.type on each topic: {', '.join(planned)}; read back per cell"
    if ctx.transport_kind in ("sim", "dry"):
        return check_result("topic compression.type", BLOCKING, True, per_topic)
    defaults = sorted({str(d) for d in ctx.broker_default_compression if d is not None})
    default = f"broker default {', '.join(defaults)} (not used: the topic sets its own)" if defaults else ""
    old = [v for v in ctx.broker_versions if v is not None and version_tuple(v) < (2, 1)]
    if "zstd" in planned and old:
        return check_result(
            "topic compression.type",
            BLOCKING,
            False,
            f"{per_topic}; brokers {sorted(set(old))} predate zstd (Kafka 2.1): drop zstd from topic_compression",
        )
    return check_result("topic compression.type", BLOCKING, True, per_topic + (f"; {default}" if default else ""))


def version_tuple(v: str) -> tuple[int, ...]:
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
        return check_result(name, WARNING, True, f"{desc} (not replicated by transport {ctx.transport_kind})")
    if n and rf > n:
        return check_result(name, BLOCKING, False, f"{desc}: RF {rf} exceeds the {n} brokers; lower replication_factor")
    if misr is not None and misr > rf:
        return check_result(
            name,
            BLOCKING,
            False,
            f"{desc}: min.insync.replicas {misr} > RF {rf}: every acks=all produce would fail; lower it",
        )
    weak = [a for a in acks if a not in ("all", "-1")]
    if misr is not None and misr > 1 and weak:
        return check_result(
            name, WARNING, False, f"{desc}: min.insync.replicas only applies to acks=all, not acks {weak}"
        )
    if rf > 1 and misr is None:
        return check_result(
            name,
            WARNING,
            None,
            f"{desc}: the topics get the cluster's min.insync.replicas; set transport.min_insync_replicas",
        )
    return check_result(name, BLOCKING, True, desc)


def check_broker_count(ctx: GateContext) -> CheckResult:
    """The cluster's broker count against the topology the plan describes (a warning)."""
    n = len(ctx.broker_versions)
    if ctx.transport_kind in ("sim", "dry") or ctx.planned_brokers is None:
        return check_result("broker count", WARNING, True, f"{n} brokers")
    return check_result(
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
        return check_result(name, WARNING, True, f"transport {ctx.transport_kind}")
    srcs = list(ctx.broker_cpu_sources)
    if not srcs and not ctx.broker_versions:
        return check_result(name, WARNING, None, "no brokers to look at yet (kbench run starts or reaches them)")
    blind = [i for i, s in enumerate(srcs) if not s]
    stored = ctx.stored_bytes_source or "DescribeLogDirs (codec inferred from topic config)"
    detail = f"broker CPU from {', '.join(s or 'nowhere' for s in srcs) or 'nowhere'}; stored bytes from {stored}"
    if blind or not srcs:
        return check_result(
            name,
            WARNING,
            False,
            f"{detail}: broker CPU will be NA (D, F); give --broker-metrics URL,... (Prometheus JMX exporter) or --broker-pid",
        )
    return check_result(name, WARNING, True, detail)


def check_governor(ctx: GateContext) -> CheckResult:
    govs = {
        (read_text(p) or "").strip() for p in ctx.sys_root.glob("devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor")
    }
    govs.discard("")
    if not govs:
        return check_result("CPU governor", WARNING, None, "no cpufreq governor exposed (VM or fixed frequency)")
    return check_result(
        "CPU governor", WARNING, govs == {"performance"}, f"{', '.join(sorted(govs))} (want performance)"
    )


def check_clocksource(ctx: GateContext) -> CheckResult:
    cs = (read_text(ctx.sys_root / "devices/system/clocksource/clocksource0/current_clocksource") or "").strip()
    if not cs:
        return check_result("clock source", WARNING, None, "current_clocksource unreadable")
    good = {"tsc", "arch_sys_counter", "kvm-clock", "hyperv_clocksource_tsc_page"}
    return check_result("clock source", WARNING, cs in good, f"{cs} (fast: {', '.join(sorted(good))})")


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
            return check_result("CPU steal", BLOCKING, None, "not sampled")
        s = steal_pct(ctx.before.stat, ctx.after.stat)
        how = f"over {ctx.sample_s:.1f}s"
    if s is None:
        return check_result("CPU steal", BLOCKING, None, "cannot tell (/proc/stat unreadable or no time sampled)")
    if s > lim:
        verdict = "runs will likely be INVALID; use a quieter machine, or raise max_steal_pct in the plan (recorded next to every number)"
    else:
        verdict = "runs should stay valid"
    return check_result("CPU steal", BLOCKING, s <= lim, f"{s:.2f}% {how}, plan limit {lim:g}%: {verdict}")


def check_load(ctx: GateContext) -> CheckResult:
    text = read_text(ctx.proc / "loadavg")
    if not text:
        return check_result("load average", WARNING, None, "/proc/loadavg unreadable")
    la = float(text.split()[0])
    per = la / max(1, ctx.cpu_count)
    return check_result(
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
            return check_result("free disk", BLOCKING, None, f"cannot stat {p}")
    worst = min(frees, key=lambda x: x[1])
    return check_result(
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
        return check_result("open-file limit", BLOCKING, True, "unlimited")
    return check_result(
        "open-file limit",
        BLOCKING,
        soft >= ctx.min_open_files,
        f"soft limit {soft} (need {ctx.min_open_files}; raise with ulimit -n)",
    )


def check_librdkafka(ctx: GateContext) -> CheckResult:
    v = ctx.librdkafka_version
    if ctx.transport_kind in ("sim", "dry"):
        return check_result(
            "librdkafka version", BLOCKING, True, f"{v or 'not loaded'} (not used by transport {ctx.transport_kind})"
        )
    if not v:
        return check_result("librdkafka version", BLOCKING, False, "librdkafka not loadable; install librdkafka1")
    try:
        major, minor = (int(x) for x in v.split(".")[:2])
    except ValueError:
        return check_result("librdkafka version", BLOCKING, None, f"unparsable version {v}")
    return check_result(
        "librdkafka version", BLOCKING, (major, minor) >= (1, 9), f"{v} (need >= 1.9 for zstd levels and KIP-390)"
    )


def check_codec_libs(ctx: GateContext) -> CheckResult:
    need = ("zstd", "lz4", "snappy", "zlib")
    missing = [n for n in need if not ctx.codec_versions.get(n)]
    detail = ", ".join(f"{k} {v}" for k, v in sorted(ctx.codec_versions.items()))
    return check_result(
        "codec library versions", BLOCKING, not missing, detail + (f"; missing {', '.join(missing)}" if missing else "")
    )


def check_java(ctx: GateContext) -> CheckResult:
    if ctx.transport_kind not in ("local", "testbed"):
        return check_result(
            "Java version", BLOCKING, True, f"{ctx.java_version or 'absent'} (brokers not started by kbench)"
        )
    major = java_major(ctx.java_version)
    if major is None:
        return check_result(
            "Java version", BLOCKING, False, "java not found; install default-jdk-headless (Kafka 4 needs Java >= 17)"
        )
    return check_result("Java version", BLOCKING, major >= 17, f"{ctx.java_version} (Kafka 4 brokers need >= 17)")


def check_swap(ctx: GateContext) -> CheckResult:
    if ctx.before is None or ctx.after is None:
        return check_result("swap activity", WARNING, None, "not sampled")
    n = swap_pages(ctx.before.vmstat, ctx.after.vmstat)
    if n is None:
        return check_result("swap activity", WARNING, None, "/proc/vmstat unreadable")
    return check_result("swap activity", WARNING, n == 0, f"{n} pages swapped in/out over {ctx.sample_s:.1f}s")


def adjtimex_synced() -> bool | None:
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
    fn = ctx.time_sync or adjtimex_synced
    ok = fn()
    detail = {
        True: "kernel clock synchronised",
        False: "kernel clock NOT synchronised (adjtimex TIME_ERROR); cross-host latencies are meaningless",
        None: "unknown",
    }[ok]
    return check_result("time sync", WARNING, ok, detail)


def check_memory(ctx: GateContext) -> CheckResult:
    text = read_text(ctx.proc / "meminfo") or ""
    for line in text.splitlines():
        if line.startswith("MemAvailable:"):
            avail = int(line.split()[1]) * 1024
            return check_result(
                "available memory",
                WARNING,
                avail >= ctx.min_mem_available,
                f"{avail / GIB:.1f} GiB available (want {ctx.min_mem_available / GIB:.1f})",
            )
    return check_result("available memory", WARNING, None, "/proc/meminfo unreadable")


def check_corpus_entropy(ctx: GateContext) -> CheckResult:
    near = [f"{k} ({v:.2f} bits/B)" for k, v in ctx.corpus_entropies.items() if v >= 6.3 and k != "random"]
    if not ctx.corpus_entropies:
        return check_result("corpus entropy", WARNING, None, "no corpus")
    return check_result(
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
