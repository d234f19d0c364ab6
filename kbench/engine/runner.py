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
import random
import secrets as _secrets
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kbench.engine import host_speed, knee, rules, series, store
from kbench.engine import manifest as manifest_mod
from kbench.engine import plan as plan_mod
from kbench.engine.console import short_cells, tables
from kbench.engine.estimate import run_s
from kbench.engine.machine import describe
from kbench.engine.plan import Cell, Plan, PlanError
from kbench.engine.progress import Progress
from kbench.engine.rates import derive_rate, target_rate
from kbench.engine.redact import Scrubber
from kbench.engine.session import (
    GateRefused,
    RunOptions,
    RunOutcome,
    Session,
    calibrate_host,
    host_probe,
    now,
    open_and_gate,
    prepare_dir,
    request,
    start_manifest,
    warm_cluster,
)
from kbench.engine.transports.base import RunResult, Transport, TransportError
from kbench.engine.tune import tune_warm_up
from kbench.experiments import registry
from kbench.model.corpus import Corpus, CorpusError
from kbench.model.corpus import load as corpus_load

__all__ = [
    "GateRefused",
    "RunOptions",
    "RunOutcome",
    "derive_rate",
    "execute",
    "load_corpora",
    "order_runs",
    "short_cells",
    "tables",
]


def _remaining(plan: Plan, journal: Sequence[tuple[str, int, int, str]]) -> int:
    """(cell, repetition) pairs of the plan still to run: never attempted, or retryable within the budget."""
    a = _Attempts.of(journal)
    return sum(
        a.pending(c.cell_id, r, plan.retries) for c in plan_mod.expand(plan) for r in range(1, plan.repetitions + 1)
    )


def load_corpora(plan: Plan) -> dict[str, Corpus]:
    out: dict[str, Corpus] = {}
    for name, d in plan.corpora.items():
        try:
            spec = d.source if d.path is None else d.path  # a file corpus has its path (plan_sweeps.corpus_defs)
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


def _planned_s(plan: Plan, queued: Sequence[tuple[Cell, int, int]], warmed: Sequence[Cell]) -> float:
    """The seconds the queued runs and the cells' warm-ups take: each run by its experiment's own
    estimate where it has one (G: producing and draining a backlog), else the plan's duration."""
    return sum(run_s(c, plan.duration_s) for c, _, _ in queued) + sum(run_s(c, plan.warmup_s) for c in warmed)


def _warm_up(s: Session, progress: Progress, run_id: str, cell: Cell, target: float | None) -> None:
    """The cell's discarded warm-up run (before its first attempt in this session)."""
    progress.show(f"{cell.cell_id} warm-up")
    if s.opts.live is not None:
        s.opts.live.begin(f"{cell.cell_id} warm-up", "warm-up")
    try:
        res = s.transport.run(request(s, run_id, cell, target, None))
        tune_warm_up(s, run_id, cell, target, res)  # an experiment's tuning of the cell (G: its backlog)
    except TransportError as e:
        s.log(f"{cell.cell_id} warm-up failed: {e}")
    progress.advance(run_s(cell, s.plan.warmup_s), f"{cell.cell_id} warm-up done")
    if s.opts.live is not None:
        s.opts.live.end(f"{cell.cell_id} warm-up", "done", counted=False)


def _run_attempt(
    s: Session,
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
    before = s.probe() if s.probe is not None else None
    host: dict[str, Any] | None = None
    try:
        req = request(s, run_id, cell, target, rep, attempt)
        res = s.transport.run(req)
        if s.probe is not None and before is not None:
            host = _host_record(s, before, s.probe())
        if host is not None:
            res = dataclasses.replace(res, host_drift_pct=host["drift_pct"], host_drift_part=host["part"])
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
            host_drift_limit_pct=plan.premises.host_drift_pct if s.baseline is not None else 0.0,
        )
        writer.write_histograms(cell.cell_id, rep, res.histograms, attempt)
        _write_series(s, writer, cell.cell_id, rep, attempt, res)
        if res.client and s.man.get("clients", {}).get(cell.client) != dict(res.client):
            s.man["clients"] = {**s.man.get("clients", {}), cell.client: dict(res.client)}
            s.save()  # client library, runtime and its flags
    except TransportError as e:
        s.log(f"{cell.cell_id} rep {rep} attempt {attempt} failed: {e}")
        rows = rules.failed_rows(cell, rep, target, s.scrub(str(e)), attempt)
        host = _host_record(s, before, None)  # the probe before it only
    for exp, rs in rows.items():
        for r in rs:
            r["reason"] = s.scrub(str(r.get("reason", "")))
            for k in ("stored_source", "cpu_source"):  # may quote a tool's error message
                if isinstance(r.get(k), str):
                    r[k] = s.scrub(r[k])
        writer.append(exp, rs)
        s.rows_written += len(rs)
    status = rules.worst(r["status"] for rs in rows.values() for r in rs)
    writer.mark_done(cell.cell_id, rep, status, attempt, host=host)
    progress.advance(run_s(cell, plan.duration_s), f"{label} {status}")
    if s.opts.live is not None:
        s.opts.live.end(label, status)
    return status


