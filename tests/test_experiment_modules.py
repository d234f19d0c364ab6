"""Adding an experiment is one module and one registry line: a toy experiment (id T) defined here runs
through a plan, the runner, the CSV store, the end-of-run tables and the report, with no other
code changed; with a job mode of its own, the transport and the local pool run it; with an axis,
an own run and a warm-up tuning of its own, the plan, estimate and runner carry them."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from engine_fakes import FakeTransport
from test_engine_runner import opts

from kbench.engine import plan as plan_mod
from kbench.engine import store
from kbench.engine.cell import Cell
from kbench.engine.estimate import estimate
from kbench.engine.runner import execute
from kbench.engine.transports.base import RunRequest, TransportError
from kbench.engine.transports.distributed import DaskPool
from kbench.engine.transports.kafka import KafkaTransport
from kbench.engine.transports.local_pool import LocalPool
from kbench.engine.transports.measure import JobInputs, Jobs, PoolResult
from kbench.experiments import registry
from kbench.experiments.rowkit import finish, row_base
from kbench.experiments.spec import Experiment, Metric, RowInput, Tuning
from kbench.model.corpus import Corpus
from kbench.reporting import document as doc
from kbench.reporting import report
from kbench.reporting.summary import stats

TOY_TITLE = "Toy experiment · payload per message"


def _rows(x: RowInput) -> list[dict[str, Any]]:
    row = row_base(x)
    row["bytes_per_message"] = x.res.payload_bytes / max(1, x.res.messages_acked)
    return [finish(row, x.verdict)]


def _section(ctx: Any, df: Any) -> None:
    st = stats(ctx.ledger, df, "T", "bytes_per_message", ["machine", "codec"], "f2")
    rows = [[*k, s.cell()] for k, s in sorted(st.items())]
    ctx.add(doc.Heading(2, TOY_TITLE, "exp-t"), doc.Table(["machine", "codec", "bytes/message"], rows))


TOY = Experiment(
    id="T",
    title="toy: payload bytes per message",
    own_columns=("bytes_per_message",),
    compared=("codec",),
    headline=(Metric("bytes_per_message", "B", True),),
    verdict_on="bytes_per_message",
    needs={},
    rows=_rows,
    section=_section,
    report_title=TOY_TITLE,
)

PLAN = """
name = "toy"
repetitions = 2
warmup = false
duration_s = 1
min_window_s = 0
steady_skip_s = 0

[[sweep]]
experiments = ["T"]
codec = ["none", "zstd:3"]
rate = 1000
"""


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> Experiment:
    monkeypatch.setitem(registry.EXPERIMENTS, "T", TOY)  # the one registry line
    return TOY


def test_a_toy_experiment_runs_through_plan_runner_store_tables_and_report(tmp_path: Path, toy: Experiment) -> None:
    p = tmp_path / "toy.toml"
    p.write_text(PLAN)
    plan = plan_mod.load(str(p))
    assert list(plan.experiments) == ["T"]
    tables = io.StringIO()
    outcome = execute(opts(tmp_path, plan, print_tables=tables), FakeTransport())
    rows = store.read_rows(outcome.run_dir / "T.csv")
    assert list(rows[0]) == list(toy.columns)
    assert len(rows) == 4 and {r["status"] for r in rows} == {"OK"}
    assert all(float(r["bytes_per_message"]) > 0 for r in rows)
    assert "== T: toy: payload bytes per message ==" in tables.getvalue()
    files = report.write([outcome.run_dir], tmp_path / "report", with_plots=False)
    md = files.markdown.read_text()
    assert f"## {TOY_TITLE}" in md
    assert "bytes/message" in md


def test_without_the_registry_line_the_plan_refuses_the_experiment(tmp_path: Path) -> None:
    p = tmp_path / "toy.toml"
    p.write_text(PLAN)
    with pytest.raises(plan_mod.PlanError, match="unknown experiment 'T'"):
        plan_mod.load(str(p))


def test_a_toy_experiment_brings_its_own_jobs_and_the_local_pool_runs_their_schedule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job mode of its own (as G's backlog and drain): the transport asks the registry for the
    experiment's jobs, the local pool runs their schedule, the Dask pool refuses it in one line."""
    ran: list[tuple[Any, RunRequest]] = []
    measured = PoolResult({"sent": 7}, None, (), 70)

    def schedule(pool: Any, req: RunRequest, jobs: Jobs, window: Any) -> PoolResult:
        ran.append((pool, req))
        return measured

    def own(req: RunRequest, inputs: JobInputs) -> Jobs | None:
        if req.cell.codec != "zstd:3":
            return None  # the common jobs for its other cells
        return Jobs({"topic": req.topic, "props": dict(inputs.producer_props)}, None, 7, schedule=schedule)

    monkeypatch.setitem(registry.EXPERIMENTS, "T", dataclasses.replace(TOY, jobs=own))
    transport: Any = SimpleNamespace(
        _producer_props=lambda r: {"bootstrap.servers": "127.0.0.1:9"},
        bootstrap="127.0.0.1:9",
        defn=SimpleNamespace(header_sample=1, consumers=1, consumer_group=False),
    )
    cell = Cell("c1", "s", ("T",), "zstd:3", "json", 16384, 5.0, 1, "all", 100.0, "producer")
    req = RunRequest(cell, "t", Corpus("json", (b"x" * 10,)), 100.0, 1.0, 0.0)
    jobs = KafkaTransport._jobs(transport, req)
    assert jobs.schedule is schedule and jobs.count == 7 and jobs.producer["topic"] == "t"
    pool = LocalPool(tmp_path, 1)
    assert pool.run(req, jobs, window=None) is measured  # type: ignore[arg-type]
    assert ran == [(pool, req)]
    with pytest.raises(TransportError, match="not on Dask workers; drop transport.workers"):
        DaskPool.run(SimpleNamespace(), req, jobs, None)  # type: ignore[arg-type]
    other = dataclasses.replace(cell, codec="none", spec=None)
    common = KafkaTransport._jobs(transport, dataclasses.replace(req, cell=other))
    assert common.schedule is None and common.consumer is not None


