"""Every branch of the experiments' rules, with fake measurements: loss from duplicates and
delivery errors, the NA branches of A, C, D and F, the topic's ``none``, steal that cannot be
measured, resume re-using the seed and the derived rate, and CPU-s/GB over the run's window."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from engine_fakes import FakeTransport, engine_plan, lat, write_plan

from kbench.engine import gate, rules, store
from kbench.engine import plan as plan_mod
from kbench.engine.plan import Cell
from kbench.engine.runner import RunOptions, derive_rate, execute, order_runs
from kbench.engine.transports.base import CpuSample, RunResult
from kbench.model import corpus

CORPUS = corpus.generate("json", 5000)


def cell(exps: tuple[str, ...], rate: float | str = 1000.0, codec: str = "zstd:3", tc: str = "producer") -> Cell:
    return Cell("x-000", "x", exps, codec, "json", 16384, 5.0, 1, "all", rate, tc)


def result(**kw: object) -> RunResult:
    base: dict[str, object] = dict(
        messages_sent=1000,
        messages_acked=1000,
        payload_bytes=2 * 10**9,
        elapsed_s=10.0,
        target_rate=1000.0,
        achieved_rate=1000.0,
        latency_service=lat(10),
        latency_delay=lat(1),
        latency_corrected=lat(12),
        latency_e2e=lat(20),
        consumed=1000,
        lost=0,
        duplicated=0,
        delivery_errors=0,
        cpu=(
            CpuSample("producer", 3.0, 1.0, 10.0, pid=1, window_payload_bytes=16 * 10**8),
            CpuSample("consumer", 1.0, 1.0, 10.0, pid=2, window_payload_bytes=18 * 10**8),
            CpuSample("broker-0", 2.0, 2.0, 8.0, pid=3, window_payload_bytes=15 * 10**8),
            CpuSample("broker-1", 1.0, 1.0, 8.0, pid=4, window_payload_bytes=15 * 10**8),
        ),
        steal_pct=0.0,
        producer_wire_bytes=10**8,
        consumer_wire_bytes=10**8,
        stored_bytes=4 * 10**8,
        stored_batches=100,
        stored_codecs=("zstd",),
        topic_compression_readback="producer",
    )
    base.update(kw)
    return RunResult(**base)  # type: ignore[arg-type]


ALL = ("A", "B", "C", "D", "E", "F")


def rows(c: Cell, r: RunResult) -> dict[str, list[dict[str, object]]]:
    out = rules.rows_for(c, 1, r, CORPUS, CORPUS.entropy, 3)
    assert set(out) == set(c.experiments)
    return out


def statuses(out: dict[str, list[dict[str, object]]]) -> dict[str, set[object]]:
    return {exp: {r["status"] for r in rs} for exp, rs in out.items()}


def test_the_baseline_result_is_ok_everywhere() -> None:
    # the fixture the branches below change one field of: every row OK without the change
    out = rows(cell(ALL), result())
    assert statuses(out) == {e: {"OK"} for e in ALL}
    assert len(out["D"]) == 4


# --------------------------------------------------------------------------- FAILED_LOSS


def test_duplicates_alone_are_failed_loss() -> None:
    out = rows(cell(ALL), result(duplicated=2))
    assert statuses(out) == {e: {"FAILED_LOSS"} for e in ALL}
    assert "0 lost and 2 duplicated" in str(out["A"][0]["reason"])
    assert out["A"][0]["duplicated"] == 2 and out["B"][0]["duplicated"] == 2


def test_delivery_errors_alone_are_failed_loss() -> None:
    out = rows(cell(ALL), result(delivery_errors=5))
    assert statuses(out) == {e: {"FAILED_LOSS"} for e in ALL}
    assert str(out["C"][0]["reason"]) == "5 delivery errors"
    assert out["A"][0]["delivery_errors"] == 5


# --------------------------------------------------------------------------- NA branches


def test_a_without_corrected_latency_is_na() -> None:
    out = rows(cell(("A", "C")), result(latency_corrected=None))
    a = out["A"][0]
    assert a["status"] == "NA" and a["reason"] == "latency not measured by this transport"
    assert a["corrected_p99_us"] is None and a["service_p99_us"] == 30
    assert out["C"][0]["status"] == "OK"  # only the experiment that needs it


def test_c_without_stored_bytes_is_na() -> None:
    out = rows(cell(("C", "A")), result(stored_bytes=None))
    c = out["C"][0]
    assert c["status"] == "NA" and c["reason"] == "stored bytes not measured by this transport"
    assert c["ratio"] is None
    assert out["A"][0]["status"] == "OK"


def test_d_without_any_cpu_sample_is_one_na_row() -> None:
    d = rows(cell(("D",)), result(cpu=()))["D"]
    assert [(r["role"], r["status"], r["reason"]) for r in d] == [("all", "NA", "this transport measured no CPU")]


def test_f_without_broker_cpu_is_na() -> None:
    f = rows(cell(("F",)), result(cpu=(CpuSample("producer", 1.0, 1.0, 10.0),)))["F"][0]
    assert f["status"] == "NA" and f["reason"] == "broker CPU not measured (no local broker pids)"
    assert f["broker_cpu_s_per_gb"] is None


def test_f_with_an_unreadable_broker_is_na_never_a_partial_sum() -> None:
    r = result(cpu=(CpuSample("broker-0", 2.0, 2.0, 8.0), CpuSample("broker-1", None, None, 8.0, note="pid gone")))
    f = rows(cell(("F",)), r)["F"][0]
    assert f["status"] == "NA" and "broker-1: CPU counters unreadable (pid gone)" in str(f["reason"])
    assert f["broker_cpu_s_per_gb"] is None and f["broker_usr_pct"] is None


def test_na_never_hides_a_worse_status() -> None:
    out = rows(cell(("A",)), result(latency_corrected=None, lost=1))
    assert out["A"][0]["status"] == "FAILED_LOSS"
    assert "latency not measured" in str(out["A"][0]["reason"])


# --------------------------------------------------------------------------- topic compression


@pytest.mark.parametrize("planned", ["none", "uncompressed", "NONE"])
@pytest.mark.parametrize("readback", ["uncompressed", "none", "UNCOMPRESSED"])
def test_planned_none_reads_back_as_uncompressed(planned: str, readback: str) -> None:
    c = cell(("C",), codec="none", tc=planned)
    assert c.topic_compression == "uncompressed"  # Kafka's spelling, whatever the plan wrote
    ok = rows(c, result(topic_compression_readback=readback, stored_codecs=("none",)))["C"][0]
    assert ok["status"] == "OK", ok["reason"]
    bad = rows(c, result(topic_compression_readback="lz4", stored_codecs=("lz4",)))["C"][0]
    assert bad["status"] == "FAILED_TOPIC_CONFIG"
    assert "reads back 'lz4', the plan says 'uncompressed'" in str(bad["reason"])


# --------------------------------------------------------------------------- steal


def test_steal_that_cannot_be_measured_makes_every_row_na() -> None:
    out = rows(cell(ALL), result(steal_pct=None))
    assert statuses(out) == {e: {"NA"} for e in ALL}
    assert all("CPU steal not measurable" in str(r["reason"]) for rs in out.values() for r in rs)
    # a worse status still wins, and a synthetic (dry) run is labelled synthetic instead
    assert statuses(rows(cell(("A",)), result(steal_pct=None, lost=1))) == {"A": {"FAILED_LOSS"}}
    syn = rows(cell(("C",)), result(steal_pct=None, synthetic=True))["C"][0]
    assert syn["status"] == "OK" and "synthetic" in str(syn["reason"])


# --------------------------------------------------------------------------- CPU window


def test_cpu_s_per_gb_divides_each_roles_cpu_by_its_own_windows_payload() -> None:
    # One window: each role's CPU seconds (usr + sys of its own sample, whose wall_s gives the %)
    # over the payload of that role's own CPU window, never the run's payload_bytes (2 GB here).
    out = rows(cell(("D", "F")), result())
    d = {r["role"]: r for r in out["D"]}
    assert d["producer"]["cpu_s_per_gb"] == pytest.approx(4.0 / 1.6)
    assert d["consumer"]["cpu_s_per_gb"] == pytest.approx(2.0 / 1.8)
    assert d["broker-0"]["cpu_s_per_gb"] == pytest.approx(4.0 / 1.5)
    assert d["broker-0"]["usr_pct"] == pytest.approx(2.0 / 8.0 * 100)  # the broker's own window
    assert d["producer"]["usr_pct"] == pytest.approx(3.0 / 10.0 * 100)
    assert [d[r]["payload_gb"] for r in ("producer", "consumer", "broker-0")] == pytest.approx([1.6, 1.8, 1.5])
    f = out["F"][0]
    assert f["broker_cpu_s_per_gb"] == pytest.approx((4.0 + 2.0) / 1.5)


def test_no_window_payload_means_no_cpu_per_gb() -> None:
    # a role whose window payload was not measured is NA, never divided by the run's payload
    cpu = tuple(
        CpuSample(c.role, c.usr_s, c.sys_s, c.wall_s, pid=c.pid, window_payload_bytes=None) for c in result().cpu
    )
    d = rows(cell(("D",)), result(cpu=cpu))["D"]
    assert len(d) == 4 and all(r["cpu_s_per_gb"] is None and r["status"] == "NA" for r in d)
    assert all("payload of its CPU window not measured" in r["reason"] for r in d)


# --------------------------------------------------------------------------- resume

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
        plan=plan, run_dir=tmp / "run", gate_sample_s=0.0, gate_overrides=GATE_OK, progress_stream=io.StringIO()
    )
    base.update(kw)
    return RunOptions(**base)  # type: ignore[arg-type]


def _rep(req: object) -> tuple[str, int]:
    return (req.cell.cell_id, int(req.topic.rsplit("-r", 1)[-1].split("a")[0]))  # type: ignore[attr-defined]


def test_resume_without_a_plan_seed_reuses_the_seed_drawn_at_first_run(tmp_path: Path) -> None:
    text = engine_plan(seed=None)
    assert "seed" not in text
    plan = plan_mod.load(str(write_plan(tmp_path, text)))
    assert plan.seed is None
    with pytest.raises(KeyboardInterrupt):
        execute(opts(tmp_path, plan), FakeTransport(interrupt_after=11))
    run = tmp_path / "run"
    seed = json.loads((run / "manifest.json").read_text())["seed"]
    assert isinstance(seed, int)
    done = store.read_done(run)
    t2 = FakeTransport()
    assert execute(opts(tmp_path, plan, resume=True), t2).state == "complete"
    assert json.loads((run / "manifest.json").read_text())["seed"] == seed
    # the remaining (cell, repetition) pairs ran in the order the first run's seed gives
    order = [(c.cell_id, r) for c, r in order_runs(plan_mod.expand(plan), plan.repetitions, seed)]
    ran = [_rep(r) for r in t2.requests if not r.warmup]
    assert ran == [k for k in order if k in ran]
    assert len(ran) >= 3  # enough pairs that another seed would (almost surely) order them differently
    assert not any(_rep(r) in done for r in t2.requests if not r.warmup)


def test_resume_reuses_the_derived_rate_even_when_a_new_derivation_would_differ(tmp_path: Path) -> None:
    plan = plan_mod.load(str(write_plan(tmp_path)))
    with pytest.raises(KeyboardInterrupt):
        execute(opts(tmp_path, plan), FakeTransport(interrupt_after=11))
    run = tmp_path / "run"
    rate = json.loads((run / "manifest.json").read_text())["rate_derivation"]["rate_msgs"]
    assert rate == pytest.approx(30_000.0 * plan.auto_rate_fraction)
    # B's rows now say the cluster was half as fast: deriving again would give another rate
    path = run / "B.csv"
    with path.open(newline="") as f:
        b = list(csv.DictReader(f))
    for r in b:
        r["achieved_rate_msgs"] = str(float(r["achieved_rate_msgs"]) / 2)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(b[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(b)
    sat = [c.cell_id for c in plan_mod.expand(plan) if c.saturated]
    assert derive_rate(run, sat, plan.auto_rate_fraction)["rate_msgs"] == pytest.approx(rate / 2)
    t2 = FakeTransport()
    assert execute(opts(tmp_path, plan, resume=True), t2).state == "complete"
    fixed = [r for r in t2.requests if not r.cell.saturated]
    assert fixed and {r.rate for r in fixed} == {rate}
    a = [r for r in store.read_rows(run / "A.csv")]
    assert len(a) == 12 and {float(r["target_rate_msgs"]) for r in a} == {rate}


def test_f_row_every_column_against_a_hand_calculation() -> None:
    r = result(stored_source="segment files (kbench inspector)", stored_codecs=("zstd",))
    f = rows(cell(("F",)), r)["F"][0]
    # two local brokers over their 8 s windows: usr 2 + 1 s, sys 2 + 1 s -> 25 % + 12.5 % each
    assert f["broker_usr_pct"] == pytest.approx(37.5) and f["broker_sys_pct"] == pytest.approx(37.5)
    assert f["broker_cpu_s_per_gb"] == pytest.approx(6.0 / 1.5)  # per GB of the (first) broker window
    assert (f["producer_codec"], f["stored_codecs"], f["recompressed"]) == ("zstd:3", ["zstd"], False)
    assert (f["payload_bytes"], f["stored_bytes"]) == (2 * 10**9, 4 * 10**8)
    assert f["stored_source"] == "segment files (kbench inspector)" and f["status"] == "OK"
    lz4 = rows(cell(("F",), tc="lz4"), result(stored_codecs=("lz4",), topic_compression_readback="lz4"))["F"][0]
    assert lz4["recompressed"] is True and lz4["status"] == "OK"


def test_f_with_brokers_measured_by_metrics_sums_cpu_without_a_split() -> None:
    cpu = (
        CpuSample("broker-0", None, None, 8.0, total_s=3.0, window_payload_bytes=15 * 10**8),
        CpuSample("broker-1", None, None, 8.0, total_s=1.5, window_payload_bytes=15 * 10**8),
    )
    f = rows(cell(("F",)), result(cpu=cpu))["F"][0]
    assert f["status"] == "OK" and f["broker_usr_pct"] is None and f["broker_sys_pct"] is None
    assert f["broker_cpu_s_per_gb"] == pytest.approx(4.5 / 1.5)


def test_f_with_a_remote_cpu_counter_going_backwards_fails_the_row() -> None:
    cpu = (
        CpuSample("broker-0", None, None, 8.0, total_s=3.0, window_payload_bytes=15 * 10**8),
        CpuSample("broker-1", None, None, 8.0, total_s=-9.5, regressed=True, window_payload_bytes=15 * 10**8),
    )
    out = rows(cell(("D", "F")), result(cpu=cpu))
    f = out["F"][0]
    assert f["status"] == "FAILED_CPU_REGRESSED" and "broker-1: CPU counter went backwards" in str(f["reason"])
    assert f["broker_cpu_s_per_gb"] is None
    d = {r["role"]: r for r in out["D"]}
    assert d["broker-1"]["status"] == "FAILED_CPU_REGRESSED" and d["broker-0"]["status"] == "OK"


def test_f_without_the_broker_windows_payload_is_na() -> None:
    cpu = tuple(CpuSample(c.role, c.usr_s, c.sys_s, c.wall_s, pid=c.pid) for c in result().cpu)
    f = rows(cell(("F",)), result(cpu=cpu))["F"][0]
    assert f["status"] == "NA" and f["broker_cpu_s_per_gb"] is None
    assert "broker: payload of its CPU window not measured" in str(f["reason"])


def _d_row(sample: CpuSample) -> dict[str, object]:
    (row,) = rows(cell(("D",)), result(cpu=(sample,)))["D"]
    return row


def test_cpu_role_boundaries_of_the_d_row() -> None:
    gb = 15 * 10**8
    # small but valid figures are OK (0 and 0.5 s; a window of half a second)
    ok = _d_row(CpuSample("broker-0", 0.0, 0.5, 0.5, pid=3, window_payload_bytes=gb))
    assert ok["status"] == "OK" and ok["reason"] == ""
    assert (ok["usr_pct"], ok["sys_pct"], ok["cpu_s"]) == (0.0, pytest.approx(100.0), 0.5)
    # a zero-length window gives no percentage, never a division by zero
    z = _d_row(CpuSample("broker-0", 1.0, 1.0, 0.0, pid=3, window_payload_bytes=gb))
    assert z["usr_pct"] != z["usr_pct"] and z["cpu_s"] == 2.0  # NaN
    # one counter missing: NA, the note in brackets only when there is one
    na = _d_row(CpuSample("broker-0", 1.0, None, 8.0, pid=3, window_payload_bytes=gb))
    assert na["status"] == "NA" and na["reason"] == "broker-0: CPU counters unreadable"
    noted = _d_row(CpuSample("broker-0", None, 1.0, 8.0, pid=3, note="pid gone", window_payload_bytes=gb))
    assert noted["reason"] == "broker-0: CPU counters unreadable (pid gone)"
    # either counter going down, or the sampler's flag, fails the row
    for usr, sys_, flag in ((1.0, -0.01, False), (-0.01, 1.0, False), (1.0, 1.0, True)):
        bad = _d_row(CpuSample("broker-0", usr, sys_, 8.0, pid=3, regressed=flag, window_payload_bytes=gb))
        assert bad["status"] == "FAILED_CPU_REGRESSED", (usr, sys_, flag)


def test_cpu_role_boundaries_of_a_usr_plus_sys_total() -> None:
    gb = 15 * 10**8
    for total in (0.0, 0.5):
        ok = _d_row(CpuSample("broker-0", None, None, 8.0, total_s=total, window_payload_bytes=gb))
        assert ok["status"] == "OK" and ok["reason"] == "" and ok["cpu_s"] == total
    # a total with only one of usr/sys known is still the total
    half = _d_row(CpuSample("broker-0", 1.0, None, 8.0, total_s=2.5, window_payload_bytes=gb))
    assert half["status"] == "OK" and half["cpu_s"] == 2.5 and half["usr_pct"] is None
    for total, flag in ((-0.01, False), (3.0, True)):
        bad = _d_row(CpuSample("broker-0", None, None, 8.0, total_s=total, regressed=flag, window_payload_bytes=gb))
        assert bad["status"] == "FAILED_CPU_REGRESSED", (total, flag)
