"""One ``kbench run`` call's session: its options and outcome, the run directory (new or resumed),
the manifest as the run starts, the transport opened and gated, the cluster warmed, and the
transport request of one attempt."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from kbench.engine import gate as gate_mod
from kbench.engine import host_speed, rules, runlog, store, warmup
from kbench.engine import manifest as manifest_mod
from kbench.engine import plan as plan_mod
from kbench.engine.live import LiveBoard
from kbench.engine.machine import versions
from kbench.engine.plan import Cell, Plan, PlanError
from kbench.engine.redact import Scrubber, redact, redact_argv
from kbench.engine.runlock import is_empty as _dir_empty
from kbench.engine.transports.base import RunRequest, RunResult, Transport, TransportInfo
from kbench.experiments import registry
from kbench.kafka.procstat import StealSource
from kbench.model.corpus import Corpus

__all__ = [
    "GateRefused",
    "RunOptions",
    "RunOutcome",
    "Session",
    "now",
    "calibrate_host",
    "host_probe",
    "open_and_gate",
    "prepare_dir",
    "request",
    "start_manifest",
    "warm_cluster",
]


class GateRefused(RuntimeError):
    """A blocking gate check failed and --force was not given."""


@dataclass
class RunOptions:
    plan: Plan
    run_dir: Path
    resume: bool = False
    force: bool = False
    argv: Sequence[str] = ()
    client_overrides: Mapping[str, str] = field(default_factory=dict)
    progress_stream: TextIO = field(default_factory=lambda: sys.stderr)
    gate_sample_s: float = 1.0
    gate_overrides: Mapping[str, Any] = field(default_factory=dict)  # GateContext fields (tests)
    print_tables: TextIO | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)  # command-line transport overrides, reused on resume
    #: Where every steal figure (gate and runs) reads its counters; None = the live /proc/stat.
    #: Tests inject :class:`kbench.kafka.procstat.FixedSteal`; the manifest records it.
    steal_source: StealSource | None = None
    #: ``kbench run --label``: the machine's name in the manifest (``machine.label``), else none.
    machine_label: str | None = None
    #: The topology chosen for this machine (kbench.engine.topology.Choice.as_dict; empty: the plan's as written).
    topology: Mapping[str, Any] = field(default_factory=dict)
    #: The live figures (kbench.engine.live): the runner marks each repetition's start and end, the
    #: transport feeds the figures while it runs; and where the progress line goes instead of the stream.
    live: LiveBoard | None = None
    progress_sink: Callable[[str], None] | None = None
    #: The host-speed probe (kbench.engine.host_speed); None: the live one, or the one
    #: :data:`host_speed.INJECT_ENV` asks for (tests).  The manifest records which.
    host_speed: Callable[[], host_speed.Reading] | None = None


@dataclass
class RunOutcome:
    run_dir: Path
    state: str
    rows_written: int
    gate: gate_mod.GateReport | None
    already_complete: bool = False  # a --resume of a complete run: nothing was run
    restored: int = 0  # journal entries rebuilt from the CSVs by this resume


def now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def gate_context(
    plan: Plan,
    info: TransportInfo,
    corpora: Mapping[str, Corpus],
    entropies: Mapping[str, float],
    run_dir: Path,
    opts: RunOptions,
) -> gate_mod.GateContext:
    from kbench.engine.machine import java_version, librdkafka_version

    ctx = gate_mod.GateContext(
        transport_kind=info.kind,
        broker_versions=[b.version for b in info.brokers],
        broker_default_compression=[b.default_compression for b in info.brokers],
        planned_topic_compression=sorted({t for s in plan.sweeps for t in s.topic_compression}),
        disk_paths=[Path(p) for p in info.log_dirs] + [run_dir],
        librdkafka_version=librdkafka_version(),
        java_version=java_version() if info.kind in ("local", "testbed") else None,
        corpus_entropies=dict(entropies),
        sample_s=opts.gate_sample_s,
        **gate_mod.topology_fields(plan, info),
        steal_limit_pct=plan.max_steal_pct,
        steal_source=opts.steal_source,
    )
    for k, v in opts.gate_overrides.items():
        setattr(ctx, k, v)
    return ctx


@dataclass
class Session:
    """What every step of one ``execute`` call shares."""

    opts: RunOptions
    transport: Transport
    client: dict[str, str]
    scrub: Scrubber
    corpora: dict[str, Corpus]
    entropies: dict[str, float]
    man: dict[str, Any] = field(default_factory=dict)
    rows_written: int = 0
    resumed_state: str | None = None  # --resume: the manifest state the run had before
    refused: bool = False  # the gate refused this call
    restored: int = 0  # --resume: journal entries rebuilt from the CSVs
    #: The host-speed probe and the run's calibration (None: the host's speed is not judged).
    probe: Callable[[], host_speed.Reading] | None = None
    baseline: host_speed.Baseline | None = None

    @property
    def plan(self) -> Plan:
        return self.opts.plan

    @property
    def run_dir(self) -> Path:
        return self.opts.run_dir

    def log(self, msg: str, **fields: Any) -> None:
        """One JSON object per line of run.log (kbench.engine.runlog)."""
        runlog.append(self.run_dir, msg, fields, self.scrub)

    def save(self) -> None:
        manifest_mod.write(self.run_dir, self.man, self.scrub)


def prepare_dir(s: Session, machine: Mapping[str, Any]) -> dict[str, Any]:
    """A new, empty run directory; or, with --resume, the prior manifest after checking that
    the plan and machine are the same and dropping incomplete rows."""
    run_dir, plan = s.run_dir, s.plan
    if not s.opts.resume:
        if run_dir.exists() and not _dir_empty(run_dir):
            raise FileExistsError(
                f"run directory {run_dir} is not empty; choose another -o or continue it with --resume {run_dir}"
            )
        run_dir.mkdir(parents=True, exist_ok=True)
        return {}
    prior = manifest_mod.read(run_dir)
    if prior.get("plan_fingerprint") != plan.fingerprint():
        raise PlanError(
            f"--resume {run_dir}: the plan differs from the one this run started with ({prior.get('plan_source')}); resume with that plan"
        )
    was = prior.get("machine", {})
    if (was.get("hostname_hash"), was.get("arch")) != (machine["hostname_hash"], machine["arch"]):
        raise PlanError(
            f"--resume {run_dir}: the run started on another machine ({was.get('arch')}, host {was.get('hostname_hash')}); results must not mix machines, start a new run here"
        )
    fixed = store.reconcile(run_dir, {c.cell_id: c.experiments for c in plan_mod.expand(plan)})
    if fixed.dropped:
        s.log(f"resume: dropped incomplete rows {fixed.dropped}")
    if fixed.restored:
        s.log(f"resume: journal rebuilt from the CSVs: {len(fixed.restored)} complete repetitions restored")
    s.resumed_state = str(prior.get("state", "interrupted"))
    s.restored = len(fixed.restored)
    return prior


def start_manifest(
    s: Session,
    prior: Mapping[str, Any],
    machine: Mapping[str, Any],
    run_id: str,
    seed: int,
    cells: Sequence[Cell],
    ordered: Sequence[tuple[Cell, int]],
) -> None:
    """The manifest as the run starts (or resumes): plan, machine, versions, corpora, rules."""
    plan, opts = s.plan, s.opts
    man: dict[str, Any] = dict(prior)
    man.update(
        run_id=run_id,
        state="starting",
        plan_name=plan.name,
        plan_source=plan.source,
        plan_fingerprint=plan.fingerprint(),
        plan=redact(plan.raw),
        client_properties=redact(s.client),
        seed=seed,
        order=[[c.cell_id, rep] for c, rep in ordered],
        cells={
            c.cell_id: {
                **c.params(),
                "experiments": list(c.experiments),
                "topic_config": dict(c.topic_config),
            }
            for c in cells
        },
        machine=prior.get("machine", machine),
        versions=prior.get("versions") or versions(with_java=plan.transport.kind in ("local", "testbed")),
        corpora={
            n: {
                "source": c.source,
                "sha256": c.sha256,
                "entropy_bits_per_byte": s.entropies[n],
                "records": len(c.records),
                "bytes": c.size,
                "near_random": c.near_random,
            }
            for n, c in s.corpora.items()
        },
        command=redact_argv(opts.argv),
        overrides=dict(opts.overrides),
        repetitions=plan.repetitions,
        warmup=plan.warmup,
        duration_s=plan.duration_s,
        steady_skip_s=plan.steady_skip_s,
        retries=plan.retries,
        rules={
            "rate_tolerance": rules.RATE_TOLERANCE,
            "steal_limit_pct": plan.max_steal_pct,
            "method_steal_limit_pct": rules.STEAL_LIMIT_PCT,
            "retry_statuses": sorted(rules.RETRY_STATUSES),
            "saturated_flag": rules.SATURATED_FLAG,
            "saturation_bound_ms": plan.saturation_bound_ms,
            "drift_rate_pct": plan.drift_rate_pct,
            "drift_p99_pct": plan.drift_p99_pct,
            # A's latency histograms: messages due from steady_skip_s on (docs/methodology.md)
            "latency_window": "steady",
        },
        steal_source=getattr(opts.steal_source, "describe", lambda: "measured: /proc/stat")()
        if opts.steal_source is not None
        else "measured: /proc/stat",
    )
    man.setdefault("started_at", now())
    man.setdefault("resumes", [])
    if opts.topology:
        man["topology"] = dict(opts.topology)
    if opts.resume:
        now_versions = versions(with_java=plan.transport.kind in ("local", "testbed"))
        entry: dict[str, Any] = {"at": now()}
        if now_versions != man["versions"]:
            entry["versions"] = now_versions
            s.log("resume: library versions changed since the run started", versions=now_versions)
        man["resumes"] = list(man["resumes"]) + [entry]
    s.man = man
    s.save()


def open_and_gate(s: Session) -> gate_mod.GateReport:
    """Open the transport, record it, and run the environment gate (raises GateRefused)."""
    plan, opts, man = s.plan, s.opts, s.man
    info = s.transport.open()
    man["transport"] = {
        "kind": info.kind,
        "bootstrap": info.bootstrap,
        "client": info.client,
        "kafka_version": info.kafka_version,
        "brokers": [vars(b) for b in info.brokers],
        "replication_factor": plan.transport.replication_factor,
        "extra": dict(info.extra),
    }
    report = gate_mod.run_gate(gate_context(plan, info, s.corpora, s.entropies, s.run_dir, opts), force=opts.force)
    man.setdefault("gate_runs", [])
    man["gate_runs"] = list(man["gate_runs"]) + [{"at": now(), **report.as_dict()}]
    man["gate"] = report.as_dict()
    man["forced"] = bool(man.get("forced")) or (opts.force and report.blocked)
    print("environment gate:\n" + report.table(), file=opts.progress_stream)
    if report.blocked and not opts.force:
        # A resume refused by the gate leaves the state of the work already done as it was.
        man["state"] = s.resumed_state if s.resumed_state is not None else "refused-by-gate"
        s.refused = True
        s.save()
        names = ", ".join(f"{r.name} ({r.detail})" for r in report.blocking_failures)
        raise GateRefused(
            f"environment gate: blocking check failed: {names}; fix it, or pass --force (recorded in the manifest)"
        )
    man["state"] = "running"
    s.save()
    return report


def host_probe(s: Session) -> None:
    """Choose the run's host-speed probe (kbench.engine.host_speed), or record in the manifest's
    ``host_speed`` why there is none: the plan's host_drift_pct is 0, the transport measures
    nothing, or the drivers run on Dask workers (this host's speed is not theirs).  A resume
    keeps the calibration the run started with: the machine must still be the one it was."""
    why = host_speed.unprobed_why(s.plan.premises.host_drift_pct, s.plan.transport.kind, s.plan.transport.workers)
    if why:
        s.man["host_speed"] = {"probed": False, "why": why}
        s.save()
        return
    s.probe = s.opts.host_speed or host_speed.injected() or host_speed.measure
    prior = s.man.get("host_speed", {})
    if prior.get("readings"):
        s.baseline = host_speed.Baseline.from_dict(prior)
        s.log("host speed: the run's calibration kept by the resume", **s.baseline.as_dict())


def calibrate_host(s: Session) -> None:
    """The run's host-speed baseline, measured once, before its first measured attempt and after
    that cell's warm-up (the machine as it runs the plan: on the development VM a probe taken
    between catch-up repetitions read 3-8 % below one taken on the idle machine after the gate)."""
    assert s.probe is not None
    source = getattr(s.probe, "describe", lambda: "measured: loopback TCP and lz4 on one thread's CPU clock")()
    s.baseline = host_speed.calibrate(s.probe, source=source)
    s.man["host_speed"] = {"probed": True, "limit_pct": s.plan.premises.host_drift_pct, **s.baseline.as_dict()}
    s.save()
    msg = host_speed.summary(s.man) or ""
    s.log(msg)
    print(msg, file=s.opts.progress_stream)


def warm_cluster(s: Session, run_id: str, cells: Sequence[Cell]) -> None:
    """The cluster's warm-up before anything is measured (kbench.engine.warmup): once per session
    (a resume starts a new cluster, cold again); the manifest keeps the latest."""
    if not s.plan.premises.warm_cluster or s.plan.transport.kind not in warmup.MEASURING:
        return
    probe_s = s.plan.knee_probe_s

    def probe(cell: Cell, rate: float, n: int) -> RunResult:
        req = request(s, run_id, dataclasses.replace(cell, rate=rate), rate, None)
        return s.transport.run(
            dataclasses.replace(
                req,
                topic=f"kbench-{run_id}-warm{len(s.man.get('resumes', []))}-{n}",
                duration_s=probe_s,
                steady_skip_s=min(s.plan.steady_skip_s, probe_s / 2),
            )
        )

    s.man["warm_up"] = warmup.warm_cluster(cells, probe, s.plan.premises.floor_max_ms, s.log)
    s.save()


def request(s: Session, run_id: str, cell: Cell, target: float | None, rep: int | None, attempt: int = 1) -> RunRequest:
    """The transport request of one attempt of a repetition (``rep=None``: the warm-up)."""
    plan = s.plan
    suffix = "w" if rep is None else (f"r{rep}" if attempt == 1 else f"r{rep}a{attempt}")
    return RunRequest(
        cell=registry.tuned(cell, s.man),  # as the experiments' warm-up tuning recorded it
        topic=f"kbench-{run_id}-{cell.cell_id}-{suffix}",
        corpus=s.corpora[cell.corpus],
        rate=target,
        duration_s=plan.warmup_s if rep is None else plan.duration_s,
        steady_skip_s=0.0 if rep is None else warmup.steady_skip_s(plan.steady_skip_s, cell.client, plan.duration_s),
        replication_factor=plan.transport.replication_factor,
        min_insync_replicas=plan.transport.min_insync_replicas,
        client_properties=s.client,
        warmup=rep is None,
        steal_source=s.opts.steal_source,
        live=None if s.opts.live is None else s.opts.live.update,
    )
