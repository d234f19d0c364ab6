"""The runner with a scripted transport: order, warm-ups, auto rate, REJECTED, resume, gate, secrets."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from engine_fakes import PLAN_TEXT, FakeTransport, engine_plan, grep_secrets, write_plan

from kbench.engine import gate, store
from kbench.engine import plan as plan_mod
from kbench.engine.runner import GateRefused, RunOptions, execute, order_runs
from kbench.engine.transports.base import RunRequest
from kbench.kafka import procstat

CALM = gate.ProcSample("cpu  1 0 1 10 0 0 0 0 0 0\n", "pswpin 0\npswpout 0\n")
GATE_OK = {
    "before": CALM,
    "after": CALM,
    "time_sync": lambda: True,
    "min_free_bytes": 1,
    "open_files_limit": 65536,
    "java_version": "17.0.1",
    "librdkafka_version": "2.0.2",
}


def opts(tmp: Path, plan: plan_mod.Plan, **kw: object) -> RunOptions:
    base: dict[str, object] = dict(
        plan=plan,
        run_dir=tmp / "run",
        gate_sample_s=0.0,
        gate_overrides=GATE_OK,
        progress_stream=io.StringIO(),
        argv=["kbench", "run", "-X", "sasl.password=hunter2-SECRET"],
    )
    base.update(kw)
    return RunOptions(**base)  # type: ignore[arg-type]


@pytest.fixture
def plan(tmp_path: Path) -> plan_mod.Plan:
    return plan_mod.load(str(write_plan(tmp_path)))


def keys(run_dir: Path, exp: str) -> list[tuple[str, str]]:
    return [
        (r["cell_id"], r["rep"]) + ((r["role"],) if exp == "D" else ()) for r in store.read_rows(run_dir / f"{exp}.csv")
    ]


def test_full_run_rows_order_warmups_and_manifest(tmp_path: Path, plan: plan_mod.Plan) -> None:
    t = FakeTransport()
    out = io.StringIO()
    o = execute(opts(tmp_path, plan, print_tables=out), t)
    run = o.run_dir
    assert o.state == "complete" and t.opened == 1 and t.closed == 1
    cells = plan_mod.expand(plan)
    # one warm-up then 3 reps per cell; saturated cells first
    assert len(t.requests) == len(cells) * 4
    warm = [r for r in t.requests if r.warmup]
    assert len(warm) == len(cells) and all(r.topic.endswith("-w") for r in warm)
    sat_seen = [r.cell.saturated for r in t.requests]
    assert sat_seen == sorted(sat_seen, reverse=True)
    # each cell's warm-up immediately precedes its first repetition, and comes once
    first_seen: set[str] = set()
    for i, r in enumerate(t.requests):
        if r.warmup:
            assert r.cell.cell_id not in first_seen
            nxt = t.requests[i + 1]
            assert nxt.cell.cell_id == r.cell.cell_id and not nxt.warmup
        first_seen.add(r.cell.cell_id)
    # repetitions interleave: the journal (run order) does not run a cell's repetitions back to back
    journal = [(c, rep) for c, rep, _, _ in store.read_journal(run)]
    assert sorted(journal) == sorted((c.cell_id, rep) for c in cells for rep in (1, 2, 3))
    assert any(
        journal[i][0] != journal[i + 1][0] and journal[i][0] == journal[i + 2][0] for i in range(len(journal) - 2)
    )
    # fresh topic per run
    assert len({r.topic for r in t.requests}) == len(t.requests)
    # auto rate = min saturated median (zstd:3: 30000) x 0.5
    m = json.loads((run / "manifest.json").read_text())
    assert m["rate_derivation"]["rate_msgs"] == 15000.0 and m["rate_derivation"]["min_cell"] == "sat-001"
    assert {r.rate for r in t.requests if not r.cell.saturated} == {15000.0}
    # rows: each cell x rep exactly once
    for exp, n_cells in (("A", 4), ("B", 2), ("C", 4)):
        k = keys(run, exp)
        assert len(k) == len(set(k)) == n_cells * 3
    assert len(keys(run, "D")) == 4 * 3 * 3  # producer, consumer, broker-0
    assert all(r["status"] == "OK" for r in store.read_rows(run / "A.csv"))
    assert {r["latency_flag"] for r in store.read_rows(run / "B.csv")} == {"latency-NOT-comparable-saturated"}
    # manifest fields
    for f in ("machine", "versions", "seed", "corpora", "gate", "plan", "order", "transport", "rate_derivation"):
        assert f in m, f
    for f in ("arch", "cpu_model", "physical_cores", "logical_cores", "memory_bytes", "kernel"):
        assert f in m["machine"]
    for f in ("kbench", "librdkafka", "libzstd", "liblz4", "snappy"):
        assert m["versions"][f]
    assert m["seed"] == 7 and len(m["gate"]["checks"]) >= 12
    assert all(len(c["sha256"]) == 64 and 0 < c["entropy_bits_per_byte"] <= 8 for c in m["corpora"].values())
    # tables printed from the CSVs
    text = out.getvalue()
    for exp in "ABCD":
        assert f"== {exp}:" in text
    assert "verdicts on" in text
    assert grep_secrets(run) == []


def test_order_is_seeded_interleaves_repetitions_and_keeps_saturated_first() -> None:
    cells = plan_mod.expand(plan_mod.load("zstd-vs-none"))
    a, b, c = order_runs(cells, 3, 1), order_runs(cells, 3, 1), order_runs(cells, 3, 2)
    key = lambda o: [(x.cell_id, rep) for x, rep in o]  # noqa: E731
    assert key(a) == key(b) and key(a) != key(c)
    # every (cell, repetition) pair exactly once
    assert sorted(key(a)) == sorted((x.cell_id, rep) for x in cells for rep in (1, 2, 3))
    # saturated pairs before every other pair
    sat = [x.saturated for x, _ in a]
    assert sat == sorted(sat, reverse=True) and any(sat) and not all(sat)
    # pairs, not cells, are shuffled: some cell's repetitions are not adjacent
    ids = [x.cell_id for x, _ in a]
    runs_of_one_cell = sum(1 for i in range(len(ids) - 1) if ids[i] == ids[i + 1])
    assert runs_of_one_cell < len(ids) - len(cells)


def test_resume_runs_each_pair_once_in_the_interleaved_order(tmp_path: Path, plan: plan_mod.Plan) -> None:
    with pytest.raises(KeyboardInterrupt):
        execute(opts(tmp_path, plan), FakeTransport(interrupt_after=9))
    run = tmp_path / "run"
    before = [(c, r) for c, r, _, _ in store.read_journal(run)]
    execute(opts(tmp_path, plan, resume=True), FakeTransport())
    after = [(c, r) for c, r, _, _ in store.read_journal(run)]
    cells = plan_mod.expand(plan)
    assert sorted(after) == sorted((c.cell_id, rep) for c in cells for rep in (1, 2, 3))  # each pair once
    assert after[: len(before)] == before
    # the resumed part keeps the seeded order of the pairs left
    order = [(c, rep) for c, rep in json.loads((run / "manifest.json").read_text())["order"]]
    assert order == [(c.cell_id, rep) for c, rep in order_runs(cells, 3, 7)]
    rest = [p for p in order if p not in before]
    assert after[len(before) :] == rest


def test_rate_the_cluster_cannot_hold_is_rejected(tmp_path: Path, plan: plan_mod.Plan) -> None:
    execute(opts(tmp_path, plan), FakeTransport(max_rate=14000.0))  # target 15000: -6.7 %
    a = store.read_rows(tmp_path / "run" / "A.csv")
    # 4 A cells x 3 repetitions, each REJECTED; every cell spends its retry budget (default: as
    # many extra attempts as repetitions) and stays REJECTED
    assert [r["status"] for r in a] == ["REJECTED"] * (4 * (plan.repetitions + plan.retries))
    assert sorted({int(r["attempt"]) for r in a}) == [1, 2] and plan.retries == plan.repetitions
    assert "off the target 15000.0 msgs/s" in a[0]["reason"]
    assert [r["status"] for r in store.read_rows(tmp_path / "run" / "B.csv")] == ["OK"] * 6


def test_failed_run_is_kept_with_reason_and_secret_scrubbed(tmp_path: Path, plan: plan_mod.Plan) -> None:
    def fail(req: RunRequest) -> bool:
        return req.cell.cell_id == "fixed-001" and not req.warmup and "r2" in req.topic

    execute(opts(tmp_path, plan), FakeTransport(fail_on=fail))
    a = [r for r in store.read_rows(tmp_path / "run" / "A.csv") if r["cell_id"] == "fixed-001"]
    assert [r["status"] for r in sorted(a, key=lambda r: r["rep"])] == ["OK", "FAILED_RUN", "OK"]
    assert "broker went away" in a[1]["reason"] and "<redacted>" in a[1]["reason"]
    assert grep_secrets(tmp_path / "run") == []


def test_interrupt_then_resume_completes_without_duplicates(tmp_path: Path, plan: plan_mod.Plan) -> None:
    with pytest.raises(KeyboardInterrupt):
        execute(opts(tmp_path, plan), FakeTransport(interrupt_after=11))
    run = tmp_path / "run"
    assert json.loads((run / "manifest.json").read_text())["state"] == "interrupted"
    before = store.read_done(run)
    assert 0 < len(before) < 18
    t2 = FakeTransport()
    o = execute(opts(tmp_path, plan, resume=True), t2)
    assert o.state == "complete"
    assert not any((r.cell.cell_id, int(r.topic.rsplit("-r", 1)[-1])) in before for r in t2.requests if not r.warmup)
    for exp in "ABC":
        k = keys(run, exp)
        assert len(k) == len(set(k))
    assert len(keys(run, "A")) == 12 and len(keys(run, "B")) == 6
    m = json.loads((run / "manifest.json").read_text())
    assert len(m["resumes"]) == 1 and m["seed"] == 7


def test_resume_on_another_machine_is_refused(tmp_path: Path, plan: plan_mod.Plan) -> None:
    with pytest.raises(KeyboardInterrupt):
        execute(opts(tmp_path, plan), FakeTransport(interrupt_after=3))
    mpath = tmp_path / "run" / "manifest.json"
    m = json.loads(mpath.read_text())
    m["machine"]["hostname_hash"] = "elsewhere"
    mpath.write_text(json.dumps(m))
    before = (tmp_path / "run" / "B.csv").read_bytes()
    with pytest.raises(plan_mod.PlanError, match="another machine"):
        execute(opts(tmp_path, plan, resume=True), FakeTransport())
    assert (tmp_path / "run" / "B.csv").read_bytes() == before


def test_bad_corpus_file_leaves_no_run_directory(tmp_path: Path) -> None:
    f = tmp_path / "c.txt"
    f.write_text("")  # exists (passes validation) but holds no records
    p = plan_mod.load(
        str(
            write_plan(
                tmp_path,
                'repetitions = 1\n[transport]\nkind = "dry"\n[[sweep]]\nexperiments = ["C"]\ncorpus = ["c.txt"]\nrate = 10\n',
                "p3.toml",
            )
        )
    )
    with pytest.raises(plan_mod.PlanError, match="no records"):
        execute(opts(tmp_path, p), FakeTransport())
    assert not (tmp_path / "run").exists()


def test_resume_with_a_different_plan_is_refused(tmp_path: Path, plan: plan_mod.Plan) -> None:
    with pytest.raises(KeyboardInterrupt):
        execute(opts(tmp_path, plan), FakeTransport(interrupt_after=3))
    other = plan_mod.load(
        str(
            write_plan(
                tmp_path, (tmp_path / "plan.toml").read_text().replace("repetitions = 3", "repetitions = 4"), "p2.toml"
            )
        )
    )
    with pytest.raises(plan_mod.PlanError, match="differs"):
        execute(opts(tmp_path, other, resume=True), FakeTransport())


def test_existing_run_dir_is_never_overwritten(tmp_path: Path, plan: plan_mod.Plan) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "A.csv").write_text("precious\n")
    with pytest.raises(FileExistsError, match="--resume"):
        execute(opts(tmp_path, plan), FakeTransport())
    assert (tmp_path / "run" / "A.csv").read_text() == "precious\n"


def test_blocking_gate_refuses_unless_forced(tmp_path: Path, plan: plan_mod.Plan) -> None:
    t = FakeTransport(broker_versions=("4.1.2", "3.9.1"))
    with pytest.raises(GateRefused, match="broker versions equal"):
        execute(opts(tmp_path, plan), t)
    assert t.requests == [] and t.closed == 1
    m = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert m["state"] == "refused-by-gate" and m["gate"]["blocked"]
    o = execute(opts(tmp_path / "f", plan, force=True), FakeTransport(broker_versions=("4.1.2", "3.9.1")))
    m = json.loads((o.run_dir / "manifest.json").read_text())
    assert o.state == "complete" and m["forced"] is True and m["gate"]["forced"] is True


def test_steal_during_runs_marks_rows_invalid(tmp_path: Path) -> None:

    fixed = plan_mod.load(str(write_plan(tmp_path, engine_plan(rate=15000), "p2.toml")))
    execute(opts(tmp_path, fixed, force=True, steal_source=procstat.FixedSteal(3.0)), FakeTransport())
    assert {r["status"] for r in store.read_rows(tmp_path / "run" / "D.csv")} == {"INVALID"}
    assert "steal 3.00%" in store.read_rows(tmp_path / "run" / "A.csv")[0]["reason"]


def test_auto_rate_without_ok_saturated_cell_falls_back_visibly(tmp_path: Path, plan: plan_mod.Plan) -> None:
    out = io.StringIO()
    o = execute(
        opts(tmp_path, plan, print_tables=out, force=True, steal_source=procstat.FixedSteal(3.0)), FakeTransport()
    )
    run = tmp_path / "run"
    assert o.state == "complete"
    b = store.read_rows(run / "B.csv")
    # every saturated repetition INVALID, each retried within the budget (3 extra attempts per cell)
    assert {r["status"] for r in b} == {"INVALID"} and len(b) == 2 * (3 + 3)
    m = json.loads((run / "manifest.json").read_text())
    d = m["rate_derivation"]
    # the median of the measured saturated repetitions: min(none 40000, zstd:3 30000) x 0.5
    assert d["rate_msgs"] == 15000.0 and "no saturated cell had an OK repetition (INVALID)" in d["fallback"]
    text = out.getvalue()
    assert text.count('NOTE: rate = "auto" fell back') == 4  # every table: A, B, C, D
    assert "NOTE: steal was not measured but injected: 3%" in text


def test_auto_rate_with_nothing_measured_says_what_to_change(tmp_path: Path, plan: plan_mod.Plan) -> None:
    from kbench.engine.transports.base import TransportError

    with pytest.raises(TransportError, match=r"no saturated repetition measured a rate .* give the rate in msgs/s"):
        execute(opts(tmp_path, plan), FakeTransport(fail_on=lambda req: req.cell.saturated))
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["state"] == "failed"


def test_invalid_repetition_is_retried_and_the_retry_counts(tmp_path: Path, plan: plan_mod.Plan) -> None:
    # injected steal 5 % on the first attempt of fixed-001 rep 2, 0 % everywhere else
    def steal(req: RunRequest) -> float:
        return 5.0 if req.topic.endswith("fixed-001-r2") else 0.0

    out = io.StringIO()
    execute(opts(tmp_path, plan, print_tables=out), FakeTransport(steal_for=steal))
    run = tmp_path / "run"
    a = [r for r in store.read_rows(run / "A.csv") if r["cell_id"] == "fixed-001"]
    by = sorted((r["rep"], r["attempt"], r["status"]) for r in a)
    assert by == [("1", "1", "OK"), ("2", "1", "INVALID"), ("2", "2", "OK"), ("3", "1", "OK")]
    assert "CPU steal 5.00% > 1%" in next(r["reason"] for r in a if r["status"] == "INVALID")
    # the retry ran after other pairs (at the end of the queue), and the journal counts the attempt
    journal = store.read_journal(run)
    assert journal[-1][:3] == ("fixed-001", 2, 2) and journal[-1][3] == "OK"
    # the table counts 3 OK repetitions for the cell and says one row came from a retry
    assert "fixed-001" in out.getvalue() and "rows come from retried attempts" in out.getvalue()
    from kbench.engine import verdict

    (s,) = [
        x for x in verdict.summarise("A", store.read_rows(run / "A.csv"), "corrected_p99_us") if x.key == ("fixed-001",)
    ]
    assert s.n == 3 and s.excluded == 1


def test_retry_budget_is_the_plans(tmp_path: Path) -> None:

    text = engine_plan(rate=15000, repetitions=2, retries=1)
    p = plan_mod.load(str(write_plan(tmp_path, text, "p2.toml")))
    assert p.retries == 1 and plan_mod.load(str(write_plan(tmp_path, PLAN_TEXT, "p3.toml"))).retries == 3
    out = io.StringIO()
    execute(opts(tmp_path, p, print_tables=out, force=True, steal_source=procstat.FixedSteal(5.0)), FakeTransport())
    a = store.read_rows(tmp_path / "run" / "A.csv")
    for cid in {r["cell_id"] for r in a}:
        attempts = sorted((r["rep"], r["attempt"]) for r in a if r["cell_id"] == cid)
        assert len(attempts) == 2 + 1 and all(r["status"] == "INVALID" for r in a)
    # every short cell gets its cause and fix
    text = out.getvalue()
    assert "cells short of OK repetitions" in text
    assert "n = 0 OK of 3 attempts (want 2): CPU steal above the plan's max_steal_pct" in text
    assert "raise retries or max_steal_pct" in text


def test_plan_steal_limit_applies_and_is_said_next_to_every_table(tmp_path: Path) -> None:

    p = plan_mod.load(str(write_plan(tmp_path, engine_plan(max_steal_pct=10), "p2.toml")))
    out = io.StringIO()
    execute(opts(tmp_path, p, print_tables=out, steal_source=procstat.FixedSteal(5.0)), FakeTransport())
    run = tmp_path / "run"
    for exp in "ABCD":
        assert {r["status"] for r in store.read_rows(run / f"{exp}.csv")} == {"OK"}, exp
        assert {r["attempt"] for r in store.read_rows(run / f"{exp}.csv")} == {"1"}, exp
    assert {r["steal_pct"] for r in store.read_rows(run / "D.csv")} == {"5"}
    assert out.getvalue().count("NOTE: this plan accepts CPU steal up to 10% per run (the method's limit is 1%)") == 4
    m = json.loads((run / "manifest.json").read_text())
    assert m["rules"]["steal_limit_pct"] == 10.0 and m["steal_source"] == "injected: 5%"
    assert m["gate"]["checks"][[c["name"] for c in m["gate"]["checks"]].index("CPU steal")]["outcome"] == "pass"


def test_cpu_regressed_role(tmp_path: Path, plan: plan_mod.Plan) -> None:
    execute(opts(tmp_path, plan), FakeTransport(cpu_regressed_role="consumer"))
    d = store.read_rows(tmp_path / "run" / "D.csv")
    assert {r["status"] for r in d if r["role"] == "consumer"} == {"FAILED_CPU_REGRESSED"}
    assert {r["status"] for r in d if r["role"] == "producer"} == {"OK"}
    assert {r["cpu_s"] for r in d if r["role"] == "consumer"} == {"NA"}


def test_resume_runs_a_retry_that_was_due_and_each_attempt_once(tmp_path: Path, plan: plan_mod.Plan) -> None:
    def steal(req: RunRequest) -> float:
        return 5.0 if req.topic.endswith("fixed-001-r2") else 0.0

    # where the INVALID attempt falls in the run (the order is seeded: the same every time)
    probe = FakeTransport(steal_for=steal)
    execute(opts(tmp_path / "probe", plan), probe)
    i = next(k for k, r in enumerate(probe.requests) if r.topic.endswith("fixed-001-r2"))
    # stop the run at the request right after it: the retry is due but has not run
    with pytest.raises(KeyboardInterrupt):
        execute(opts(tmp_path, plan), FakeTransport(steal_for=steal, interrupt_after=i + 2))
    run = tmp_path / "run"
    assert ("fixed-001", 2, 1, "INVALID") in store.read_journal(run)
    t2 = FakeTransport(steal_for=steal)
    execute(opts(tmp_path, plan, resume=True), t2)
    assert any(r.topic.endswith("fixed-001-r2a2") for r in t2.requests)
    journal = store.read_journal(run)
    keys = [(c, r, a) for c, r, a, _ in journal]
    assert len(keys) == len(set(keys))
    assert ("fixed-001", 2, 2, "OK") in journal
    a = store.read_rows(run / "A.csv")
    assert len({(r["cell_id"], r["rep"], r["attempt"]) for r in a}) == len(a) == 4 * 3 + 1
