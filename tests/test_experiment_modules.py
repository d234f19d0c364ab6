"""Adding an experiment is one module and one registry line: a toy experiment (id T) defined here runs
through a plan, the runner, the CSV store, the end-of-run tables and the report, with no other
code changed; with a job mode of its own, the transport and the local pool run it."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from engine_fakes import FakeTransport
from test_engine_runner import opts

from kbench.engine import plan as plan_mod
from kbench.engine import store
from kbench.engine.cell import Cell
from kbench.engine.runner import execute
from kbench.engine.transports.base import RunRequest, TransportError
from kbench.engine.transports.distributed import DaskPool
from kbench.engine.transports.kafka import KafkaTransport
from kbench.engine.transports.local_pool import LocalPool
from kbench.engine.transports.measure import JobInputs, Jobs, PoolResult
from kbench.experiments import registry
from kbench.experiments.rowkit import finish, row_base
from kbench.experiments.spec import Experiment, Metric, RowInput
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
