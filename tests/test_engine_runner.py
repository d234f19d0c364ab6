"""The runner with a scripted transport: order, warm-ups, auto rate, REJECTED, resume, gate, secrets."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from engine_fakes import FakeTransport, grep_secrets, write_plan

from kbench.engine import gate
from kbench.engine import plan as plan_mod
from kbench.engine import store as results
from kbench.engine.runner import GateRefused, RunOptions, execute, order_cells
from kbench.engine.transports.base import RunRequest

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
        (r["cell_id"], r["rep"]) + ((r["role"],) if exp == "D" else ())
        for r in results.read_rows(run_dir / f"{exp}.csv")
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
    # each warm-up immediately precedes its cell's repetitions
    for i, r in enumerate(t.requests):
        if r.warmup:
            assert [x.cell.cell_id for x in t.requests[i + 1 : i + 4]] == [r.cell.cell_id] * 3
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
    assert all(r["status"] == "OK" for r in results.read_rows(run / "A.csv"))
    assert {r["latency_flag"] for r in results.read_rows(run / "B.csv")} == {"latency-NOT-comparable-saturated"}
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


def test_order_is_seeded_and_recorded() -> None:
    cells = plan_mod.expand(plan_mod.load("zstd-vs-none"))
    a, b, c = order_cells(cells, 1), order_cells(cells, 1), order_cells(cells, 2)
    assert a == b and sorted(x.cell_id for x in a) == sorted(x.cell_id for x in cells)
    assert [x.cell_id for x in a] != [x.cell_id for x in c] or len(cells) < 3


def test_rate_the_cluster_cannot_hold_is_rejected(tmp_path: Path, plan: plan_mod.Plan) -> None:
    execute(opts(tmp_path, plan), FakeTransport(max_rate=14000.0))  # target 15000: -6.7 %
    a = results.read_rows(tmp_path / "run" / "A.csv")
    assert [r["status"] for r in a] == ["REJECTED"] * 12
    assert "off the target 15000.0 msgs/s" in a[0]["reason"]
    assert [r["status"] for r in results.read_rows(tmp_path / "run" / "B.csv")] == ["OK"] * 6


def test_failed_run_is_kept_with_reason_and_secret_scrubbed(tmp_path: Path, plan: plan_mod.Plan) -> None:
    def fail(req: RunRequest) -> bool:
        return req.cell.cell_id == "fixed-001" and not req.warmup and "r2" in req.topic

    execute(opts(tmp_path, plan), FakeTransport(fail_on=fail))
    a = [r for r in results.read_rows(tmp_path / "run" / "A.csv") if r["cell_id"] == "fixed-001"]
    assert [r["status"] for r in sorted(a, key=lambda r: r["rep"])] == ["OK", "FAILED_RUN", "OK"]
    assert "broker went away" in a[1]["reason"] and "<redacted>" in a[1]["reason"]
    assert grep_secrets(tmp_path / "run") == []


def test_interrupt_then_resume_completes_without_duplicates(tmp_path: Path, plan: plan_mod.Plan) -> None:
    with pytest.raises(KeyboardInterrupt):
        execute(opts(tmp_path, plan), FakeTransport(interrupt_after=11))
    run = tmp_path / "run"
    assert json.loads((run / "manifest.json").read_text())["state"] == "interrupted"
    before = results.read_done(run)
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
    from engine_fakes import PLAN_TEXT

    fixed = plan_mod.load(str(write_plan(tmp_path, PLAN_TEXT.replace('rate = "auto"', "rate = 15000"), "p2.toml")))
    execute(opts(tmp_path, fixed), FakeTransport(steal_pct=3.0))
    assert {r["status"] for r in results.read_rows(tmp_path / "run" / "D.csv")} == {"INVALID"}
    assert "steal 3.00%" in results.read_rows(tmp_path / "run" / "A.csv")[0]["reason"]


def test_auto_rate_without_ok_saturated_cell_stops_with_reason(tmp_path: Path, plan: plan_mod.Plan) -> None:
    from kbench.engine.transports.base import TransportError

    with pytest.raises(TransportError, match="cannot derive"):
        execute(opts(tmp_path, plan), FakeTransport(steal_pct=3.0))
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["state"] == "failed"
    assert {r["status"] for r in results.read_rows(tmp_path / "run" / "B.csv")} == {"INVALID"}


def test_cpu_regressed_role(tmp_path: Path, plan: plan_mod.Plan) -> None:
    execute(opts(tmp_path, plan), FakeTransport(cpu_regressed_role="consumer"))
    d = results.read_rows(tmp_path / "run" / "D.csv")
    assert {r["status"] for r in d if r["role"] == "consumer"} == {"FAILED_CPU_REGRESSED"}
    assert {r["status"] for r in d if r["role"] == "producer"} == {"OK"}
    assert {r["cpu_s"] for r in d if r["role"] == "consumer"} == {"NA"}
