"""A below the knee, checked: the SATURATED status, rates as fractions of saturation, the knee plot.

Unit tests judge injected RunResults (each of the three signals alone fires SATURATED, a light one
stays OK, the plan's bound is the one applied); the rate-fraction spelling and its derivation run
through the runner with the scriptable transport; the real-Kafka test drives one repetition far
above what the machine can take and one at a low rate.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from engine_fakes import FakeTransport, Raw, plan_toml, sweep

from kbench.engine import plan as plan_mod
from kbench.engine import rules
from kbench.engine.runner import RunOptions, execute
from kbench.engine.status import RETRY_STATUSES, Status, worst
from kbench.engine.transports.base import LatencySummary, RunResult
from kbench.experiments import a_latency
from kbench.experiments.a_plots import latency_knee
from kbench.experiments.spec import DEFAULT_SATURATION_BOUND_MS
from kbench.kafka import procstat
from kbench.model import corpus
from kbench.reporting import plots

ROOT = Path(__file__).resolve().parent.parent
CORPUS = corpus.generate("json", 20_000, seed=1)


def _cell(linger_ms: int = 5) -> plan_mod.Cell:
    plan = plan_mod.parse(
        {"name": "k", "sweep": [{"experiments": ["A"], "codec": "lz4", "linger_ms": linger_ms, "rate": 1000}]},
        source="t",
        base_dir=ROOT,
    )
    return plan_mod.expand(plan)[0]


def _ms(p50: float, p99: float | None = None) -> LatencySummary:
    """A latency summary given in milliseconds (p50, p99)."""
    p99 = p50 if p99 is None else p99
    return LatencySummary(1000, p50 * 1e3, p99 * 1e3, p99 * 1e3, p99 * 1e3, p99 * 1e3)


def _light(**kw: Any) -> RunResult:
    """A repetition comfortably below the knee: sends on time, queue ≈ linger.ms, consumer keeping up."""
    base = dict(
        messages_sent=10_000,
        messages_acked=10_000,
        payload_bytes=3_000_000,
        elapsed_s=10.0,
        target_rate=1000.0,
        achieved_rate=1000.0,
        latency_service=_ms(2.0, 4.0),
        latency_delay=_ms(0.05, 1.0),
        latency_corrected=_ms(2.1, 5.0),
        latency_e2e=_ms(4.0, 8.0),  # 1.9 ms behind the ack at p50: the consumer keeps up
        latency_phases={"queue_p50_us": 6_000.0, "compress_p50_us": 30.0, "request_p50_us": 900.0},
        consumed=10_000,
        lost=0,
        duplicated=0,
        steal_pct=0.0,
    )
    base.update(kw)
    return RunResult(**base)  # type: ignore[arg-type]


def _a(res: RunResult, bound_ms: float = DEFAULT_SATURATION_BOUND_MS, linger_ms: int = 5) -> dict[str, Any]:
    rows = rules.rows_for(_cell(linger_ms), 1, res, CORPUS, CORPUS.entropy, 1, saturation_bound_ms=bound_ms)
    (row,) = rows["A"]
    return row


# ------------------------------------------------------------------ the check on injected results


def test_a_light_repetition_stays_ok() -> None:
    row = _a(_light())
    assert row["status"] == Status.OK, row["reason"]
    assert "saturated" not in row["reason"]


def test_a_late_producer_is_saturated_with_the_figure_and_the_bound() -> None:
    row = _a(_light(latency_delay=_ms(0.1, 35.0)))
    assert row["status"] == Status.SATURATED
    assert "send delay p99 35.0 ms > 20 ms" in row["reason"]


def test_a_queue_wait_beyond_linger_is_saturated() -> None:
    # 5 ms of linger + 30 ms of waiting for the sender: 30 ms beyond linger.ms
    row = _a(_light(latency_phases={"queue_p50_us": 35_000.0, "compress_p50_us": 30.0, "request_p50_us": 900.0}))
    assert row["status"] == Status.SATURATED
    assert "queue wait p50 35.0 ms − linger.ms 5 = 30.0 ms > 20 ms" in row["reason"]


def test_the_queue_signal_subtracts_the_cells_linger() -> None:
    # the same 35 ms queue wait is the batching the plan asked for when linger.ms is 30
    queue = {"queue_p50_us": 35_000.0}
    assert _a(_light(latency_phases=queue), linger_ms=30)["status"] == Status.OK
    assert _a(_light(latency_phases=queue), linger_ms=5)["status"] == Status.SATURATED


def test_a_consumer_falling_behind_is_saturated() -> None:
    row = _a(_light(latency_e2e=_ms(60.0, 90.0)))  # 57.9 ms behind the ack at p50
    assert row["status"] == Status.SATURATED
    assert "e2e p50 − corrected p50 = 57.9 ms > 20 ms" in row["reason"]


def test_every_signal_that_fires_is_named() -> None:
    row = _a(_light(latency_delay=_ms(1, 50), latency_e2e=_ms(80), latency_phases={"queue_p50_us": 40_000.0}))
    assert row["status"] == Status.SATURATED
    assert [r.split(":")[0] for r in row["reason"].split("; ")].count("saturated") == 3


def test_signals_not_measured_do_not_fire_but_no_delay_means_unchecked() -> None:
    assert _a(_light(latency_e2e=None, latency_phases={}))["status"] == Status.OK
    row = _a(_light(latency_delay=None))
    assert row["status"] == Status.NA and "send delay not measured" in row["reason"]


def test_the_bound_is_the_one_passed_in() -> None:
    res = _light(latency_delay=_ms(0.1, 35.0))
    assert _a(res, bound_ms=50)["status"] == Status.OK
    row = _a(res, bound_ms=30)
    assert row["status"] == Status.SATURATED and "> 30 ms" in row["reason"]
    # and the light one fires under a bound below its own figures (1 ms delay p99)
    assert _a(_light(), bound_ms=0.5)["status"] == Status.SATURATED


def test_saturated_ranks_between_na_and_the_failures_and_is_not_retried() -> None:
    assert worst(["OK", "NA", "SATURATED"]) == Status.SATURATED
    assert worst(["SATURATED", "REJECTED"]) == Status.REJECTED  # a missed rate is retried as before
    assert worst(["SATURATED", "FAILED_LOSS"]) == Status.FAILED_LOSS
    assert Status.SATURATED not in RETRY_STATUSES


def test_saturated_and_rejected_together_keep_both_reasons() -> None:
    row = _a(_light(achieved_rate=900.0, latency_delay=_ms(10, 400)))
    assert row["status"] == Status.REJECTED
    assert "off the target" in row["reason"] and "send delay p99 400.0 ms" in row["reason"]


# ------------------------------------------------------------------ the plan: bound and fractions


def _plan(tmp: Path, text: str) -> plan_mod.Plan:
    p = tmp / "p.toml"
    p.write_text(text)
    return plan_mod.load(str(p))


def _text(rates: str = '"auto"', head: str = "") -> str:
    return plan_toml(
        sweep("sat", ["B"], ["none", "zstd:3"], rate="saturated"),
        sweep("a", ["A"], ["none", "zstd:3"], rate=Raw(rates)),
        extra=head,
        repetitions=2,
        duration_s=1,
        min_window_s=0,
        warmup=False,
        corpus_size=20000,
        seed=3,
    )


def test_saturation_bound_ms_defaults_and_is_read(tmp_path: Path) -> None:
    assert _plan(tmp_path, _text()).saturation_bound_ms == DEFAULT_SATURATION_BOUND_MS == 20.0
    assert _plan(tmp_path, _text(head="saturation_bound_ms = 50")).saturation_bound_ms == 50.0


@pytest.mark.parametrize(
    ("value", "says"),
    [("-1", "must be > 0"), ("0", "must be > 0"), ('"x"', "not a number"), ("inf", "finite"), ("1e9", "at most")],
)
def test_bad_saturation_bounds_are_refused(tmp_path: Path, value: str, says: str) -> None:
    with pytest.raises(plan_mod.PlanError, match=f"saturation_bound_ms: .*{says}"):
        _plan(tmp_path, _text(head=f"saturation_bound_ms = {value}"))


def test_rate_fractions_parse_to_one_spelling(tmp_path: Path) -> None:
    plan = _plan(tmp_path, _text('["auto:0.20", "auto:.6", "auto:1", "auto"]'))
    a = [c.rate for c in plan_mod.expand(plan) if c.sweep == "a"]
    assert sorted(set(a), key=str) == ["auto", "auto:0.2", "auto:0.6", "auto:1"]
    assert plan_mod.rate_fraction("auto:0.2", 0.5) == 0.2
    assert plan_mod.rate_fraction("auto", 0.5) == 0.5
    assert plan_mod.rate_fraction(1000.0, 0.5) is None and plan_mod.rate_fraction("saturated", 0.5) is None


@pytest.mark.parametrize("bad", ["auto:0", "auto:1.5", "auto:-0.2", "auto:x", "auto:nan", "auto:"])
def test_bad_rate_fractions_are_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(plan_mod.PlanError, match=r'not a fraction of saturation; write "auto:F" with F in \(0, 1\]'):
        _plan(tmp_path, _text(f'["{bad}"]'))


def test_equal_fractions_are_one_cell(tmp_path: Path) -> None:
    with pytest.raises(plan_mod.PlanError, match="auto:0.2"):
        _plan(tmp_path, _text('["auto:0.2", "auto:0.20"]'))


def test_a_fraction_needs_a_saturated_sweep(tmp_path: Path) -> None:
    text = 'name = "t"\n[[sweep]]\nexperiments = ["A"]\nrate = ["auto:0.3"]\n'
    with pytest.raises(plan_mod.PlanError, match='"auto:F"\\) derives the rate from saturated cells'):
        _plan(tmp_path, text)


def _opts(tmp: Path, plan: plan_mod.Plan, **kw: Any) -> RunOptions:
    from test_engine_rule_branches import GATE_OK

    base: dict[str, Any] = dict(
        plan=plan,
        run_dir=tmp / "run",
        gate_sample_s=0.0,
        gate_overrides=GATE_OK,
        progress_stream=io.StringIO(),
        steal_source=procstat.FixedSteal(0.0),
    )
    base.update(kw)
    return RunOptions(**base)


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_fractions_derive_from_the_slowest_saturated_cell(tmp_path: Path) -> None:
    plan = _plan(tmp_path, _text('["auto:0.2", "auto:0.6", "auto"]', head="auto_rate_fraction = 0.5"))
    t = FakeTransport()  # saturated: none 40,000, zstd:3 30,000 msgs/s
    assert execute(_opts(tmp_path, plan), t).state == "complete"
    run = tmp_path / "run"
    by_rate = {}
    for r in _csv(run / "A.csv"):
        by_rate.setdefault(r["rate"], set()).add(float(r["target_rate_msgs"]))
    assert by_rate == {"auto:0.2": {6000.0}, "auto:0.6": {18000.0}, "auto": {15000.0}}
    deriv = json.loads((run / "manifest.json").read_text())["rate_derivation"]
    assert deriv["min_cell"] == "sat-001" and deriv["rate_msgs"] == 15000.0
    assert deriv["fractions"] == {"auto:0.2": 6000.0, "auto:0.6": 18000.0}
    assert deriv["method"].count('"auto:F": F times the same minimum') == 1
    assert {req.rate for req in t.requests if req.cell.sweep == "a"} == {6000.0, 18000.0, 15000.0}


def test_the_runner_passes_the_plans_bound_and_does_not_retry_saturated(tmp_path: Path) -> None:
    # The scriptable transport's delay p99 is 30 µs and its consumer 70-80 µs behind the ack:
    # below the default bound, above a bound of 10 µs.
    quiet = _plan(tmp_path, _text("1000"))
    execute(_opts(tmp_path, quiet), FakeTransport())
    assert {r["status"] for r in _csv(tmp_path / "run" / "A.csv")} == {"OK"}

    tight = _plan(tmp_path, _text("1000", head="saturation_bound_ms = 0.01\nretries = 3"))
    tables = io.StringIO()
    execute(_opts(tmp_path, tight, run_dir=tmp_path / "tight", print_tables=tables), FakeTransport())
    rows = _csv(tmp_path / "tight" / "A.csv")
    assert {r["status"] for r in rows} == {"SATURATED"}
    assert all("send delay p99 0.030 ms > 0.01 ms" in r["reason"] for r in rows), rows[0]["reason"]
    assert {r["attempt"] for r in rows} == {"1"} and len(rows) == 4  # 2 cells x 2 repetitions, none retried
    # the end-of-run table names, for each cell short of OK repetitions, the cause and the fix
    assert "a rerun at the same rate saturates again" in tables.getvalue()
    man = json.loads((tmp_path / "tight" / "manifest.json").read_text())
    assert man["rules"]["saturation_bound_ms"] == 0.01


def test_the_report_lists_saturated_rows_in_threats_and_excluded(tmp_path: Path) -> None:
    from kbench.reporting import document as doc
    from kbench.reporting import report

    tight = _plan(tmp_path, _text("1000", head="saturation_bound_ms = 0.01"))
    execute(_opts(tmp_path, tight), FakeTransport())
    blocks, _, _, _ = report.build([tmp_path / "run"], with_plots=False)
    md = doc.to_markdown(blocks)
    assert "A: 4 rows saturated (the premise of a fixed-rate latency comparison broke" in md
    excluded = md.split("Excluded data points", 1)[1].split("Environment", 1)[0]
    assert "SATURATED" in excluded
    assert "Latency increment at the fixed rate" not in md  # no latency verdict from SATURATED rows


# ------------------------------------------------------------------ the knee plot


def _frame(statuses: list[tuple[str, float, str]]) -> pd.DataFrame:
    rows = []
    for codec, rate, status in statuses:
        rows.append(
            {
                "machine": "m",
                "codec": codec,
                "corpus": "json",
                "rate": f"auto:{rate}",
                "target_rate_msgs": rate * 100_000,
                "corrected_p50_us": 1000 * (1 + 10 * rate),
                "corrected_p99_us": 5000 * (1 + 10 * rate),
                "status": status,
            }
        )
    return pd.DataFrame(rows)


def test_the_knee_plot_draws_saturated_repetitions_hollow() -> None:
    df = _frame(
        [
            ("none", 0.1, "OK"),
            ("none", 0.5, "OK"),
            ("zstd:3", 0.1, "OK"),
            ("zstd:3", 0.5, "SATURATED"),
            ("lz4", 0.5, "REJECTED"),
        ]
    )
    fig = latency_knee(df)
    assert fig is not None
    p50, p99 = fig.axes
    hollow = [ln for ln in p99.get_lines() if ln.get_markerfacecolor() == "none"]
    assert len(hollow) == 1 and list(hollow[0].get_xdata()) == [50_000.0]
    filled = [ln for ln in p50.get_lines() if ln.get_marker() == "o" and ln.get_markerfacecolor() != "none"]
    xs = sorted(x for ln in filled for x in ln.get_xdata())
    assert xs == [10_000.0, 10_000.0, 50_000.0]  # the REJECTED row is not drawn
    assert plots.png(fig)[:8] == b"\x89PNG\r\n\x1a\n"


def test_no_knee_plot_from_one_rate_per_codec() -> None:
    assert latency_knee(_frame([("none", 0.5, "OK"), ("zstd:3", 0.5, "OK")])) is None
    assert latency_knee(None) is None


def test_the_knee_plot_is_registered_for_a() -> None:
    assert [p.name for p in a_latency.EXPERIMENT.plots] == ["a_latency.png", "a_knee.png"]
    assert a_latency.EXPERIMENT.plots[1].draw is latency_knee


# ------------------------------------------------------------------ real Kafka


def _real_plan(tmp: Path, bootstrap: str) -> plan_mod.Plan:
    # The light rate's bound is 200 ms, not 20: on a 2-CPU machine shared by several test
    # sessions a producer thread descheduled for tens of ms is the machine's noise, not this
    # rate's load.  2,000,000 msgs/s falls behind by seconds, far above either.
    return _plan(
        tmp,
        plan_toml(
            sweep("a", ["A"], ["lz4"], corpus=["json"], rate=[500, 2000000]),
            transport={"kind": "bootstrap", "bootstrap": bootstrap},
            name="knee-real",
            repetitions=1,
            warmup=False,
            duration_s=1,
            min_window_s=0,
            steady_skip_s=0.2,
            retries=0,
            corpus_size=300000,
            saturation_bound_ms=200,
        ),
    )


@pytest.mark.kafka
@pytest.mark.slow
def test_a_real_run_far_above_the_knee_is_never_ok_and_a_light_one_is(tmp_path: Path, kafka1: Any) -> None:
    from kbench.engine.transports.base import RunRequest
    from kbench.engine.transports.kafka import KafkaTransport

    plan = _real_plan(tmp_path, kafka1.bootstrap_servers)
    assert execute(_opts(tmp_path, plan), KafkaTransport(plan.transport)).state == "complete"
    rows = {float(r["target_rate_msgs"]): r for r in _csv(tmp_path / "run" / "A.csv")}
    light, heavy = rows[500.0], rows[2_000_000.0]
    assert light["status"] == "OK", light["reason"]
    assert heavy["status"] in ("SATURATED", "REJECTED"), heavy
    assert "saturated: send delay p99" in heavy["reason"]  # the check fired on the real figure
    assert float(heavy["delay_p99_us"]) > 200_000 > float(light["delay_p99_us"])

    # The same real repetition judged under bounds just below and just above its own largest signal.
    cell = next(c for c in plan_mod.expand(plan) if c.rate == 500.0)
    t = KafkaTransport(plan.transport)
    t.open()
    try:
        req = RunRequest(cell, "kbench-knee-light", CORPUS, 500.0, 1.0, 0.2, steal_source=procstat.FixedSteal(0.0))
        res = t.run(req)
    finally:
        t.close()
    assert res.latency_delay is not None and res.latency_corrected is not None
    signals = [res.latency_delay.p99_us]
    if res.latency_e2e is not None:
        signals.append(res.latency_e2e.p50_us - res.latency_corrected.p50_us)
    q = res.latency_phases.get("queue_p50_us")
    if q is not None:
        signals.append(q - cell.linger_ms * 1000)
    top_ms = max(signals) / 1000
    assert top_ms > 0
    judge = lambda bound: rules.rows_for(cell, 1, res, CORPUS, CORPUS.entropy, 1, saturation_bound_ms=bound)["A"][0]  # noqa: E731
    below, above = judge(top_ms * 0.9), judge(top_ms * 1.1)
    assert below["status"] == "SATURATED" and "saturated:" in below["reason"]
    assert above["status"] == "OK", above["reason"]


def test_a_resume_derives_every_fraction_from_the_first_derivation(tmp_path: Path) -> None:
    plan = _plan(tmp_path, _text('["auto:0.2", "auto:0.6"]'))
    # 4 saturated repetitions, then the first fixed-rate one (its fraction derived) is interrupted
    with pytest.raises(KeyboardInterrupt):
        execute(_opts(tmp_path, plan), FakeTransport(interrupt_after=5))
    run = tmp_path / "run"
    first = json.loads((run / "manifest.json").read_text())["rate_derivation"]
    assert first["rate_msgs"] == 15000.0 and len(first.get("fractions", {})) == 1
    # B's rows now say the cluster was half as fast: a fresh derivation would give other rates
    rows = _csv(run / "B.csv")
    for r in rows:
        r["achieved_rate_msgs"] = str(float(r["achieved_rate_msgs"]) / 2)
    with (run / "B.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    assert execute(_opts(tmp_path, plan, resume=True), FakeTransport()).state == "complete"
    targets = {(r["rate"], float(r["target_rate_msgs"])) for r in _csv(run / "A.csv")}
    assert targets == {("auto:0.2", 6000.0), ("auto:0.6", 18000.0)}


# ------------------------------------------------------------------ rate = "auto" from the pipeline's knee


def _pipeline(tmp: Path, rates: str, head: str = "") -> plan_mod.Plan:
    return _plan(tmp, _text(rates, head='auto_rate_basis = "pipeline"\nknee_probe_s = 0.5\n' + head))


def test_the_pipeline_basis_probes_each_pipeline_and_derives_from_the_lowest_knee(tmp_path: Path) -> None:
    # producer-only saturation: none 40,000, zstd:3 30,000 msgs/s; with the consumer running the
    # pipeline falls behind above 12,000 (none) and 9,500 (zstd:3)
    plan = _pipeline(tmp_path, '["auto", "auto:0.2", 20000]')
    t = FakeTransport(knee={"none": 12_000.0, "zstd:3": 9_500.0})
    assert execute(_opts(tmp_path, plan), t).state == "complete"
    run = tmp_path / "run"
    deriv = json.loads((run / "manifest.json").read_text())["rate_derivation"]
    assert deriv["basis"] == "pipeline" and deriv["producer_saturation_msgs"] == 30000.0
    # probes at 1, 0.7, 0.5, 0.35 x 30,000: none passes at 10,500; zstd:3's probes start at that
    # lowest knee so far (above it they could not lower the minimum) and pass at 7,500
    assert sorted(deriv["knees_msgs"].values()) == [7500.0, 10500.0]
    assert deriv["knee_msgs"] == 7500.0 and deriv["rate_msgs"] == 3750.0  # auto_rate_fraction 0.5
    assert deriv["fractions"] == {"auto:0.2": 1500.0}
    assert "fallback" not in deriv
    assert [(p["rate_msgs"], p["passed"]) for p in deriv["probes"] if p["codec"] == "zstd:3"] == [
        (10500.0, False),
        (7500.0, True),
    ]
    # each pipeline's latency floor: its corrected p99 at 0.05 x saturation, two probes that agree
    floors = deriv["floor_probes"]
    assert {f["rate_msgs"] for f in floors.values()} == {1500.0}
    assert all(f["settled"] and len(f["p99s_us"]) == 2 for f in floors.values())
    assert sorted(deriv["floors_us"].values()) == [360.0, 390.0]
    assert all("send delay p99 30.0 ms > 20 ms" in p["reason"] for p in deriv["probes"] if not p["passed"])
    # the probes ran as short repetitions on topics of their own; they left no CSV row
    probes = [req for req in t.requests if req.topic.rsplit("-", 1)[-1].startswith("k")]
    assert len(probes) == 4 + 2 + 4 and {req.duration_s for req in probes} == {0.5}  # knee (none, zstd:3), floors
    assert all(req.cell.sweep == "a" and req.rate is not None for req in probes)
    rows = _csv(run / "A.csv")
    assert {float(r["target_rate_msgs"]) for r in rows} == {3750.0, 1500.0, 20000.0}
    # below the knee every repetition is OK; above it (20,000 msgs/s) every one is flagged, never OK
    for r in rows:
        if float(r["target_rate_msgs"]) < 7500:
            assert r["status"] == "OK", r["reason"]
        else:
            assert r["status"] == "SATURATED" and "send delay p99" in r["reason"], r


def test_the_producer_basis_stays_the_default(tmp_path: Path) -> None:
    plan = _plan(tmp_path, _text('["auto"]'))
    assert plan.auto_rate_basis == "producer"
    t = FakeTransport(knee={"none": 12_000.0, "zstd:3": 9_500.0})
    execute(_opts(tmp_path, plan), t)
    deriv = json.loads((tmp_path / "run" / "manifest.json").read_text())["rate_derivation"]
    assert deriv["basis"] == "producer" and deriv["rate_msgs"] == 15000.0 and "probes" not in deriv
    # at half the producer's saturation this pipeline is past its knee: A says so
    assert {r["status"] for r in _csv(tmp_path / "run" / "A.csv")} == {"SATURATED"}


def test_no_probe_below_the_knee_falls_back_visibly(tmp_path: Path) -> None:
    plan = _pipeline(tmp_path, '["auto"]')
    tables = io.StringIO()
    t = FakeTransport(knee={"none": 100.0, "zstd:3": 100.0})
    execute(_opts(tmp_path, plan, print_tables=tables), t)
    deriv = json.loads((tmp_path / "run" / "manifest.json").read_text())["rate_derivation"]
    assert deriv["knee_msgs"] == 1500.0 and deriv["rate_msgs"] == 750.0  # 0.05 x 30,000, then x 0.5
    assert "no probe rate passed the saturation check" in deriv["fallback"]
    assert 'rate = "auto" fell back: no probe rate passed' in tables.getvalue()
    assert {r["status"] for r in _csv(tmp_path / "run" / "A.csv")} == {"SATURATED"}


def test_a_resume_does_not_probe_again(tmp_path: Path) -> None:
    plan = _pipeline(tmp_path, '["auto"]')
    knee = {"none": 12_000.0, "zstd:3": 9_500.0}
    with pytest.raises(KeyboardInterrupt):
        execute(_opts(tmp_path, plan), FakeTransport(knee=knee, interrupt_after=15))  # 4 B, 9 probes, 1 A
    first = json.loads((tmp_path / "run" / "manifest.json").read_text())["rate_derivation"]
    assert first["rate_msgs"] == 3750.0
    again = FakeTransport(knee=knee)
    assert execute(_opts(tmp_path, plan, resume=True), again).state == "complete"
    assert not [req for req in again.requests if req.topic.rsplit("-", 1)[-1].startswith("k")]
    assert {float(r["target_rate_msgs"]) for r in _csv(tmp_path / "run" / "A.csv")} == {3750.0}


@pytest.mark.parametrize(("text", "says"), [('"consumer"', "not one of producer, pipeline"), ("1", "not one of")])
def test_bad_auto_rate_bases_are_refused(tmp_path: Path, text: str, says: str) -> None:
    with pytest.raises(plan_mod.PlanError, match=f"auto_rate_basis: .*{says}"):
        _plan(tmp_path, _text(head=f"auto_rate_basis = {text}"))