def _toy_axes(w: str, tbl: Any, clients: Any) -> dict[str, tuple[Any, ...]]:
    v = tbl.get("toy_words", 1)
    return {"toy_words": tuple(int(x) for x in (v if isinstance(v, list) else [v]))}


def _toy_own(cell: Cell) -> bool:
    return int(cell.extras.get("toy_words", 1)) > 1


def _toy_apply(cell: Cell, entry: Any) -> Cell:
    return (
        cell if entry is None or not _toy_own(cell) else dataclasses.replace(cell, extras={"toy_words": entry["words"]})
    )


def _toy_step(cell: Cell, res: Any) -> tuple[dict[str, Any], str] | None:
    words = int(cell.extras.get("toy_words", 1))
    return ({"words": words * 2}, f"{words} words: doubled") if _toy_own(cell) and words < 8 else None


#: The toy with an axis of its own (a plan key its cells carry in Cell.extras), cells that are its
#: own runs (estimated at 5 s, not probed by the cluster's warm-up, kept off Dask workers) and a
#: warm-up tuning that doubles the axis until it reaches 8: G's mechanisms, none of G's names.
TOY_OWN = dataclasses.replace(
    TOY,
    sweep_axes=_toy_axes,
    sweep_keys={"toy_words": "toy: words per record, or a list"},
    own_run=_toy_own,
    own_run_s=5.0,
    tuning=Tuning(key="toy_tuning", apply=_toy_apply, step=_toy_step, max_rounds=3),
    local_only=lambda extras: "toy_words: a toy run stays here" if any(w > 1 for w in extras["toy_words"]) else "",
)

OWN_PLAN = """
name = "own"
repetitions = 2
warmup_s = 1
duration_s = 1
min_window_s = 0
steady_skip_s = 0

[transport]
kind = "dry"

[[sweep]]
name = "t"
experiments = ["T"]
codec = ["none"]
rate = 1000
toy_words = [1, 2]
"""


def test_a_toy_experiment_brings_its_own_axis_own_run_and_warm_up_tuning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = tmp_path / "own.toml"
    p.write_text(OWN_PLAN)
    with pytest.raises(plan_mod.PlanError, match="toy_words: unknown key"):
        plan_mod.load(str(p))  # without the experiment, its key is nobody's
    monkeypatch.setitem(registry.EXPERIMENTS, "T", TOY_OWN)
    plan = plan_mod.load(str(p))
    cells = plan_mod.expand(plan)
    assert [c.extras["toy_words"] for c in cells] == [1, 2] and plan.sweeps[0].extras["toy_words"] == (1, 2)
    assert estimate(plan).repetitions_s == 2 * (1.0 + 5.0)  # its own run: the experiment's 5 s
    assert estimate(plan).warmups_s == 1.0 + 5.0
    t = FakeTransport()
    assert execute(opts(tmp_path, plan), t).state == "complete"
    man = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert man["toy_tuning"] == {"t-001": {"words": 8}}  # 2 -> 4 -> 8, then content
    warm = [r.cell.extras["toy_words"] for r in t.requests if r.warmup]
    assert warm == [1, 2, 4, 8] or warm == [2, 4, 8, 1]
    assert sorted(r.cell.extras["toy_words"] for r in t.requests if not r.warmup) == [1, 1, 8, 8]
    p.write_text(OWN_PLAN.replace('kind = "dry"', 'kind = "local"\nworkers = "tcp://127.0.0.1:8786"'))
    with pytest.raises(plan_mod.PlanError, match=r"^sweep\[0\]\.toy_words: a toy run stays here$"):
        plan_mod.load(str(p))
