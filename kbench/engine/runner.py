"""The runner: a plan's (cell, repetition) pairs in a seeded random order, each cell with a
discarded warm-up before its first run, rows written as each attempt completes, an INVALID
or REJECTED attempt run again within the plan's retry budget, resumable after any crash.

Order: all saturated pairs first (shuffled), then all other pairs (shuffled), both with the
seed recorded in the manifest — saturated results must exist before ``rate = "auto"`` can
be derived (min over saturated cells of the median achieved msgs/s × ``auto_rate_fraction``;
with ``auto_rate_basis = "pipeline"`` the knee probed from that minimum, kbench.engine.knee).
A retry goes to the end of its group's queue, so it too runs at another time than its first
attempt.  The method is described in ``docs/methodology.md``.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import random
import secrets as _secrets
import statistics
import sys
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from kbench.engine import backlog, knee, rules, runlog, series, store, verdict, warmup
from kbench.engine import gate as gate_mod
from kbench.engine import manifest as manifest_mod
from kbench.engine import plan as plan_mod
from kbench.engine.live import LiveBoard
from kbench.engine.machine import describe, versions
from kbench.engine.plan import Cell, Plan, PlanError
from kbench.engine.progress import Progress
from kbench.engine.redact import Scrubber, redact, redact_argv
from kbench.engine.runlock import is_empty as _dir_empty
from kbench.engine.status import EXPLAIN, MISSING, RETRY_STATUSES, Status, parse_status, worst
from kbench.engine.transports.base import RunRequest, RunResult, Transport, TransportError, TransportInfo
from kbench.experiments import registry
from kbench.kafka.procstat import StealSource
from kbench.model.corpus import Corpus, CorpusError
from kbench.model.corpus import load as corpus_load

__all__ = ["GateRefused", "RunOptions", "RunOutcome", "derive_rate", "execute", "load_corpora", "order_runs"]


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


@dataclass
class RunOutcome:
    run_dir: Path
    state: str
    rows_written: int
    gate: gate_mod.GateReport | None
    already_complete: bool = False  # a --resume of a complete run: nothing was run
    restored: int = 0  # journal entries rebuilt from the CSVs by this resume


def _remaining(plan: Plan, journal: Sequence[tuple[str, int, int, str]]) -> int:
    """(cell, repetition) pairs of the plan still to run: never attempted, or retryable within the budget."""
    a = _Attempts.of(journal)
    return sum(
        a.pending(c.cell_id, r, plan.retries) for c in plan_mod.expand(plan) for r in range(1, plan.repetitions + 1)
    )


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def load_corpora(plan: Plan) -> dict[str, Corpus]:
    out: dict[str, Corpus] = {}
    for name, d in plan.corpora.items():
        try:
            spec = d.source if d.path is None else d.path  # a file corpus has its path (plan._corpus_defs)
            out[name] = corpus_load(spec, size=d.size, seed=d.seed, fmt=d.format, name=name)
        except CorpusError as e:
            raise PlanError(f"corpora.{name}: {e}") from None
    return out


def order_runs(cells: Sequence[Cell], repetitions: int, seed: int) -> list[tuple[Cell, int]]:
    """Every (cell, repetition) pair: saturated pairs first, then the rest; each group
    shuffled with ``seed``, so repetitions of a cell interleave with other cells'."""
    rng = random.Random(seed)
    reps = range(1, repetitions + 1)
    sat = [(c, r) for c in cells if c.saturated for r in reps]
    rest = [(c, r) for c in cells if not c.saturated for r in reps]
    rng.shuffle(sat)
    rng.shuffle(rest)
    return sat + rest


