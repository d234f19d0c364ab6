"""The runner: a plan's cells, in a seeded random order, each with a discarded warm-up and
n repetitions, rows written as each repetition completes, resumable after any crash.

Order: all saturated cells first (shuffled), then all other cells (shuffled), both with the
seed recorded in the manifest — saturated results must exist before ``rate = "auto"`` can
be derived (min over saturated cells of the median achieved msgs/s × ``auto_rate_fraction``).
The method is described in ``docs/methodology.md``.
"""

from __future__ import annotations

import datetime as _dt
import random
import secrets as _secrets
import statistics
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from kbench.engine import gate as gate_mod
from kbench.engine import manifest as manifest_mod
from kbench.engine import plan as plan_mod
from kbench.engine import rules, verdict
from kbench.engine import store as results
from kbench.engine.machine import describe, versions
from kbench.engine.plan import Cell, Plan, PlanError
from kbench.engine.progress import Progress
from kbench.engine.redact import Scrubber, redact, redact_argv
from kbench.engine.transports.base import RunRequest, Transport, TransportError, TransportInfo
from kbench.model.corpus import Corpus, CorpusError, generate, read_records

__all__ = ["GateRefused", "RunOptions", "RunOutcome", "derive_rate", "execute", "load_corpora", "order_cells"]


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


@dataclass
class RunOutcome:
    run_dir: Path
    state: str
    rows_written: int
    gate: gate_mod.GateReport | None


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def load_corpora(plan: Plan) -> dict[str, Corpus]:
    out: dict[str, Corpus] = {}
    for name, d in plan.corpora.items():
        try:
            if d.source == "file":
                assert d.path is not None
                out[name] = Corpus(name=name, records=tuple(read_records(d.path, d.format)), source=f"file:{d.path}")
            else:
                out[name] = generate(d.source, d.size, d.seed)
        except CorpusError as e:
            raise PlanError(f"corpora.{name}: {e}") from None
    return out


def order_cells(cells: Sequence[Cell], seed: int) -> list[Cell]:
    """Saturated cells first, then the rest; each group shuffled with ``seed``."""
    rng = random.Random(seed)
    sat = [c for c in cells if c.saturated]
    rest = [c for c in cells if not c.saturated]
    rng.shuffle(sat)
    rng.shuffle(rest)
    return sat + rest


def derive_rate(run_dir: Path, saturated_ids: Sequence[str], fraction: float) -> dict[str, Any]:
    """The common rate from the saturated cells' OK rows in this run's CSVs."""
    per_cell: dict[str, dict[int, float]] = {}
    for exp in results.COLUMNS:
        for r in results.read_rows(run_dir / f"{exp}.csv"):
            if r["cell_id"] in saturated_ids and r["status"] == "OK" and r["achieved_rate_msgs"] not in ("", "NA"):
                per_cell.setdefault(r["cell_id"], {})[int(r["rep"])] = float(r["achieved_rate_msgs"])
    medians = {cid: statistics.median(v.values()) for cid, v in per_cell.items() if v}
    if not medians:
        raise TransportError(
            'cannot derive rate = "auto": no saturated cell has an OK repetition; check the B rows\' reasons, or give the rate in msgs/s'
        )
    low = min(medians, key=lambda k: medians[k])
    return {
        "method": "auto: min over saturated cells of the median achieved msgs/s, times auto_rate_fraction",
        "fraction": fraction,
        "saturated_medians_msgs": medians,
        "min_cell": low,
        "rate_msgs": round(medians[low] * fraction, 3),
    }


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
        java_version=java_version() if info.kind == "local" else None,
        corpus_entropies=dict(entropies),
        sample_s=opts.gate_sample_s,
    )
    for k, v in opts.gate_overrides.items():
        setattr(ctx, k, v)
    return ctx


def _planned_s(plan: Plan, reps: int, warmup: bool) -> float:
    return reps * plan.duration_s + (plan.warmup_s if warmup else 0.0)


