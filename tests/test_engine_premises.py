"""Issue 30's premises of a judged run, on fake transports: the A/A control cell, A below the
latency knee (the floor, its sanity rule, ABOVE_KNEE), the cluster's warm-up and a driver still
warming (WARMING), the minimum steady window (SHORT_WINDOW), G's backlog sized from the drain
rate, and the topology a machine can carry."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from engine_fakes import FakeTransport, lat
from test_knee import _a, _light, _ms, _opts, _plan, _text

from kbench.engine import control, floor, premises, topology, warmup, window
from kbench.engine import plan as plan_mod
from kbench.engine.machine import memory_total
from kbench.engine.runner import execute
from kbench.engine.status import RETRY_STATUSES, Status
from kbench.engine.transports.base import RunRequest, RunResult, TransportError
from kbench.experiments import g_backlog as backlog
from kbench.experiments.g_axes import axis, catch_up

# ------------------------------------------------------------------ the A/A control cell


def _control_plan(tmp: Path, control_value: str = "true", head: str = "") -> plan_mod.Plan:
    text = _text('"auto"', head=head).replace('name = "a"\n', f'name = "a"\ncontrol = {control_value}\n')
    assert f"control = {control_value}" in text
    return _plan(tmp, text)


def test_control_true_copies_the_sweeps_first_cell_with_identical_settings(tmp_path: Path) -> None:
    cells = plan_mod.expand(_control_plan(tmp_path))
    a = [c for c in cells if c.sweep == "a"]
    assert [c.cell_id for c in a] == ["a-000", "a-001", "a-000-aa"]
    base, aa = a[0], a[-1]
    assert aa.control_of == "a-000" and base.control_of == ""
    assert dataclasses.replace(aa, cell_id=base.cell_id, control_of="") == base  # every setting the baseline's
    assert not any(c.control_of for c in cells if c.sweep != "a")


def test_control_may_name_its_baseline_and_a_wrong_name_is_refused(tmp_path: Path) -> None:
    cells = plan_mod.expand(_control_plan(tmp_path, '"a-001"'))
    assert [(c.cell_id, c.control_of) for c in cells if c.control_of] == [("a-001-aa", "a-001")]
    with pytest.raises(
        plan_mod.PlanError, match=r"sweep\[1\]\.control: 'a-009' is not a cell of sweep a; use one of a-000, a-001"
    ):
        _control_plan(tmp_path, '"a-009"')
    with pytest.raises(plan_mod.PlanError, match=r"sweep\[1\]\.control: 1 is not a control"):
        _control_plan(tmp_path, "1")
    assert control.parse("x", False) == ""


def test_the_control_runs_interleaved_and_its_rows_name_the_baseline(tmp_path: Path) -> None:
    plan = _plan(
        tmp_path,
        _text().replace("repetitions = 2", "repetitions = 3").replace('name = "a"\n', 'name = "a"\ncontrol = true\n'),
    )
    assert execute(_opts(tmp_path, plan), FakeTransport()).state == "complete"
    man = json.loads((tmp_path / "run" / "manifest.json").read_text())
    order = [cid for cid, _ in man["order"]]
    aa = [i for i, cid in enumerate(order) if cid == "a-000-aa"]
    assert len(aa) == 3 and aa[-1] - aa[0] > 2  # shuffled among the other cells' repetitions
    with (tmp_path / "run" / "A.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["control_of"] for r in rows if r["cell_id"] == "a-000-aa"} == {"a-000"}
    assert {r["control_of"] for r in rows if r["cell_id"] != "a-000-aa"} == {""}
    base = {r["target_rate_msgs"] for r in rows if r["cell_id"] == "a-000"}
    assert {r["target_rate_msgs"] for r in rows if r["cell_id"] == "a-000-aa"} == base  # the same derived rate


# ------------------------------------------------------------------ A below the latency knee


def test_a_p99_above_knee_factor_times_the_floor_is_above_knee_with_both_figures() -> None:
    res = _light(latency_corrected=_ms(2.1, 9.0))
    from test_knee import CORPUS, _cell

    from kbench.engine import rules

    def row(floor_us: float | None, factor: float = 2.0) -> dict[str, Any]:
        rows = rules.rows_for(_cell(), 1, res, CORPUS, CORPUS.entropy, 1, knee=(floor_us, factor))
        return rows["A"][0]

    above = row(4000.0)
    assert above["status"] == Status.ABOVE_KNEE
    assert "corrected p99 9.00 ms > knee_factor 2 × latency floor 4.00 ms = 8.00 ms" in above["reason"]
    assert row(4500.0)["status"] == Status.OK  # 9.0 <= 2 x 4.5
    assert row(4000.0, factor=3.0)["status"] == Status.OK  # the plan's factor is the one applied
    assert row(None)["status"] == Status.OK  # no floor measured: no knee bound
    # retried within the budget: at half the knee it is mostly one window's tail (docs/methodology.md §4)
    assert Status.ABOVE_KNEE in RETRY_STATUSES


class _Rising(FakeTransport):
    """A pipeline whose corrected p99 is 1 ms up to ``flat`` msgs/s and grows linearly above it."""

    flat: float = 5000.0

    def run(self, req: RunRequest) -> RunResult:
        res = super().run(req)
        rate = req.rate or 0.0
        p99 = 1000.0 * max(1.0, rate / self.flat)
        return dataclasses.replace(res, latency_corrected=dataclasses.replace(lat(p99 / 3), p99_us=p99))


def test_the_knee_is_where_p99_leaves_knee_factor_times_the_floor(tmp_path: Path) -> None:
    plan = _plan(tmp_path, _text('"auto"', head='auto_rate_basis = "pipeline"\nknee_probe_s = 0.5'))
    t = _Rising()  # saturated: none 40,000, zstd:3 30,000 msgs/s: the three signals pass everywhere
    tables = io.StringIO()
    assert execute(_opts(tmp_path, plan, print_tables=tables), t).state == "complete"
    # the console leads with the premises: each pipeline's floor, the knee, A's rate and bound
    assert (
        "latency floor (corrected p99 at 0.05 x saturation): none/json 1.00 ms, zstd:3/json 1.00 ms; "
        "knee 7500 msgs/s; A at 3750 msgs/s, each A p99 held to knee_factor 2 x its floor"
    ) in tables.getvalue().split("== A:")[0]
    deriv = json.loads((tmp_path / "run" / "manifest.json").read_text())["rate_derivation"]
    assert set(deriv["floors_us"].values()) == {1000.0}  # p99 at 0.05 x 30,000 = 1,500 msgs/s
    # 1 x 30,000: p99 6 ms; 0.7: 4.2; 0.5: 3.0; 0.35 (10,500): 2.1 > 2 ms; 0.25 (7,500): 1.5 ms, passes
    assert deriv["knee_msgs"] == 7500.0 and deriv["knee_factor"] == 2.0
    first = [p for p in deriv["probes"] if p["cell"] == "a-000"]
    assert "corrected p99 2.10 ms > knee_factor 2 × floor 1.00 ms" in first[3]["reason"]
    with (tmp_path / "run" / "A.csv").open(newline="") as f:
        assert {r["status"] for r in csv.DictReader(f)} == {"OK"}  # A at 3,750 msgs/s: p99 1 ms


# ------------------------------------------------------------------ the floor's sanity rule


def _probes(p99s_ms: list[float | None]) -> Any:
    it = iter(p99s_ms)

    def probe(_n: int) -> RunResult:
        v = next(it)
        if v is None:
            raise TransportError("broker not ready")
        return _light(latency_corrected=_ms(v / 2, v))

    return probe


def test_the_floor_settles_when_two_successive_probes_agree_below_the_bound() -> None:
    s = floor.settle(_probes([3500.0, 900.0, 6.0, 5.0, 99.0]), max_ms=50.0)
    assert s.settled and s.p99s_us == [3_500_000.0, 900_000.0, 6000.0, 5000.0]
    assert s.floor_us == 5000.0  # the lower of the two that agree
    assert "settled after 4 probes" in s.describe()


def test_a_floor_above_the_absolute_bound_is_a_cold_cluster_and_warming_goes_on() -> None:
    # 80 and 90 ms agree within x1.5, but a floor of 80 ms on one broker is a cluster not yet warm
    s = floor.settle(_probes([80.0, 90.0, 7.0, 7.5]), max_ms=50.0)
    assert s.settled and s.floor_us == 7000.0 and len(s.p99s_us) == 4


def test_a_floor_that_never_settles_says_so_with_every_figure() -> None:
    s = floor.settle(_probes([10.0, 30.0, None, 100.0]), max_ms=50.0, max_probes=4)
    assert not s.settled
    assert s.floor_us == 30_000.0  # the median of those measured: still recorded, flagged unsettled
    assert "NOT settled after 4 probes (p99 ms: 10.00, 30.00, NA, 100.00)" in s.describe()
    assert "probe 3 failed: broker not ready" in s.describe()
    assert not floor.agree(10.0, 16.0) and floor.agree(10.0, 15.0)


# ------------------------------------------------------------------ warm-up and WARMING


def test_the_cluster_warm_up_probes_each_client_until_latency_is_steady() -> None:
    cells = plan_mod.expand(
        plan_mod.parse(
            {
                "name": "w",
                "sweep": [
                    {"experiments": ["A"], "codec": ["none", "lz4"], "client": ["librdkafka", "java"], "rate": 1000}
                ],
            },
            source="t",
        )
    )
    assert [(c.client, c.codec) for c in warmup.warm_cells(cells)] == [("librdkafka", "none"), ("java", "none")]
    seen: list[tuple[str, float]] = []
    cold = iter([2000.0, 400.0, 5.0, 5.2, 30.0, 8.0, 8.4])

    def probe(cell: plan_mod.Cell, rate: float, _n: int) -> RunResult:
        seen.append((cell.client, rate))
        v = next(cold)
        return _light(latency_corrected=_ms(v / 2, v))

    out = warmup.warm_cluster(cells, probe, max_ms=50.0)
    assert out["settled"] and [c for c, _ in seen] == ["librdkafka"] * 4 + ["java"] * 3
    assert {r for _, r in seen} == {warmup.WARM_RATE_MSGS}
    assert out["cells"][cells[0].cell_id]["p99s_us"][:2] == [2_000_000.0, 400_000.0]


def test_a_java_driver_gets_its_warm_up_out_of_the_steady_window() -> None:
    assert warmup.steady_skip_s(1.0, "java", 10.0) == 2.0
    assert warmup.steady_skip_s(3.0, "java", 10.0) == 3.0
    assert warmup.steady_skip_s(0.0, "librdkafka", 10.0) == 0.0
    assert warmup.steady_skip_s(0.0, "java", 2.0) == 1.0  # never more than half the repetition


def _series(p99s_ms: list[float]) -> tuple[dict[str, Any], ...]:
    return tuple(
        {"role": "producer", "second": i, "in_window": 1, "p99_us": v * 1000, "rate": 1000}
        for i, v in enumerate(p99s_ms)
    )


def test_a_saturated_repetition_whose_p99_fell_and_settled_is_warming() -> None:
    late = _ms(0.1, 35.0)  # send delay p99 35 ms: saturated by the three signals
    warm = _a(_light(latency_delay=late, series=_series([60.0, 9.0, 5.0, 5.2, 5.1])))
    assert warm["status"] == Status.WARMING
    assert "still warming: per-second p99 60.0 ms in the window's first second, settling at 5.1 ms" in warm["reason"]
    assert "send delay p99 35.0 ms > 20 ms" in warm["reason"]  # the signals stay in the reason
    flat = _a(_light(latency_delay=late, series=_series([40.0, 42.0, 39.0, 41.0])))
    assert flat["status"] == Status.SATURATED  # steady and late: the load, not a warm-up
    rising = _a(_light(latency_delay=late, series=_series([60.0, 5.0, 5.0, 30.0])))
    assert rising["status"] == Status.SATURATED  # not settled at the end
    settled_high = _a(_light(latency_delay=late, series=_series([300.0, 62.0, 60.0, 63.0])))
    assert settled_high["status"] == Status.SATURATED  # it settled into queueing (62 ms > 20 ms): the load
    assert Status.WARMING in RETRY_STATUSES and Status.SATURATED not in RETRY_STATUSES


# ------------------------------------------------------------------ the minimum steady window


def test_a_window_shorter_than_min_window_s_is_short_window_with_the_figure() -> None:
    v = window.check(_light(elapsed_s=3.5), 1.0, 3.0)
    assert v.status == Status.SHORT_WINDOW
    assert "steady window (producing window − steady skip 1 s) 2.50 s < min_window_s 3 s; raise duration_s" in v.reason
    assert window.check(_light(elapsed_s=4.0), 1.0, 3.0).status == Status.OK
    drain = window.check(_light(drain={"span_s": 0.31, "bytes": 128 << 20}), 0.0, 3.0)
    assert drain.status == Status.SHORT_WINDOW and "drain 0.31 s < min_window_s 3 s" in drain.reason
    assert window.check(_light(elapsed_s=0.5, synthetic=True), 0.0, 3.0).status == Status.OK


def test_a_short_window_reaches_every_row_of_the_run(tmp_path: Path) -> None:
    from test_knee import CORPUS, _cell

    from kbench.engine import rules

    rows = rules.rows_for(_cell(), 1, _light(elapsed_s=2.0), CORPUS, CORPUS.entropy, 1, min_window=(0.0, 3.0))
    assert rows["A"][0]["status"] == Status.SHORT_WINDOW and "2.00 s < min_window_s 3 s" in rows["A"][0]["reason"]


def test_a_plan_whose_durations_leave_less_than_min_window_s_is_refused(tmp_path: Path) -> None:
    text = _text().replace("min_window_s = 0\n", "")
    with pytest.raises(
        plan_mod.PlanError, match="min_window_s: duration_s 1 − steady_skip_s 0 leaves a 1 s steady window"
    ):
        _plan(tmp_path, text)
    assert premises.parse({}, 4.0, 1.0).min_window_s == premises.DEFAULT_MIN_WINDOW_S == 3.0
    with pytest.raises(premises.PremiseError, match=r"knee_factor: 0.5 must be in \[1, 100\]"):
        premises.parse({"knee_factor": 0.5}, 10.0, 0.0)


# ------------------------------------------------------------------ G's backlog from the drain rate


def test_g_sizes_its_backlog_so_that_a_drain_lasts_five_seconds() -> None:
    res = _light(drain={"span_s": 0.5, "bytes": 128 << 20})  # 268 MB/s
    want = backlog.next_size(res, 128 << 20)
    assert backlog.MARGIN == 2.5
    assert want == int(-(-(128 << 20) / 0.5 * 5.0 * 2.5 // 1))  # rate x 5 s x 2.5 margin
    assert backlog.next_size(_light(drain={"span_s": 6.5, "bytes": 128 << 20}), 128 << 20) is None  # long enough
    # a warm-up that only just passes 5 s is resized: the repetitions after it drain faster
    just = backlog.next_size(_light(drain={"span_s": 5.5, "bytes": 128 << 20}), 128 << 20)
    assert just == int(-(-(128 << 20) / 5.5 * 5.0 * 2.5 // 1))
    huge = backlog.next_size(_light(drain={"span_s": 0.01, "bytes": 1 << 30}), 1 << 30)
    assert huge == backlog.MAX_BACKLOG_BYTES
    capped = backlog.next_size(_light(drain={"span_s": 0.01, "bytes": 1 << 30}), 1 << 30, 3 << 30)
    assert capped == 3 << 30
    # at the cap, or a plan's backlog above it: left as it is (a drain still short is SHORT_WINDOW)
    assert backlog.next_size(_light(drain={"span_s": 0.01, "bytes": 3 << 30}), 3 << 30, 3 << 30) is None
    assert backlog.next_size(_light(drain={"span_s": 0.01, "bytes": 5 << 30}), 5 << 30, 3 << 30) is None
    cell = plan_mod.Cell(
        "g-000", "g", ("G",), "none", "json", 65536, 5, 2, "1", "saturated", "producer", extras={"backlog_bytes": 100}
    )
    assert axis(backlog.sized(cell, {"g-000": {"backlog_bytes": 5000}}), "backlog_bytes") == 5000
    assert axis(backlog.sized(cell, {}), "backlog_bytes") == 100


def test_gs_backlog_takes_at_most_half_the_machines_memory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # the drain reads the backlog from the page cache, beside the members' queues and the broker
    (tmp_path / "meminfo").write_text("MemTotal:       24682816 kB\nMemFree:  100 kB\n")
    assert memory_total(tmp_path) == 24682816 * 1024
    assert memory_total(tmp_path / "none") is None
    # the live figure is the kernel's, as glibc's sysinfo(2) reports it
    assert memory_total() == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert backlog.MEMORY_SHARE == 0.5
    assert backlog.backlog_cap(24 << 30) == 12 << 30
    assert backlog.backlog_cap(64 << 30) == backlog.MAX_BACKLOG_BYTES == 16 << 30
    assert backlog.backlog_cap(None) == backlog.MAX_BACKLOG_BYTES
    cell = plan_mod.Cell(
        "g-000",
        "g",
        ("G",),
        "none",
        "json",
        65536,
        5,
        2,
        "1",
        "saturated",
        "producer",
        extras={"backlog_bytes": 128 << 20},
    )
    monkeypatch.setattr(backlog, "memory_total", lambda: 8 << 30)
    step = backlog.TUNING.step(cell, _light(drain={"span_s": 0.1, "bytes": 128 << 20}))
    assert step is not None
    entry, line = step
    assert entry["backlog_bytes"] == 4 << 30  # 128 MiB in 0.1 s x 12.5 s would be 16.8 GB
    assert line.endswith(f"backlog sized to {4 << 30} bytes (the cap: 50% of memory, at most 16 GiB)")
    monkeypatch.setattr(backlog, "memory_total", lambda: 64 << 30)
    entry, line = backlog.TUNING.step(cell, _light(drain={"span_s": 0.5, "bytes": 128 << 20})) or ({}, "")
    assert entry["backlog_bytes"] == int(-(-(128 << 20) / 0.5 * 5.0 * 2.5 // 1)) and "cap" not in line


# ------------------------------------------------------------------ the topology a machine carries


def test_five_emulated_hosts_run_only_where_there_are_cpus_for_them() -> None:
    seed = plan_mod.TransportDef(kind="testbed", brokers=3, replication_factor=3, min_insync_replicas=2)
    small, choice = topology.choose(seed, 2)
    assert (small.brokers, small.replication_factor, small.min_insync_replicas) == (1, 1, None)
    assert choice.reduced and choice.hosts == 3 and choice.planned_brokers == 3
    assert "this machine has 2 CPUs for the plan's 5 hosts (3 brokers with RF 3" in choice.reason
    same, kept = topology.choose(seed, 8)
    assert same == seed and not kept.reduced and "8 CPUs carry the plan's 5 hosts" in kept.reason
    one = plan_mod.TransportDef(kind="local", brokers=1)
    assert topology.choose(one, 2)[0] == one and "the smallest topology" in topology.choose(one, 2)[1].reason
    assert json.dumps(choice.as_dict())  # the manifest's entry


def test_the_run_records_the_topology_it_was_given(tmp_path: Path) -> None:
    plan = _plan(tmp_path, _text())
    _, choice = topology.choose(plan.transport, 2)
    execute(_opts(tmp_path, plan, topology=choice.as_dict(), progress_stream=io.StringIO()), FakeTransport())
    man = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert man["topology"]["summary"] == choice.describe()


class _Draining(FakeTransport):
    """A catch-up cell drains its backlog at 200 MB/s (payload bytes per second of the drain)."""

    def run(self, req: RunRequest) -> RunResult:
        res = super().run(req)
        if not catch_up(req.cell):
            return res
        b = axis(req.cell, "backlog_bytes")
        drain = {"span_s": b / 200e6, "bytes": b, "unique": b // 300, "lost": 0, "duplicated": 0, "members": []}
        return dataclasses.replace(res, drain=drain)


def test_the_runner_sizes_gs_backlog_from_the_warm_up_drain(tmp_path: Path) -> None:
    text = """