def derive_rate(run_dir: Path, saturated_ids: Sequence[str], fraction: float) -> dict[str, Any]:
    """The common rate from the saturated cells' OK rows in this run's CSVs.

    With no OK saturated repetition, it falls back (visibly: ``fallback`` in the derivation,
    shown by the manifest and every table) to the medians of the measured saturated
    repetitions (INVALID or REJECTED: measured, then excluded by a rule); with none measured
    either, it raises a one-line error saying what to change."""
    ok: dict[str, dict[tuple[int, int], float]] = {}
    measured: dict[str, dict[tuple[int, int], float]] = {}
    reasons: set[str] = set()
    for exp in registry.run_experiments():
        for r in store.read_rows(run_dir / f"{exp}.csv"):
            if r["cell_id"] not in saturated_ids or r["achieved_rate_msgs"] in ("", MISSING):
                continue
            key = (int(r["rep"]), store.attempt_of(r))
            if r["status"] == "OK":
                ok.setdefault(r["cell_id"], {})[key] = float(r["achieved_rate_msgs"])
            elif r["status"] in RETRY_STATUSES:  # measured, excluded by a rule of the machine or load
                measured.setdefault(r["cell_id"], {})[key] = float(r["achieved_rate_msgs"])
                reasons.add(r["status"])
    fallback = None
    per_cell = ok
    if not ok:
        if not measured:
            raise TransportError(
                'cannot derive rate = "auto": no saturated repetition measured a rate (see B.csv\'s reasons); '
                "fix the failure, or give the rate in msgs/s in the plan"
            )
        per_cell = measured
        fallback = (
            f"no saturated cell had an OK repetition ({', '.join(sorted(reasons))}); the rate is derived from the "
            "medians of the measured saturated repetitions instead"
        )
    medians = {cid: statistics.median(v.values()) for cid, v in per_cell.items() if v}
    low = min(medians, key=lambda k: medians[k])
    out: dict[str, Any] = {
        "method": "auto: min over saturated cells of the median achieved msgs/s, times auto_rate_fraction",
        "fraction": fraction,
        "saturated_medians_msgs": medians,
        "min_cell": low,
        "rate_msgs": round(medians[low] * fraction, 3),
        "basis": "producer",
        "basis_msgs": medians[low],
    }
    if fallback:
        out["fallback"] = fallback
    return out


