"""The environment gate (E0): checks run before any collection, each blocking or a warning.

A check's outcome is ``pass``, ``fail`` or ``unknown`` (could not be determined, e.g. no
cpufreq in a VM).  Only a *blocking* check that *fails* refuses to collect (unless
``--force``, which the manifest records).  Every check reads from roots given in
:class:`GateContext`, so tests run them against fixture files.
"""

from __future__ import annotations

import time
from typing import Any

from kbench.engine.gate_checks import (
    CHECKS,
)
from kbench.engine.gate_context import (
    BLOCKING,
    CheckResult,
    GateContext,
    GateReport,
    ProcSample,
    busy_load,
    read_text,
    sample,
    steal_pct,
    stop_procs,
    swap_pages,
)
from kbench.engine.plan import Plan
from kbench.engine.transports.base import TransportInfo
from kbench.kafka import procstat
from kbench.model import codecs

__all__ = [
    "CHECKS",
    "CheckResult",
    "GateContext",
    "GateReport",
    "ProcSample",
    "run_gate",
    "sample",
    "steal_pct",
    "swap_pages",
    "topology_fields",
]


# ---------------------------------------------------------------------------- checks


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
        source = ctx.steal_source or (lambda: procstat.parse_system(read_text(ctx.proc / "stat") or ""))
        load = busy_load(ctx.cpu_count, ctx.sample_s) if ctx.sample_s > 0 else []
        try:
            ctx.loaded_cpus = len(load)
            ctx.before, a = sample(ctx.proc), source()
            if ctx.sample_s > 0:
                time.sleep(ctx.sample_s)  # the measurement window for steal (under load) and swap
            ctx.after, b = sample(ctx.proc), source()
        finally:
            stop_procs(load)
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