name = "g"
repetitions = 2
duration_s = 4
warmup_s = 1
corpus_size = 20000
seed = 3

[transport]
kind = "dry"

[[sweep]]
name = "drain"
experiments = ["G"]
codec = ["none"]
rate = "saturated"
backlog_bytes = 134217728
"""
    plan = _plan(tmp_path, text)
    t = _Draining()
    assert execute(_opts(tmp_path, plan), t).state == "complete"
    man = json.loads((tmp_path / "run" / "manifest.json").read_text())
    # 128 MiB at 200 MB/s drains in 0.67 s: sized to 200 MB/s x 5 s x 2.5 = 2.5 GB, which drains in 12.5 s
    assert man["backlog"]["drain-000"]["backlog_bytes"] == 2_500_000_000
    warm = [r for r in t.requests if r.warmup]
    assert [axis(r.cell, "backlog_bytes") for r in warm] == [134217728, 2_500_000_000]  # sized once, then long enough
    reps = [r for r in t.requests if not r.warmup]
    assert {axis(r.cell, "backlog_bytes") for r in reps} == {2_500_000_000}
    with (tmp_path / "run" / "G.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["backlog_bytes"] for r in rows} == {"2500000000"} and {r["status"] for r in rows} == {"OK"}
    assert {float(r["drain_s"]) for r in rows} == {12.5}


def test_a_kafka_run_warms_its_cluster_first_and_again_on_resume(tmp_path: Path) -> None:
    text = _text('"auto"').replace('kind = "dry"', 'kind = "local"').replace("warmup = false", "warmup = true")
    plan = _plan(tmp_path, text)
    t = FakeTransport(interrupt_after=5)
    with pytest.raises(KeyboardInterrupt):
        execute(_opts(tmp_path, plan), t)
    first = [r.topic for r in t.requests if "-warm" in r.topic]
    # the first requests of the run: warm-up probes of the first cell at 1,000 msgs/s, until two agree
    assert [r.topic for r in t.requests[:2]] == first and len(first) == 2
    assert all("-warm0-" in x for x in first) and {r.rate for r in t.requests[:2]} == {warmup.WARM_RATE_MSGS}
    t2 = FakeTransport()
    assert execute(_opts(tmp_path, plan, resume=True), t2).state == "complete"
    again = [r.topic for r in t2.requests[:2]]
    assert all("-warm1-" in x for x in again)  # a resumed run's cluster is cold again: warmed again
    man = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert man["warm_up"]["settled"] and man["warm_up"]["rate_msgs"] == warmup.WARM_RATE_MSGS