def _gate_context(
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


def _planned_s(plan: Plan, reps: int, warmup: bool) -> float:
    return reps * plan.duration_s + (plan.warmup_s if warmup else 0.0)


@dataclass
class _Session:
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


def _prepare_dir(s: _Session, machine: Mapping[str, Any]) -> dict[str, Any]:
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


def _start_manifest(
    s: _Session,
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
    man.setdefault("started_at", _now())
    man.setdefault("resumes", [])
    if opts.topology:
        man["topology"] = dict(opts.topology)
    if opts.resume:
        now_versions = versions(with_java=plan.transport.kind in ("local", "testbed"))
        entry: dict[str, Any] = {"at": _now()}
        if now_versions != man["versions"]:
            entry["versions"] = now_versions
            s.log("resume: library versions changed since the run started", versions=now_versions)
        man["resumes"] = list(man["resumes"]) + [entry]
    s.man = man
    s.save()


def _open_and_gate(s: _Session) -> gate_mod.GateReport:
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
    report = gate_mod.run_gate(_gate_context(plan, info, s.corpora, s.entropies, s.run_dir, opts), force=opts.force)
    man.setdefault("gate_runs", [])
    man["gate_runs"] = list(man["gate_runs"]) + [{"at": _now(), **report.as_dict()}]
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


#: Appended to the derivation's method once a plan's ``auto:F`` cells are derived.
FRACTIONS_METHOD = '; rate = "auto:F": F times the same minimum (each under fractions)'


def _knee(s: _Session, run_id: str, cells: Sequence[Cell], producer: dict[str, Any]) -> dict[str, Any]:
    """The derivation on the pipeline's basis: short probes of the derived-rate cells (kbench.engine.knee)."""
    plan = s.plan

    def probe(cell: Cell, rate: float, n: int) -> RunResult:
        req = _request(s, run_id, cell, rate, 1)
        return s.transport.run(
            dataclasses.replace(
                req,
                topic=f"kbench-{run_id}-{cell.cell_id}-k{n}",
                duration_s=plan.knee_probe_s,
                steady_skip_s=min(plan.steady_skip_s, plan.knee_probe_s / 2),
            )
        )

    pr = plan.premises
    return knee.derive(
        producer,
        cells,
        probe,
        plan.saturation_bound_ms,
        plan.auto_rate_fraction,
        s.log,
        pr.knee_factor,
        pr.floor_max_ms,
    )


def _warm_cluster(s: _Session, run_id: str, cells: Sequence[Cell]) -> None:
    """The cluster's warm-up before anything is measured (kbench.engine.warmup): once per session
    (a resume starts a new cluster, cold again); the manifest keeps the latest."""
    if not s.plan.premises.warm_cluster or s.plan.transport.kind not in warmup.MEASURING:
        return
    probe_s = s.plan.knee_probe_s

    def probe(cell: Cell, rate: float, n: int) -> RunResult:
        req = _request(s, run_id, dataclasses.replace(cell, rate=rate), rate, None)
        skip = min(s.plan.steady_skip_s, probe_s / 2)
        return s.transport.run(
            dataclasses.replace(
                req,
                topic=f"kbench-{run_id}-warm{len(s.man.get('resumes', []))}-{n}",
                duration_s=probe_s,
                steady_skip_s=skip,
            )
        )

    s.man["warm_up"] = warmup.warm_cluster(cells, probe, s.plan.premises.floor_max_ms, s.log)
    s.save()


def _target_rate(
    s: _Session, cell: Cell, saturated_ids: Sequence[str], run_id: str = "", cells: Sequence[Cell] = ()
) -> float | None:
    """The cell's target msgs/s: its number, None when saturated, or the common rate (derived
    from the saturated cells' rows once — on the pipeline basis, from the knee probed with
    ``cells`` — then recorded in the manifest); ``auto:F`` is F × the same basis (the minimum
    saturated median, or the knee), recorded under ``rate_derivation/fractions``."""
    if cell.rate == "saturated":
        return None
    frac = plan_mod.rate_fraction(cell.rate, s.plan.auto_rate_fraction)
    if frac is None:
        return float(cell.rate)
    deriv: dict[str, Any] = s.man.get("rate_derivation", {})
    if deriv.get("rate_msgs") is None:
        deriv = derive_rate(s.run_dir, saturated_ids, s.plan.auto_rate_fraction)
        if s.plan.auto_rate_basis == "pipeline":
            deriv = _knee(s, run_id, cells, deriv)
        s.man["rate_derivation"] = deriv
        s.save()
        s.log("common rate derived", derivation=deriv)
    if cell.rate == "auto":
        return float(deriv["rate_msgs"])
    key = str(cell.rate)
    fractions: dict[str, float] = dict(deriv.get("fractions", {}))
    if key not in fractions:
        basis = deriv.get("basis_msgs", deriv["saturated_medians_msgs"][deriv["min_cell"]])
        fractions[key] = round(basis * frac, 3)
        method = str(deriv.get("method", ""))
        more = FRACTIONS_METHOD.replace("minimum", "knee") if deriv.get("basis") == "pipeline" else FRACTIONS_METHOD
        if more not in method:
            method += more
        s.man["rate_derivation"] = {**deriv, "method": method, "fractions": fractions}
        s.save()
        s.log(f"rate {key} derived: {fractions[key]} msgs/s")
    return float(fractions[key])


def _request(
    s: _Session, run_id: str, cell: Cell, target: float | None, rep: int | None, attempt: int = 1
) -> RunRequest:
    """The transport request of one attempt of a repetition (``rep=None``: the warm-up)."""
    plan = s.plan
    suffix = "w" if rep is None else (f"r{rep}" if attempt == 1 else f"r{rep}a{attempt}")
    return RunRequest(
        cell=backlog.sized(cell, s.man.get("backlog", {})),
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


def _warm_up(s: _Session, progress: Progress, run_id: str, cell: Cell, target: float | None) -> None:
    """The cell's discarded warm-up run (before its first attempt in this session)."""
    progress.show(f"{cell.cell_id} warm-up")
    if s.opts.live is not None:
        s.opts.live.begin(f"{cell.cell_id} warm-up", "warm-up")
    try:
        res = s.transport.run(_request(s, run_id, cell, target, None))
        sizings = 1
        while cell.catch_up and sizings <= backlog.MAX_SIZINGS:  # G: a drain of >= MIN_DRAIN_S (kbench.engine.backlog)
            cur = backlog.sized(cell, s.man.get("backlog", {})).backlog_bytes
            nxt = backlog.next_size(res, cur)
            if nxt is None:
                break
            s.man["backlog"] = {
                **s.man.get("backlog", {}),
                cell.cell_id: {"backlog_bytes": nxt, "from": dict(res.drain)},
            }
            s.save()
            s.log(
                f"{cell.cell_id}: drain of {cur} bytes took {res.drain.get('span_s')} s; backlog sized to {nxt} bytes"
            )
            req = _request(s, run_id, cell, target, None)
            res = s.transport.run(dataclasses.replace(req, topic=f"{req.topic}{sizings}"))
            sizings += 1
    except TransportError as e:
        s.log(f"{cell.cell_id} warm-up failed: {e}")
    progress.advance(s.plan.warmup_s, f"{cell.cell_id} warm-up done")
    if s.opts.live is not None:
        s.opts.live.end(f"{cell.cell_id} warm-up", "done", counted=False)


def _run_attempt(
    s: _Session,
    writer: store.ResultsWriter,
    progress: Progress,
    run_id: str,
    cell: Cell,
    rep: int,
    attempt: int,
    target: float | None,
) -> str:
    """One attempt of one repetition, its rows written; returns its status (the worst of its rows)."""
    plan = s.plan
    label = f"{cell.cell_id} rep {rep}/{plan.repetitions}" + (f" attempt {attempt}" if attempt > 1 else "")
    progress.show(label)
    if s.opts.live is not None:
        s.opts.live.begin(label)
    try:
        req = _request(s, run_id, cell, target, rep, attempt)
        res = s.transport.run(req)
        rows = rules.rows_for(
            req.cell,
            rep,
            res,
            s.corpora[cell.corpus],
            s.entropies[cell.corpus],
            plan.transport.replication_factor,
            steal_limit_pct=plan.max_steal_pct,
            attempt=attempt,
            saturation_bound_ms=plan.saturation_bound_ms,
            knee=(
                knee.floor_of(s.man.get("rate_derivation", {}), cell, plan_mod.expand(plan)),
                plan.premises.knee_factor,
            ),
            min_window=(req.steady_skip_s, plan.premises.min_window_s),
        )
        writer.write_histograms(cell.cell_id, rep, res.histograms, attempt)
        _write_series(s, writer, cell.cell_id, rep, attempt, res)
        if res.client and s.man.get("clients", {}).get(cell.client) != dict(res.client):
            s.man["clients"] = {**s.man.get("clients", {}), cell.client: dict(res.client)}
            s.save()  # client library, runtime and its flags
    except TransportError as e:
        s.log(f"{cell.cell_id} rep {rep} attempt {attempt} failed: {e}")
        rows = rules.failed_rows(cell, rep, target, s.scrub(str(e)), attempt)
    for exp, rs in rows.items():
        for r in rs:
            r["reason"] = s.scrub(str(r.get("reason", "")))
            for k in ("stored_source", "cpu_source"):  # may quote a tool's error message
                if isinstance(r.get(k), str):
                    r[k] = s.scrub(r[k])
        writer.append(exp, rs)
        s.rows_written += len(rs)
    status = rules.worst(r["status"] for rs in rows.values() for r in rs)
    writer.mark_done(cell.cell_id, rep, status, attempt)
    progress.advance(plan.duration_s, f"{label} {status}")
    if s.opts.live is not None:
        s.opts.live.end(label, status)
    return status


def _write_series(
    s: _Session, writer: store.ResultsWriter, cell_id: str, rep: int, attempt: int, res: RunResult
) -> None:
    """The repetition's interval log and series rows (steady-state breaks marked).  Its drift
    verdict is the manifest's ``drift`` entry ``"<cell> r<rep>"`` (the flagged line; none when it
    did not drift; the latest attempt's) and a line of run.log."""
    writer.write_hlog(cell_id, rep, res.hlog, attempt)
    if not res.series:
        return
    bounds = series.Bounds(s.plan.drift_rate_pct, s.plan.drift_p99_pct)
    rows = series.mark_breaks([{**r, "cell_id": cell_id, "rep": rep, "attempt": attempt} for r in res.series], bounds)
    writer.append_series(rows)
    line = series.drift(rows, bounds).describe()
    key = f"{cell_id} r{rep}"
    if line:
        s.log(f"{cell_id} rep {rep}: {line}")
    if line or key in s.man.get("drift", {}):
        flagged = {k: v for k, v in s.man.get("drift", {}).items() if k != key}
        s.man["drift"] = {**flagged, **({key: line} if line else {})}
        s.save()


@dataclass
class _Attempts:
    """Per (cell, rep): attempts journalled and the last one's status; per cell: retries used."""

    last: dict[tuple[str, int], tuple[int, str]] = field(default_factory=dict)
    retries_used: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, journal: Sequence[tuple[str, int, int, str]]) -> _Attempts:
        a = cls()
        for cid, rep, attempt, status in journal:
            if attempt >= a.last.get((cid, rep), (0, ""))[0]:
                a.last[(cid, rep)] = (attempt, status)
        for (cid, _), (n, _) in a.last.items():
            a.retries_used[cid] = a.retries_used.get(cid, 0) + max(0, n - 1)
        return a

    def record(self, cell_id: str, rep: int, attempt: int, status: str) -> None:
        self.last[(cell_id, rep)] = (attempt, status)

    def pending(self, cell_id: str, rep: int, budget: int) -> bool:
        """Whether this pair still has an attempt to run (without taking from the budget)."""
        n, status = self.last.get((cell_id, rep), (0, ""))
        return n == 0 or (status in rules.RETRY_STATUSES and self.retries_used.get(cell_id, 0) < budget)

    def next_attempt(self, cell_id: str, rep: int, budget: int) -> int | None:
        """The attempt to run next for this pair (None: done), taking a retry from the budget."""
        n, status = self.last.get((cell_id, rep), (0, ""))
        if n == 0:
            return 1
        if status in rules.RETRY_STATUSES and self.retries_used.get(cell_id, 0) < budget:
            self.retries_used[cell_id] = self.retries_used.get(cell_id, 0) + 1
            return n + 1
        return None


def execute(opts: RunOptions, transport: Transport) -> RunOutcome:
    """Run (or resume) a plan into ``opts.run_dir`` with ``transport``."""
    plan = opts.plan
    client = {**plan.client, **opts.client_overrides}
    corpora = load_corpora(plan)  # before anything is written: a bad corpus leaves no trace
    s = _Session(
        opts, transport, client, Scrubber.of(plan.raw, client), corpora, {n: c.entropy for n, c in corpora.items()}
    )
    machine = describe().as_dict()
    if opts.machine_label:
        machine["label"] = opts.machine_label
    prior = _prepare_dir(s, machine)
    if opts.resume and not _remaining(plan, store.read_journal(s.run_dir)):
        # Every repetition is in the CSVs: nothing to run, and nothing (gate, manifest) to rewrite.
        if prior.get("state") != "complete":
            manifest_mod.write(
                s.run_dir, dict(prior, state="complete", finished_at=prior.get("finished_at") or _now()), s.scrub
            )
        return RunOutcome(s.run_dir, "complete", 0, None, already_complete=True, restored=s.restored)
    seed = int(prior.get("seed", plan.seed if plan.seed is not None else _secrets.randbits(32)))
    run_id = str(prior.get("run_id", _secrets.token_hex(4)))
    cells = plan_mod.expand(plan)
    ordered = order_runs(cells, plan.repetitions, seed)
    attempts = _Attempts.of(store.read_journal(s.run_dir))
    writer = store.ResultsWriter(s.run_dir)
    _start_manifest(s, prior, machine, run_id, seed, cells, ordered)

    try:
        report = _open_and_gate(s)
        groups: list[deque[tuple[Cell, int, int]]] = [deque(), deque()]
        for c, rep in ordered:
            nxt = attempts.next_attempt(c.cell_id, rep, plan.retries)
            if nxt is not None:
                groups[0 if c.saturated else 1].append((c, rep, nxt))
        todo_cells = {c.cell_id for g in groups for c, _, _ in g}
        progress = Progress(
            sum(len(g) for g in groups) + int(plan.warmup) * len(todo_cells),
            sum(_planned_s(plan, len(g), False) for g in groups) + int(plan.warmup) * plan.warmup_s * len(todo_cells),
            stream=opts.progress_stream,
            sink=opts.progress_sink,
        )
        if opts.live is not None:
            opts.live.add_total(sum(len(g) for g in groups))
        progress.show("starting")
        saturated_ids = [c.cell_id for c in cells if c.saturated]
        warmed: set[str] = set()
        if plan.warmup and any(groups):
            _warm_cluster(s, run_id, cells)
        for queue in groups:
            while queue:
                cell, rep, attempt = queue.popleft()
                target = _target_rate(s, cell, saturated_ids, run_id, cells)
                if plan.warmup and cell.cell_id not in warmed:
                    warmed.add(cell.cell_id)
                    _warm_up(s, progress, run_id, cell, target)
                status = _run_attempt(s, writer, progress, run_id, cell, rep, attempt, target)
                attempts.record(cell.cell_id, rep, attempt, status)
                nxt = attempts.next_attempt(cell.cell_id, rep, plan.retries)
                if nxt is not None:  # a retry, at the end of its group: another time than the first
                    s.log(f"{cell.cell_id} rep {rep} attempt {attempt} {status}: retry as attempt {nxt}")
                    queue.append((cell, rep, nxt))
                    progress.total_runs += 1
                    progress.planned_s += plan.duration_s
                    if opts.live is not None:
                        opts.live.add_total(1)
        progress.finish()
        s.man["state"] = "complete"
        s.man["finished_at"] = _now()
        s.save()
    except (KeyboardInterrupt, Exception) as e:
        if not s.refused:
            s.man["state"] = "interrupted" if isinstance(e, KeyboardInterrupt) else "failed"
            s.man["stopped_at"] = _now()
            if not isinstance(e, KeyboardInterrupt):
                s.man["error"] = str(e)
            s.save()
        raise
    finally:
        transport.close()
    if opts.print_tables is not None:
        opts.print_tables.write(tables(s.run_dir, plan.experiments) + "\n")
    return RunOutcome(s.run_dir, s.man["state"], s.rows_written, report, restored=s.restored)


def _notes(run_dir: Path) -> list[str]:
    """What every table of the run must carry next to its numbers: a steal limit above the
    method's, an injected steal source, a common rate that fell back."""
    man = manifest_mod.read(run_dir) if (run_dir / "manifest.json").exists() else {}
    out = []
    lim = man.get("rules", {}).get("steal_limit_pct")
    if isinstance(lim, (int, float)) and lim > rules.STEAL_LIMIT_PCT:
        out.append(
            f"NOTE: this plan accepts CPU steal up to {lim:g}% per run (the method's limit is {rules.STEAL_LIMIT_PCT:g}%)"
        )
    src = str(man.get("steal_source", ""))
    if src.startswith("injected"):
        out.append(f"NOTE: steal was not measured but {src} (a test)")
    fb = man.get("rate_derivation", {}).get("fallback")
    if fb:
        out.append(f'NOTE: rate = "auto" fell back: {fb}')
    return out


def _short_cells(exp: str, rows: Sequence[Mapping[str, str]], want: int, excluded_only: bool = False) -> list[str]:
    """One line per cell (and role) with fewer than ``want`` OK repetitions: cause and fix.
    ``excluded_only``: only the cells a rule excluded repetitions of (not those merely NA: a figure
    the transport does not measure)."""
    e = registry.get(exp)
    out = []
    for cs in verdict.summarise(exp, rows, e.verdict_on):
        if cs.n >= want:
            continue
        mine = [r for r in rows if (r["cell_id"], *(r.get(k, "") for k in e.row_key)) == cs.key]
        bad = [r for r in mine if r["status"] != Status.OK]
        attempts = len({(r["rep"], store.attempt_of(r)) for r in mine})
        status = worst(r["status"] for r in bad) if bad else Status.NA
        if excluded_only and all(r["status"] == Status.NA for r in bad):
            continue
        known = parse_status(status)
        cause, fix = (EXPLAIN[known].cause, EXPLAIN[known].fix) if known else ("", "see the reasons")
        example = next((r["reason"] for r in bad if r["status"] == status), "")
        out.append(
            f"{'/'.join(cs.key)}: n = {cs.n} OK of {attempts} attempts (want {want}): {cause}"
            + (f" ({example})" if example else "")
            + f"; fix: {fix}"
        )
    return out


def _want(run_dir: Path) -> int:
    """OK repetitions a cell needs for its verdict: 2 (or the plan's repetitions when fewer)."""
    man = manifest_mod.read(run_dir) if (run_dir / "manifest.json").exists() else {}
    return min(2, int(man.get("repetitions", 2) or 2))


def short_cells(run_dir: Path, experiments: Sequence[str]) -> list[str]:
    """The tables' "cells short of OK repetitions" lines (every experiment) of the cells short
    because repetitions were measured and excluded by a rule (INVALID, REJECTED, SATURATED,
    FAILED_*); a cell short only of figures its transport does not measure (NA) is not counted.
    ``kbench run`` exits non-zero when this is not empty."""
    want = _want(run_dir)
    out = []
    for exp in experiments:
        rows = store.read_rows(run_dir / f"{exp}.csv")
        out += [f"{exp} {line}" for line in _short_cells(exp, rows, want, excluded_only=True)] if rows else []
    return out


def tables(run_dir: Path, experiments: Sequence[str]) -> str:
    """The headline tables of a run directory, from its CSVs (and the manifest's notes)."""
    out = []
    premises = knee.summary(manifest_mod.read(run_dir)) if (run_dir / "manifest.json").exists() else []
    if premises:
        out.append("== premises ==\n" + "\n".join(premises))
    notes = _notes(run_dir)
    want = _want(run_dir)
    settings = verdict.run_settings(manifest_mod.read(run_dir) if (run_dir / "manifest.json").exists() else {})
    for exp in experiments:
        rows = store.read_rows(run_dir / f"{exp}.csv")
        title = f"== {exp}: {registry.get(exp).title} =="
        if not rows:
            out.append(f"{title}\n(no rows)")
            continue
        text = verdict.headline(exp, rows, *settings)
        if notes:
            text = "\n".join(notes) + "\n" + text
        excluded: dict[tuple[str, str, str, str], list[str]] = {}
        for r in rows:
            if r["status"] != "OK":
                rep = r["rep"] + (f" attempt {r['attempt']}" if store.attempt_of(r) > 1 else "")
                excluded.setdefault((r["cell_id"], rep, r["status"], r["reason"]), []).append(r.get("role", ""))
        retried = sum(1 for r in rows if store.attempt_of(r) > 1)
        if retried:
            text += f"\n\n{retried} rows come from retried attempts (column attempt > 1)"
        short = _short_cells(exp, rows, want)
        if short:
            text += "\n\ncells short of OK repetitions:\n  " + "\n  ".join(short)
        if excluded:
            items = [
                f"{cid} rep {rep}{(' [' + ', '.join(x for x in roles if x) + ']') if any(roles) else ''}: {st} ({why})"
                for (cid, rep, st, why), roles in excluded.items()
            ]
            text += f"\n\nexcluded ({sum(map(len, excluded.values()))} rows):\n  " + "\n  ".join(items[:12])
            if len(items) > 12:
                text += f"\n  ... {len(items) - 12} more (see {exp}.csv)"
        note = registry.get(exp).console_note
        if note:
            text += f"\n{note}"
        out.append(f"{title}\n{text}")
    return "\n\n".join(out)
