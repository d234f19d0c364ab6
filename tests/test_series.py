"""The time series: interval rows, HdrHistogram interval logs, steady-state breaks and drift.

Fast tests on synthetic driver results (the shape of docs/drivers.md section 4.4) and one short
real run against the session's Kafka cluster (``kafka1``): its ``.hlog`` read back with the
``hdrhistogram`` package gives kbench's percentiles within one bucket, and ``series.csv`` has one
row per second per repetition and role.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from engine_fakes import PLAN_TEXT, FakeTransport, engine_plan, write_plan
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader
from kbenv import KBENCH_PATH

from kbench import _native
from kbench.commands.run import EXIT_SHORT
from kbench.engine import plan as plan_mod
from kbench.engine import series, store
from kbench.engine.runner import RunOptions, execute
from kbench.engine.transports.base import RunRequest, RunResult
from kbench.engine.transports.persecond import SecondSample
from kbench.model import hlog
from kbench.model.stats import histogram_us
from kbench.reporting import provenance, report

ROOT = Path(__file__).resolve().parent.parent
NS = 1_000_000_000


def _bucket_width(v: int) -> int:
    """The width of the histogram bucket holding v (docs/drivers.md section 5.1)."""
    return 1 << max(0, v.bit_length() - 11)


def _hdr_value(h: HdrHistogram, p: float) -> int:
    """HdrHistogram's value at the sample kbench's percentile rule picks (docs/drivers.md 5.1:
    rank = max(1, ceil(p / 100 x total)) in double arithmetic); HdrHistogram's reader rounds the
    rank to nearest instead, which in a sparse tail is another sample, not another bucket layout."""
    n = h.get_total_count()
    rank = max(1, math.ceil(p / 100.0 * n))
    return int(h.get_value_at_percentile(100.0 * (rank - 0.25) / n))


def _hist(values: list[int]) -> Any:
    h = _native.Histogram()
    for v in values:
        h.record(v)
    return h


def _hist_obj(values: list[int]) -> dict[str, Any]:
    h = _hist(values)
    out = histogram_us(h)
    assert out is not None
    out["encoded"] = base64.b64encode(h.encode()).decode()
    return out


def test_hlog_reads_back_with_hdrhistogram(tmp_path: Path) -> None:
    values = [int(1000 * 1.003**i) for i in range(4000)] + [5_000_000_000, 7]
    h = _hist(values)
    sparse = hlog.parse_kbh1(h.encode())
    text = hlog.log_text([hlog.LogLine("producer-corrected", 0.0, 1.0, sparse)], 1_700_000_000.0)
    path = tmp_path / "x.hlog"
    path.write_text(text)
    got = HistogramLogReader(str(path), HdrHistogram(hlog.LOWEST, hlog.HIGHEST, hlog.SIGNIFICANT_FIGURES))
    x = got.get_next_interval_histogram()
    assert x is not None and x.get_tag() == "producer-corrected"
    assert x.get_total_count() == h.count == len(values)
    for p in (50.0, 90.0, 99.0, 99.9):
        ours = h.percentile(p)
        assert abs(_hdr_value(x, p) - ours) <= _bucket_width(ours), p
    assert got.get_next_interval_histogram() is None


def test_kbh1_parser_refuses_bad_input() -> None:
    good = _hist([1, 2, 3]).encode()
    for bad in (b"XXXX" + good[4:], good[:-1], good[:-12] + b"\xff" * 12):
        with pytest.raises(ValueError):
            hlog.parse_kbh1(bad)


def _result(rates: list[int], p99_ns: list[int], t0: int = 100 * NS + NS // 2) -> dict[str, Any]:
    """A producer RESULT whose intervals carry ``rates[k]`` messages in second k after the first
    partial one, each with latencies whose p99 is about ``p99_ns[k]``."""
    ivs = []
    start = t0 - 1_000_000
    edges = [start, (start // NS + 1) * NS]
    for _ in rates:
        edges.append(edges[-1] + NS)
    last_send = edges[-1] + NS // 5
    edges.append(last_send + NS // 10)
    counts = [50, *rates, 10]
    p99s = [p99_ns[0], *p99_ns, p99_ns[-1]]
    for k, (s, e) in enumerate(zip(edges, edges[1:])):
        lat = [p99s[k] // 4] * 98 + [p99s[k]] * 2
        ivs.append(
            {
                "start_mono_ns": s,
                "end_mono_ns": e,
                "start_wall_ns": s + 1_700_000_000 * NS,
                "count": counts[k],
                "acked": counts[k],
                "failed": 0,
                "bytes": counts[k] * 100,
                "latency": _hist_obj(lat),
            }
        )
    return {
        "t0_ns": t0,
        "first_send_ns": t0,
        "last_send_ns": last_send,
        "intervals": ivs,
        "intervals_latency": "corrected",
    }


def _samples(res: dict[str, Any], roles: tuple[str, ...] = ("producer", "broker-1")) -> list[SecondSample]:
    """Whole-second CPU samples over the result's span (0.25 s CPU per role per second)."""
    ivs = res["intervals"]
    first, last = ivs[0]["start_mono_ns"], ivs[-1]["end_mono_ns"]
    ts = [first] + [t for t in range((first // NS + 1) * NS, last, NS)] + [last]
    return [
        SecondSample(
            t,
            {r: (0.2 * (t - first) / NS, 0.05 * (t - first) / NS) for r in roles},
            {"producer": (1000 * (t - first) // NS, 10 * (t - first) // NS)},
        )
        for t in ts
    ]


def test_rows_one_per_second_per_role_with_cpu() -> None:
    res = _result([1000] * 6, [2_000_000] * 6)
    rows = series.assemble_rows(res, None, _samples(res), steady_skip_s=0.0)
    by_role: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_role.setdefault(r["role"], []).append(r)
    assert set(by_role) == {"producer", "broker-1"}
    for role, rs in by_role.items():
        secs = [r["second"] for r in rs]
        assert secs == list(range(secs[0], secs[0] + len(secs))), role  # one per second, no gap
    prod = by_role["producer"]
    assert len(prod) == 8 and sum(r["messages"] for r in prod) == 50 + 6000 + 10
    assert [r["in_window"] for r in prod] == [0, 1, 1, 1, 1, 1, 1, 0]
    full = prod[1]
    assert full["rate"] == pytest.approx(1000.0) and full["latency"] == "corrected"
    assert full["p99_us"] == pytest.approx(2000.0, rel=2e-3)
    assert full["cpu_pct"] == pytest.approx(25.0) and full["source"] == "driver"
    assert (full["nic_tx_bytes"], full["nic_rx_bytes"]) == (1000, 10)  # the testbed host's NIC over the second
    assert by_role["broker-1"][1]["nic_tx_bytes"] is None
    assert by_role["broker-1"][1]["source"] == "runner /proc" and by_role["broker-1"][1]["rate"] is None


def test_driver_without_intervals_says_so() -> None:
    res = _result([1000] * 3, [2_000_000] * 3)
    given = dict(res, intervals=None)
    rows = series.assemble_rows(given, None, _samples(res), steady_skip_s=0.0)
    prod = [r for r in rows if r["role"] == "producer"]
    assert prod and all(r["source"] == series.NO_INTERVALS and r["rate"] is None for r in prod)
    assert series.hlog_of(given, None) == ""


def test_breaks_mark_stall_rate_and_p99() -> None:
    rates = [1000, 1000, 0, 1000, 700, 1000, 1000, 1000]
    p99 = [2_000_000] * 5 + [9_000_000] + [2_000_000] * 2
    res = _result(rates, p99)
    rows = series.mark_breaks(series.assemble_rows(res, None, [], 0.0), series.Bounds(10.0, 50.0))
    prod = [r for r in rows if r["role"] == "producer" and r["in_window"] == 1]
    got = [r["breaks"] for r in prod]
    assert got[2] == "stall: no messages"
    assert got[4] == "rate -30 % of median"
    assert got[5].startswith("p99 ×4.5 median")
    assert [g for i, g in enumerate(got) if i not in (2, 4, 5)] == [""] * 5
    assert all(r["breaks"] == "" for r in rows if r["in_window"] == 0)


def test_drift_flags_a_ramp_and_not_a_flat_run() -> None:
    bounds = series.Bounds(10.0, 50.0)
    flat = series.mark_breaks(series.assemble_rows(_result([1000] * 8, [2_000_000] * 8), None, [], 0.0), bounds)
    ramp = series.mark_breaks(
        series.assemble_rows(_result([1000 + 60 * k for k in range(8)], [2_000_000] * 8), None, [], 0.0), bounds
    )
    slow = series.mark_breaks(
        series.assemble_rows(_result([1000] * 8, [2_000_000 * (1 + k // 4) for k in range(8)]), None, [], 0.0), bounds
    )
    d_flat, d_ramp, d_slow = (series.drift(r, bounds) for r in (flat, ramp, slow))
    assert not d_flat.flagged and d_flat.describe() == "" and d_flat.rate_pct == 0.0
    # halves 1000..1180 and 1240..1420: medians 1090 and 1330, whole-window median 1210
    assert d_ramp.flagged and d_ramp.rate_pct == pytest.approx(100 * (1330 - 1090) / 1210)
    assert d_ramp.describe().startswith("DRIFT: rate drifted +") and "(bound ±10 %)" in d_ramp.describe()
    assert d_slow.flagged and "p99 drifted +" in d_slow.describe() and "rate" not in d_slow.describe()
    loose = series.Bounds(30.0, 150.0)
    assert not series.drift(ramp, loose).flagged and not series.drift(slow, loose).flagged


def test_plan_drift_keys(tmp_path: Path) -> None:
    base = PLAN_TEXT
    p = plan_mod.load(str(write_plan(tmp_path, base)))
    assert (p.drift_rate_pct, p.drift_p99_pct) == (series.DEFAULT_DRIFT_RATE_PCT, series.DEFAULT_DRIFT_P99_PCT)
    p = plan_mod.load(str(write_plan(tmp_path, engine_plan(drift_rate_pct=5, drift_p99_pct=25))))
    assert (p.drift_rate_pct, p.drift_p99_pct) == (5.0, 25.0)
    for bad, value, word in (("drift_rate_pct", 0, "must be > 0"), ("drift_p99_pct", 5000, "at most 1000")):
        with pytest.raises(plan_mod.PlanError, match=word):
            plan_mod.load(str(write_plan(tmp_path, engine_plan(**{bad: value}))))


@dataclasses.dataclass
class SeriesTransport(FakeTransport):
    """The fake transport, with a time series per repetition: repetition 2 of every cell ramps."""

    def run(self, req: RunRequest) -> RunResult:
        res = super().run(req)
        rates = [1000 + 60 * k for k in range(8)] if req.topic.endswith("-r2") else [1000] * 8
        pres = _result(rates, [2_000_000] * 8)
        rows = series.assemble_rows(pres, None, _samples(pres), req.steady_skip_s)
        return dataclasses.replace(res, series=tuple(rows), hlog=series.hlog_of(pres, None))


PLAN = """
name = "series"
repetitions = 3
warmup = false
duration_s = 1
min_window_s = 0
corpus_size = 20000
seed = 7
drift_rate_pct = 10

[transport]
kind = "dry"

[[sweep]]
name = "fixed"
experiments = ["A"]
codec = ["none"]
rate = 1000
"""


def test_run_writes_series_flags_drift_and_reports_it(tmp_path: Path) -> None:
    from test_engine_runner import GATE_OK

    plan = plan_mod.load(str(write_plan(tmp_path, PLAN)))
    run = tmp_path / "run"
    execute(
        RunOptions(plan=plan, run_dir=run, gate_sample_s=0.0, gate_overrides=GATE_OK, progress_stream=io.StringIO()),
        SeriesTransport(),
    )
    rows = store.read_rows(run / store.SERIES)
    assert list(rows[0]) == list(series.COLUMNS)
    prod = [r for r in rows if r["role"] == "producer"]
    assert sorted({r["rep"] for r in prod}) == ["1", "2", "3"] and len(prod) == 3 * 10
    man = json.loads((run / "manifest.json").read_text())
    assert list(man["drift"]) == ["fixed-000 r2"] and man["drift"]["fixed-000 r2"].startswith("DRIFT: rate drifted +")
    assert man["rules"]["drift_rate_pct"] == 10.0
    assert "fixed-000 rep 2: DRIFT" in (run / "run.log").read_text()
    assert (run / "histograms" / "fixed-000-r2.hlog").read_text().count("Tag=producer-corrected,") == 10
    out = tmp_path / "report"
    files = report.write([run], out)
    md = files.markdown.read_text()
    section = md.split("## Over time")[1].split("\n## ")[0]
    assert "fixed-000 r2: " + man["drift"]["fixed-000 r2"] in section
    assert "series-fixed-000.png" in section and (out / "plots" / "series-fixed-000.png").stat().st_size > 1000
    # every number of the section is traceable to the run's files (kbench report --verify)
    assert provenance.verify(json.loads(files.provenance.read_text()), [run], md) == []


def test_reconcile_drops_series_rows_of_an_unfinished_repetition(tmp_path: Path) -> None:
    from test_engine_runner import GATE_OK

    plan = plan_mod.load(str(write_plan(tmp_path, PLAN)))
    run = tmp_path / "run"
    execute(
        RunOptions(plan=plan, run_dir=run, gate_sample_s=0.0, gate_overrides=GATE_OK, progress_stream=io.StringIO()),
        SeriesTransport(),
    )
    before = store.read_rows(run / store.SERIES)
    # a crash after the last repetition's series rows and before its A row: its A row and journal entry gone
    last = store.read_rows(run / "A.csv")[-1]["rep"]
    lines = (run / "A.csv").read_text().splitlines(keepends=True)
    (run / "A.csv").write_text("".join(lines[:-1]))
    (run / store.JOURNAL).write_text("".join((run / store.JOURNAL).read_text().splitlines(keepends=True)[:-1]))
    r = store.reconcile(run)
    after = store.read_rows(run / store.SERIES)
    n_last = sum(1 for x in before if x["rep"] == last)
    assert n_last == 20 and r.dropped.get(store.SERIES) == n_last  # 10 seconds x (producer, broker-1)
    assert {x["rep"] for x in after} == {"1", "2", "3"} - {last} and len(after) == len(before) - n_last


# ---------------------------------------------------------------------------------- real Kafka

REAL = """
name = "series-kafka"
repetitions = 2
warmup = false
duration_s = 3
min_window_s = 0
steady_skip_s = 0.5
corpus_size = 200000
seed = 3

[[sweep]]
name = "fixed"
experiments = ["A"]
codec = ["zstd:3"]
rate = 2000
"""


def _real_run(tmp_path: Path, kafka1: Any, plan_text: str) -> Path:
    plan = write_plan(tmp_path, plan_text)
    run = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=KBENCH_PATH, KBENCH_INJECT_STEAL_PCT="0")
    cmd = [sys.executable, "-m", "kbench", "run", str(plan), "-o", str(run), "--bootstrap", kafka1.bootstrap_servers]
    cmd += ["--broker-pid", str(kafka1.pids[0]), "--gate-sample-s", "0.1", "--force"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    # a loaded host may leave the cell short (A SATURATED, e.g. the JVM's start-up backlog): exit 4,
    # said so; its repetitions still carry their series, which is what these tests check
    assert r.returncode in (0, EXIT_SHORT), r.stderr[-3000:]
    assert (r.returncode == EXIT_SHORT) <= ("short of OK repetitions" in r.stderr), r.stderr[-3000:]
    return run


@pytest.mark.kafka
@pytest.mark.parametrize("client", ["java", pytest.param("kafka-go", marks=pytest.mark.go)])
def test_real_run_series_other_drivers(tmp_path: Path, kafka1: Any, client: str) -> None:
    """The Java and Go drivers' intervals (docs/drivers.md section 4.4): the same rows and log."""
    plan = REAL.replace("repetitions = 2", "repetitions = 1").replace("duration_s = 3", "duration_s = 2")
    run = _real_run(tmp_path, kafka1, plan + f'linger_ms = 5\nclient = ["{client}"]\n')
    rows = store.read_rows(run / store.SERIES)
    # a cold client's first attempt may be retried (WARMING, a steal-INVALID): the series keeps every
    # attempt's seconds, each under its attempt number; the repetition's figures are its last attempt's
    last = max(int(x["attempt"]) for x in store.read_rows(run / "A.csv"))
    rows = [x for x in rows if int(x["attempt"]) == last]
    for role in ("producer", "consumer"):
        mine = [x for x in rows if x["role"] == role and x["source"] == "driver"]
        assert sum(int(x["messages"]) for x in mine) == 4000, role
        assert {x["latency"] for x in mine} == {"corrected" if role == "producer" else "e2e"}
        secs = [int(x["second"]) for x in mine]
        assert secs == list(range(secs[0], secs[0] + len(secs))), (role, secs)
    text = (run / "histograms" / "fixed-000-r1.hlog").read_text()
    assert "Tag=producer-corrected," in text and "Tag=consumer-e2e," in text


@pytest.mark.kafka
def test_real_run_series_and_hlog(tmp_path: Path, kafka1: Any) -> None:
    run = _real_run(tmp_path, kafka1, REAL)
    a = {x["rep"]: x for x in store.read_rows(run / "A.csv")}
    rows = store.read_rows(run / store.SERIES)
    for rep in ("1", "2"):
        mine = [x for x in rows if x["rep"] == rep]
        roles = {x["role"] for x in mine}
        assert {"producer", "consumer", "broker-1"} <= roles, roles
        for role in roles:
            secs = sorted(int(x["second"]) for x in mine if x["role"] == role)
            assert secs == list(range(secs[0], secs[0] + len(secs))), (rep, role, secs)  # one row per second
        prod = [x for x in mine if x["role"] == "producer" and x["source"] == "driver"]
        # the producer's intervals cover its loop: 3 s at 2000 msgs/s, cut at whole seconds
        assert 4 <= len(prod) <= 5, prod
        assert sum(int(x["messages"]) for x in prod) == int(a[rep]["messages"]) == 6000
        cons = [x for x in mine if x["role"] == "consumer" and x["source"] == "driver"]
        assert sum(int(x["messages"]) for x in cons) == 6000
        assert all(float(x["cpu_pct"]) >= 0 for x in mine if x["role"] == "broker-1" and x["cpu_pct"] != "NA")
        assert [x for x in prod if x["in_window"] == "1"], prod
        # the interval log, read back with HdrHistogram's Python reader
        hist_json = json.loads((run / "histograms" / f"fixed-000-r{rep}.json").read_text())["histograms"]
        ours = _native.Histogram.decode(base64.b64decode(hist_json["corrected"]))
        merged = HdrHistogram(hlog.LOWEST, hlog.HIGHEST, hlog.SIGNIFICANT_FIGURES)
        ref = HdrHistogram(hlog.LOWEST, hlog.HIGHEST, hlog.SIGNIFICANT_FIGURES)
        reader = HistogramLogReader(str(run / "histograms" / f"fixed-000-r{rep}.hlog"), ref)
        tags: set[str] = set()
        per_interval: list[tuple[int, int]] = []
        while (h := reader.get_next_interval_histogram()) is not None:
            tags.add(h.get_tag())
            if h.get_tag() == "producer-corrected":
                merged.add(h)
                if h.get_total_count() > 0:  # an interval without an acknowledgement has no p99 (as rows_iv below)
                    per_interval.append((h.get_total_count(), _hdr_value(h, 99.0)))
        assert tags == {"producer-corrected", "consumer-e2e"}
        # the interval log keeps every message; the repetition's histogram only the latency
        # window's (due from steady_skip_s = 0.5 s on: sequence numbers 1000 and up)
        assert merged.get_total_count() == 6000 and ours.count == 6000 - 1000
        # each interval as HdrHistogram reads it is the series row kbench wrote for that second
        rows_iv = [(int(x["lat_count"]), round(float(x["p99_us"]) * 1000)) for x in prod if int(x["lat_count"]) > 0]
        assert [c for c, _ in per_interval] == [c for c, _ in rows_iv], (per_interval, rows_iv)
        for (_, hv), (_, kv) in zip(per_interval, rows_iv):
            assert abs(hv - kv) <= _bucket_width(kv), (rep, hv, kv)
    files = report.write([run], tmp_path / "report")
    md = files.markdown.read_text()
    assert "## Over time" in md and (tmp_path / "report" / "plots" / "series-fixed-000.png").exists()
    assert provenance.verify(json.loads(files.provenance.read_text()), [run], md) == []


@pytest.mark.kafka
def test_driver_intervals_on_the_session_cluster(tmp_path: Path, kafka1: Any) -> None:
    """The librdkafka driver's RESULT intervals (docs/drivers.md section 4.4) on the session
    cluster: the producer's at a fixed rate, then a consumer group member's (group mode, from the
    beginning) draining the same records; their hlog reads back interval by interval."""
    from kbench.kafka import admin, worker
    from kbench.model.corpus import generate, write_lenprefixed

    topic = "series-driver-intervals"
    props = kafka1.client_props()
    admin.create_topic(props, topic, partitions=2, replication_factor=1)
    corpus_file = write_lenprefixed(generate("json", 50_000, seed=1).records, tmp_path / "c.bin")
    job = {
        "topic": topic,
        "props": dict(props),
        "run_id": 5,
        "mode": "fixed-rate",
        "rate": 2000.0,
        "count": 3000,
        "corpus_file": str(corpus_file),
        "interval_s": 1.0,
    }
    out = worker.producer(job)
    ivs = out["intervals"]
    assert out["intervals_latency"] == "corrected" and out["sent"] == out["delivered"] == 3000
    assert sum(iv["count"] for iv in ivs) == 3000 and sum(iv["acked"] for iv in ivs) == 3000
    assert sum(iv["latency"]["count"] for iv in ivs) == 3000 == out["corrected"]["count"]
    assert all(b["start_mono_ns"] == a["end_mono_ns"] and b["start_mono_ns"] % NS == 0 for a, b in zip(ivs, ivs[1:]))
    assert ivs[0]["start_mono_ns"] == out["t0_ns"] - 1_000_000 and 2 <= len(ivs) <= 3
    text = series.hlog_of(out, None)
    path = tmp_path / "p.hlog"
    path.write_text(text)
    reader = HistogramLogReader(str(path), HdrHistogram(hlog.LOWEST, hlog.HIGHEST, hlog.SIGNIFICANT_FIGURES))
    counts = []
    while (h := reader.get_next_interval_histogram()) is not None:
        counts.append(h.get_total_count())
    assert counts == [iv["latency"]["count"] for iv in ivs]

    cjob = {
        "topic": topic,
        "props": {**props, "group.id": "series-driver-intervals"},
        "run_id": 5,
        "expected": 0,
        "timeout": 60.0,
        "group": True,
        "from_beginning": True,
        "interval_s": 1.0,
    }
    got = worker.consumer(cjob)
    civs = got["intervals"]
    assert got["records"] == got["unique"] == 3000 and not got["timed_out"]
    assert sum(iv["count"] for iv in civs) == 3000 and sum(iv["bytes"] for iv in civs) == got["bytes"]
    assert sum((iv["latency"] or {}).get("count", 0) for iv in civs) == got["sampled"] == got["e2e"]["count"]
    assert all(b["start_mono_ns"] == a["end_mono_ns"] and b["start_mono_ns"] % NS == 0 for a, b in zip(civs, civs[1:]))
    off = dict(job, interval_s=0)
    assert worker.producer(off)["intervals"] is None


def test_group_members_intervals_merge_per_second() -> None:
    """Two group members' series as the group's: the intervals of one second summed, their
    histograms merged exactly, a truncated member marks the merged series truncated."""
    from kbench.kafka import merge
    from kbench.kafka.drivers import Histogram

    def iv(start: int, end: int, n: int, lat_ns: int) -> dict[str, Any]:
        h = Histogram()
        for _ in range(n):
            h.record(lat_ns)
        return {
            "start_mono_ns": start,
            "end_mono_ns": end,
            "start_wall_ns": start + 7,
            "count": n,
            "acked": 0,
            "failed": 0,
            "bytes": 10 * n,
            "latency": {**(histogram_us(h) or {}), "encoded": base64.b64encode(h.encode()).decode()} if n else None,
        }

    a = [iv(5 * NS + 300, 6 * NS, 3, 1_000_000), iv(6 * NS, 6 * NS + 500, 2, 2_000_000)]
    b = [iv(5 * NS + 100, 6 * NS, 4, 3_000_000), iv(6 * NS, 7 * NS, 0, 0), iv(7 * NS, 7 * NS + 9, 1, 5_000_000)]
    m = merge.merge_intervals([a, b])
    assert [(x["start_mono_ns"], x["end_mono_ns"], x["count"], x["bytes"]) for x in m] == [
        (5 * NS + 100, 6 * NS, 7, 70),
        (6 * NS, 7 * NS, 2, 20),
        (7 * NS, 7 * NS + 9, 1, 10),
    ]
    assert m[0]["start_wall_ns"] == 5 * NS + 107 and m[0]["latency"]["count"] == 7
    assert m[0]["latency"]["max_us"] == pytest.approx(3000, rel=0.01)
    assert merge.merge_intervals([a, [{"truncated": True}]])[-1] == {"truncated": True}
    cons = merge.merge_consumers([{"records": 5, "intervals": a}, {"records": 5, "intervals": b}])
    assert [x["count"] for x in cons["intervals"]] == [7, 2, 1]