def execute(opts: RunOptions, transport: Transport) -> RunOutcome:
    """Run (or resume) a plan into ``opts.run_dir`` with ``transport``."""
    plan = opts.plan
    run_dir = opts.run_dir
    client = {**plan.client, **opts.client_overrides}
    scrub = Scrubber.of(plan.raw, client)
    log_path = run_dir / "run.log"

    def log(msg: str) -> None:
        with log_path.open("a") as f:
            f.write(f"{_now()} {scrub(msg)}\n")

    corpora = load_corpora(plan)  # before anything is written: a bad corpus leaves no trace
    machine = describe().as_dict()
    prior: dict[str, Any] = {}
    if opts.resume:
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
        dropped = results.reconcile(run_dir)
        if dropped:
            log(f"resume: dropped incomplete rows {dropped}")
    else:
        if run_dir.exists() and any(run_dir.iterdir()):
            raise FileExistsError(
                f"run directory {run_dir} is not empty; choose another -o or continue it with --resume {run_dir}"
            )
        run_dir.mkdir(parents=True, exist_ok=True)

    seed = int(prior.get("seed", plan.seed if plan.seed is not None else _secrets.randbits(32)))
    run_id = str(prior.get("run_id", _secrets.token_hex(4)))
    entropies = {n: c.entropy for n, c in corpora.items()}
    cells = plan_mod.expand(plan)
    ordered = order_cells(cells, seed)
    done = results.read_done(run_dir)
    writer = results.ResultsWriter(run_dir)

    man: dict[str, Any] = dict(prior)
    man.update(
        run_id=run_id,
        state="starting",
        plan_name=plan.name,
        plan_source=plan.source,
        plan_fingerprint=plan.fingerprint(),
        plan=redact(plan.raw),
        client_properties=redact(client),
        seed=seed,
        order=[c.cell_id for c in ordered],
        cells={
            c.cell_id: {
                **c.params(),
                "experiments": list(c.experiments),
                "rate": c.rate,
                "topic_config": dict(c.topic_config),
            }
            for c in cells
        },
        machine=prior.get("machine", machine),
        versions=prior.get("versions") or versions(with_java=plan.transport.kind == "local"),
        corpora={
            n: {
                "source": c.source,
                "sha256": c.sha256,
                "entropy_bits_per_byte": entropies[n],
                "records": len(c.records),
                "bytes": c.size,
                "near_random": c.near_random,
            }
            for n, c in corpora.items()
        },
        command=redact_argv(opts.argv),
        overrides=dict(opts.overrides),
        repetitions=plan.repetitions,
        warmup=plan.warmup,
        duration_s=plan.duration_s,
        steady_skip_s=plan.steady_skip_s,
        rules={
            "rate_tolerance": rules.RATE_TOLERANCE,
            "steal_limit_pct": rules.STEAL_LIMIT_PCT,
            "saturated_flag": rules.SATURATED_FLAG,
        },
    )
    man.setdefault("started_at", _now())
    man.setdefault("resumes", [])
    if opts.resume:
        now_versions = versions(with_java=plan.transport.kind == "local")
        entry: dict[str, Any] = {"at": _now()}
        if now_versions != man["versions"]:
            entry["versions"] = now_versions
            log(f"resume: library versions changed since the run started: {now_versions}")
        man["resumes"] = list(man["resumes"]) + [entry]
    manifest_mod.write(run_dir, man, scrub)

    rows_written = 0
    try:
        info = transport.open()
        man["transport"] = {
            "kind": info.kind,
            "bootstrap": info.bootstrap,
            "client": info.client,
            "kafka_version": info.kafka_version,
            "brokers": [vars(b) for b in info.brokers],
            "replication_factor": plan.transport.replication_factor,
            "extra": dict(info.extra),
        }
        report = gate_mod.run_gate(_gate_context(plan, info, corpora, entropies, run_dir, opts), force=opts.force)
        man.setdefault("gate_runs", [])
        man["gate_runs"] = list(man["gate_runs"]) + [{"at": _now(), **report.as_dict()}]
        man["gate"] = report.as_dict()
        man["forced"] = bool(man.get("forced")) or (opts.force and report.blocked)
        print("environment gate:\n" + report.table(), file=opts.progress_stream)
        if report.blocked and not opts.force:
            man["state"] = "refused-by-gate"
            manifest_mod.write(run_dir, man, scrub)
            names = ", ".join(f"{r.name} ({r.detail})" for r in report.blocking_failures)
            raise GateRefused(
                f"environment gate: blocking check failed: {names}; fix it, or pass --force (recorded in the manifest)"
            )
        man["state"] = "running"
        manifest_mod.write(run_dir, man, scrub)

        todo = [(c, [r for r in range(1, plan.repetitions + 1) if (c.cell_id, r) not in done]) for c in ordered]
        todo = [(c, reps) for c, reps in todo if reps]
        total_runs = sum(len(reps) + int(plan.warmup) for _, reps in todo)
        progress = Progress(
            total_runs, sum(_planned_s(plan, len(reps), plan.warmup) for _, reps in todo), stream=opts.progress_stream
        )
        progress.show("starting")
        common_rate: float | None = man.get("rate_derivation", {}).get("rate_msgs")
        saturated_ids = [c.cell_id for c in cells if c.saturated]

        for cell, reps in todo:
            target: float | None
            if cell.rate == "auto":
                if common_rate is None:
                    deriv = derive_rate(run_dir, saturated_ids, plan.auto_rate_fraction)
                    man["rate_derivation"] = deriv
                    manifest_mod.write(run_dir, man, scrub)
                    common_rate = float(deriv["rate_msgs"])
                    log(f"common rate derived: {deriv}")
                target = common_rate
            elif cell.rate == "saturated":
                target = None
            else:
                target = float(cell.rate)
            corpus = corpora[cell.corpus]

            def request(
                rep: int | None, cell: Cell = cell, corpus: Corpus = corpus, target: float | None = target
            ) -> RunRequest:
                suffix = "w" if rep is None else f"r{rep}"
                return RunRequest(
                    cell=cell,
                    topic=f"kbench-{run_id}-{cell.cell_id}-{suffix}",
                    corpus=corpus,
                    rate=target,
                    duration_s=plan.warmup_s if rep is None else plan.duration_s,
                    steady_skip_s=0.0 if rep is None else plan.steady_skip_s,
                    replication_factor=plan.transport.replication_factor,
                    min_insync_replicas=plan.transport.min_insync_replicas,
                    client_properties=client,
                    warmup=rep is None,
                )

            if plan.warmup:
                progress.show(f"{cell.cell_id} warm-up")
                try:
                    transport.run(request(None))
                except TransportError as e:
                    log(f"{cell.cell_id} warm-up failed: {e}")
                progress.advance(plan.warmup_s, f"{cell.cell_id} warm-up done")
            for rep in reps:
                progress.show(f"{cell.cell_id} rep {rep}/{plan.repetitions}")
                try:
                    res = transport.run(request(rep))
                    rows = rules.rows_for(
                        cell, rep, res, corpus, entropies[cell.corpus], plan.transport.replication_factor
                    )
                    writer.write_histograms(cell.cell_id, rep, res.histograms)
                    if res.client and man.get("clients", {}).get(cell.client) != dict(res.client):
                        man["clients"] = {**man.get("clients", {}), cell.client: dict(res.client)}
                        manifest_mod.write(run_dir, man, scrub)  # client library, runtime and its flags
                except TransportError as e:
                    log(f"{cell.cell_id} rep {rep} failed: {e}")
                    rows = rules.failed_rows(cell, rep, target, scrub(str(e)))
                status = "OK"
                for exp, rs in rows.items():
                    for r in rs:
                        r["reason"] = scrub(str(r.get("reason", "")))
                    writer.append(exp, rs)
                    rows_written += len(rs)
                    status = rs[0]["status"] if status == "OK" else status
                writer.mark_done(cell.cell_id, rep, status)
                progress.advance(plan.duration_s, f"{cell.cell_id} rep {rep} {status}")
        progress.finish()
        man["state"] = "complete"
        man["finished_at"] = _now()
        manifest_mod.write(run_dir, man, scrub)
    except (KeyboardInterrupt, Exception) as e:
        if man.get("state") not in ("refused-by-gate",):
            man["state"] = "interrupted" if isinstance(e, KeyboardInterrupt) else "failed"
            man["stopped_at"] = _now()
            if not isinstance(e, KeyboardInterrupt):
                man["error"] = str(e)
            manifest_mod.write(run_dir, man, scrub)
        raise
    finally:
        transport.close()
    if opts.print_tables is not None:
        opts.print_tables.write(tables(run_dir, plan.experiments) + "\n")
    return RunOutcome(run_dir, man["state"], rows_written, report)