def _host_record(
    s: Session, before: host_speed.Reading | None, after: host_speed.Reading | None
) -> dict[str, Any] | None:
    """The attempt's host-speed probes for its journal line (None: not probed)."""
    if s.baseline is None or before is None:
        return None
    probes = [r for r in (before, after) if r is not None]
    drift, part = host_speed.attempt_drift_pct(probes, s.baseline)
    return {
        "before": before.as_dict(),
        "after": after.as_dict() if after is not None else None,
        "drift_pct": round(drift, 2),
        "part": part,
    }


def _write_series(
    s: Session, writer: store.ResultsWriter, cell_id: str, rep: int, attempt: int, res: RunResult
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
    s = Session(
        opts, transport, client, Scrubber.of(plan.raw, client), corpora, {n: c.entropy for n, c in corpora.items()}
    )
    machine = describe().as_dict()
    if opts.machine_label:
        machine["label"] = opts.machine_label
    prior = prepare_dir(s, machine)
    if opts.resume and not _remaining(plan, store.read_journal(s.run_dir)):
        # Every repetition is in the CSVs: nothing to run, and nothing (gate, manifest) to rewrite.
        if prior.get("state") != "complete":
            manifest_mod.write(
                s.run_dir, dict(prior, state="complete", finished_at=prior.get("finished_at") or now()), s.scrub
            )
        return RunOutcome(s.run_dir, "complete", 0, None, already_complete=True, restored=s.restored)
    seed = int(prior.get("seed", plan.seed if plan.seed is not None else _secrets.randbits(32)))
    run_id = str(prior.get("run_id", _secrets.token_hex(4)))
    cells = plan_mod.expand(plan)
    ordered = order_runs(cells, plan.repetitions, seed)
    attempts = _Attempts.of(store.read_journal(s.run_dir))
    writer = store.ResultsWriter(s.run_dir)
    start_manifest(s, prior, machine, run_id, seed, cells, ordered)

    try:
        report = open_and_gate(s)
        host_probe(s)
        groups: list[deque[tuple[Cell, int, int]]] = [deque(), deque()]
        for c, rep in ordered:
            nxt = attempts.next_attempt(c.cell_id, rep, plan.retries)
            if nxt is not None:
                groups[0 if c.saturated else 1].append((c, rep, nxt))
        todo_cells = {c.cell_id for g in groups for c, _, _ in g}
        progress = Progress(
            sum(len(g) for g in groups) + int(plan.warmup) * len(todo_cells),
            _planned_s(
                plan, [q for g in groups for q in g], [c for c in cells if plan.warmup and c.cell_id in todo_cells]
            ),
            stream=opts.progress_stream,
            sink=opts.progress_sink,
        )
        if opts.live is not None:
            opts.live.add_total(sum(len(g) for g in groups))
        progress.show("starting")
        saturated_ids = [c.cell_id for c in cells if c.saturated]
        warmed: set[str] = set()
        if plan.warmup and any(groups):
            warm_cluster(s, run_id, [c for c in cells if not registry.own_run(c)])  # own runs: not probed
        for queue in groups:
            while queue:
                cell, rep, attempt = queue.popleft()
                target = target_rate(s, cell, saturated_ids, run_id, cells)
                if plan.warmup and cell.cell_id not in warmed:
                    warmed.add(cell.cell_id)
                    _warm_up(s, progress, run_id, cell, target)
                if s.probe is not None and s.baseline is None:
                    calibrate_host(s)  # after the first warm-up: the machine as it runs the plan
                status = _run_attempt(s, writer, progress, run_id, cell, rep, attempt, target)
                attempts.record(cell.cell_id, rep, attempt, status)
                nxt = attempts.next_attempt(cell.cell_id, rep, plan.retries)
                if nxt is not None:  # a retry, at the end of its group: another time than the first
                    s.log(f"{cell.cell_id} rep {rep} attempt {attempt} {status}: retry as attempt {nxt}")
                    queue.append((cell, rep, nxt))
                    progress.total_runs += 1
                    progress.planned_s += run_s(cell, plan.duration_s)
                    if opts.live is not None:
                        opts.live.add_total(1)
        progress.finish()
        s.man["state"] = "complete"
        s.man["finished_at"] = now()
        s.save()
    except (KeyboardInterrupt, Exception) as e:
        if not s.refused:
            s.man["state"] = "interrupted" if isinstance(e, KeyboardInterrupt) else "failed"
            s.man["stopped_at"] = now()
            if not isinstance(e, KeyboardInterrupt):
                s.man["error"] = str(e)
            s.save()
        raise
    finally:
        transport.close()
    if opts.print_tables is not None:
        opts.print_tables.write(tables(s.run_dir, plan.experiments) + "\n")
    return RunOutcome(s.run_dir, s.man["state"], s.rows_written, report, restored=s.restored)