def tables(run_dir: Path, experiments: Sequence[str]) -> str:
    """The headline tables of a run directory, from its CSVs only."""
    out = []
    for exp in experiments:
        rows = results.read_rows(run_dir / f"{exp}.csv")
        title = f"== {exp}: {plan_mod.EXPERIMENTS[exp]} =="
        if not rows:
            out.append(f"{title}\n(no rows)")
            continue
        text = verdict.headline(exp, rows)
        excluded: dict[tuple[str, str, str, str], list[str]] = {}
        for r in rows:
            if r["status"] != "OK":
                excluded.setdefault((r["cell_id"], r["rep"], r["status"], r["reason"]), []).append(r.get("role", ""))
        if excluded:
            items = [
                f"{cid} rep {rep}{(' [' + ', '.join(x for x in roles if x) + ']') if any(roles) else ''}: {st} ({why})"
                for (cid, rep, st, why), roles in excluded.items()
            ]
            text += f"\n\nexcluded ({sum(map(len, excluded.values()))} rows):\n  " + "\n  ".join(items[:12])
            if len(items) > 12:
                text += f"\n  ... {len(items) - 12} more (see {exp}.csv)"
        if exp == "B":
            text += f"\n(B latencies are flagged {rules.SATURATED_FLAG}: queueing, not service; see A)"
        out.append(f"{title}\n{text}")
    return "\n\n".join(out)
