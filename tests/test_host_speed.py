"""The host-speed probe beside every repetition (kbench.engine.host_speed): the live probe
against the kernel's own CPU accounting, the rule with injected speeds through the runner."""

from __future__ import annotations

import io
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from engine_fakes import FakeTransport, plan_toml, sweep, write_plan
from test_engine_runner import opts

from kbench.engine import host_speed as hs
from kbench.engine import plan as plan_mod
from kbench.engine import rules, store
from kbench.engine.premises import PremiseError
from kbench.engine.premises import parse as parse_premises
from kbench.engine.runner import execute

TICK = os.sysconf("SC_CLK_TCK")


def thread_ticks() -> int:
    """utime + stime of the calling thread, in clock ticks, as the kernel accounts them."""
    f = Path("/proc/thread-self/stat").read_text().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])  # fields 14 and 15 of proc(5), counted after the comm


def test_the_tcp_part_divides_its_bytes_by_the_cpu_the_kernel_accounts_to_its_thread() -> None:
    src = memoryview(os.urandom(64 << 20))
    dst = memoryview(bytearray(64 << 20))
    total = 3 << 30  # about 0.7 s of CPU: 10 ms ticks are within 2 % of it
    t0 = thread_ticks()
    gbps = hs._tcp(total, src, dst)
    cpu = (thread_ticks() - t0) / TICK
    assert cpu > 0.2, cpu
    kernel = total / cpu / 1e9
    assert abs(gbps / kernel - 1) < 0.08, (gbps, kernel)
    assert dst[: 1 << 20] == src[: 1 << 20]  # what was sent arrived, where the probe says


def test_the_lz4_part_divides_its_bytes_by_the_cpu_the_kernel_accounts_to_its_thread() -> None:
    from kbench.model.microbench import decompress_loop

    data = hs._codec_blocks()
    loop, size = decompress_loop(data, 64 << 10, "lz4")
    assert size == len(data) == 4 << 20
    t0 = thread_ticks()
    gbps = hs._codec(loop, size, 1200)  # about 0.6 s of CPU
    cpu = (thread_ticks() - t0) / TICK
    assert cpu > 0.2, cpu
    assert abs(gbps / (1200 * size / cpu / 1e9) - 1) < 0.08, (gbps, cpu)


SMALL = {"tcp_bytes": 512 << 20, "codec_loops": 50}


@pytest.mark.slow
def test_a_process_spinning_on_the_probes_cpu_slows_its_wall_clock_not_its_figures() -> None:
    """The probe's figures are per CPU-second of its own thread: a process time-sliced with it on
    one CPU halves its share of the wall clock, not the speed of the machine it measures."""
    cpu = min(os.sched_getaffinity(0))
    mask = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})  # this thread, and the spinner below, on one CPU
    try:
        quiet = [hs.measure(**SMALL) for _ in range(3)]
        spin = subprocess.Popen(
            [sys.executable, "-c", "import sys\nsys.stdout.write('go\\n'); sys.stdout.flush()\nwhile True: pass"],
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),
        )
        try:
            assert spin.stdout is not None and spin.stdout.readline() == "go\n"  # spinning from here on
            shared = hs.measure(**SMALL)
        finally:
            spin.kill()
            spin.wait()
    finally:
        os.sched_setaffinity(0, mask)
    assert all(r.tcp_gbps > 0.1 and r.codec_gbps > 0.1 for r in quiet)
    assert shared.wall_s > 1.4 * statistics.median(r.wall_s for r in quiet), (shared, quiet)  # it did share
    base = hs.Baseline(tuple(quiet))
    assert all(abs(d) < 20 for d in hs.drift_pct(shared, base).values()), hs.drift_pct(shared, base)


def test_drift_is_each_parts_distance_from_the_calibration_median_and_an_attempt_takes_its_two_probes_mean() -> None:
    base = hs.Baseline((hs.Reading(4.0, 8.0), hs.Reading(4.4, 8.8), hs.Reading(3.6, 7.2)))
    assert base.median("tcp") == 4.0 and base.median("codec") == 8.0
    assert base.spread_pct == pytest.approx(10.0)
    assert hs.drift_pct(hs.Reading(5.0, 8.0), base) == pytest.approx({"tcp": 25.0, "codec": 0.0})
    # before 1.0x, after 0.7x on lz4: the attempt's mean is 0.85x, -15 %, on the codec part
    d, part = hs.attempt_drift_pct((hs.Reading(4.0, 8.0), hs.Reading(4.0, 5.6)), base)
    assert (round(d, 6), part) == (-15.0, "codec")
    again = hs.Baseline.from_dict(json.loads(json.dumps(base.as_dict())))
    assert again.readings == base.readings and again.as_dict()["median"] == {"tcp_gbps": 4.0, "codec_gbps": 8.0}


def test_the_rule_flags_beyond_the_limit_only_and_a_limit_of_zero_judges_nothing(tmp_path: Path) -> None:
    from kbench.engine.transports.base import RunResult

    (cell,) = plan_mod.expand(host_plan(tmp_path, repetitions=1))

    def judged(drift: float | None, limit: float) -> tuple[str, list[str]]:
        res = RunResult(
            1000, 1000, 10**6, 1.0, 15000.0, 15000.0, steal_pct=0.0, host_drift_pct=drift, host_drift_part="tcp"
        )
        v = rules.judge(cell, res, 1.0, limit)
        return str(v.status), v.reasons

    assert judged(10.0, 10.0)[0] == "OK" and judged(-10.0, 10.0)[0] == "OK"
    st, why = judged(-10.01, 10.0)
    assert st == "INVALID" and "host speed -10.0% off the run's calibration (tcp probe; limit ±10%)" in why[0]
    assert judged(50.0, 0.0)[0] == "OK" and judged(None, 10.0)[0] == "OK"


def test_the_runs_line_says_when_the_calibration_is_noisier_than_the_limit() -> None:
    quiet = hs.Baseline((hs.Reading(4.0, 8.0), hs.Reading(4.1, 8.1), hs.Reading(3.9, 7.9)))
    noisy = hs.Baseline((hs.Reading(4.0, 8.0), hs.Reading(4.1, 8.1), hs.Reading(3.0, 7.9)))
    line = hs.summary({"host_speed": {"probed": True, "limit_pct": 10, **quiet.as_dict()}})
    assert line == (
        "host speed: tcp 4.00 GB/CPU-s, lz4 8.00 GB/CPU-s over 3 probes, A/A spread 2.5% "
        "(a repetition is INVALID beyond ±10%)"
    )
    line = hs.summary({"host_speed": {"probed": True, "limit_pct": 10, **noisy.as_dict()}})
    assert line is not None and "A/A spread 25.0%" in line and "this host's noise alone may invalidate" in line
    assert hs.summary({"host_speed": {"probed": False, "why": "host_drift_pct = 0 in the plan"}}) == (
        "host speed: not probed (host_drift_pct = 0 in the plan)"
    )
    assert hs.summary({}) is None


def test_host_drift_pct_is_a_premise_with_a_bounded_value() -> None:
    assert parse_premises({}, 60, 5).host_drift_pct == hs.DEFAULT_HOST_DRIFT_PCT
    assert parse_premises({"host_drift_pct": 0}, 60, 5).host_drift_pct == 0.0
    for bad, msg in ((-1, "must be in [0, 100]"), ("x", "is not a number"), (True, "is not a number")):
        with pytest.raises(PremiseError, match=r"host_drift_pct: .*" + msg.replace("[", r"\[").replace("]", r"\]")):
            parse_premises({"host_drift_pct": bad}, 60, 5)


def host_plan(tmp: Path, transport: str | Mapping[str, Any] | None = None, **head: Any) -> plan_mod.Plan:
    """One fixed-rate cell, two repetitions, on a transport kind that measures (the fake runs it)."""
    keys: dict[str, Any] = {
        "repetitions": 2,
        "retries": 2,
        "duration_s": 1,
        "min_window_s": 0,
        "warmup_s": 0.5,
        "corpus_size": 20000,
        "seed": 7,
        "warm_cluster": False,
        **head,
    }
    text = plan_toml(
        sweep("fixed", ["A"], ["none"], rate=15000),
        transport=transport or {"kind": "bootstrap", "bootstrap": "127.0.0.1:1"},
        **keys,
    )
    return plan_mod.load(str(write_plan(tmp, text, "host.toml")))


def test_an_attempt_the_host_slowed_under_is_invalid_and_retried(tmp_path: Path) -> None:
    # 7 calibration probes at 1x; the first attempt's probes at 1x before and 0.7x after (mean
    # -15 %); every later probe at 1.05x (+5 %: inside the plan's 10 %)
    probe = hs.FixedSpeed([1.0] * 7 + [1.0, 0.7, 1.05])
    fake = FakeTransport()
    seen: list[tuple[int, bool]] = []  # at each probe: requests run so far, and whether the last was a warm-up

    def recorded() -> hs.Reading:
        seen.append((len(fake.requests), fake.requests[-1].warmup if fake.requests else False))
        return probe()

    out = io.StringIO()
    execute(opts(tmp_path, host_plan(tmp_path), host_speed=recorded, progress_stream=out), fake)
    # calibrated after the cell's warm-up (the machine as it runs the plan), then one probe before
    # and one after each of the three attempts
    assert seen == [(1, True)] * 8 + [(2, False), (2, False), (3, False), (3, False), (4, False)]
    run = tmp_path / "run"
    a = store.read_rows(run / "A.csv")
    by = sorted((r["rep"], r["attempt"], r["status"]) for r in a)
    first = next(r for r in a if r["attempt"] == "1" and r["status"] == "INVALID")
    assert by == sorted(
        [(first["rep"], "1", "INVALID"), (first["rep"], "2", "OK"), ("12"[first["rep"] == "1"], "1", "OK")]
    )
    assert "host speed -15.0% off the run's calibration (tcp probe; limit ±10%)" in first["reason"]
    man = json.loads((run / "manifest.json").read_text())["host_speed"]
    assert man["probed"] is True and len(man["readings"]) == 7 and man["spread_pct"] == 0.0 and man["limit_pct"] == 10
    assert "host speed: tcp 3.50 GB/CPU-s, lz4 6.50 GB/CPU-s over 7 probes" in out.getvalue()
    lines = [json.loads(x) for x in (run / "done.jsonl").read_text().splitlines()]
    assert [x["host_speed"]["drift_pct"] for x in lines] == [-15.0, 5.0, 5.0]
    assert lines[0]["host_speed"]["before"]["tcp_gbps"] == 3.5 and lines[0]["host_speed"]["after"]["tcp_gbps"] == 2.45
    assert probe.calls == 7 + 2 * 3  # calibration, then one probe before and one after each attempt
    # the report says what the rule was and lists the excluded attempt with its reason
    from kbench.reporting import report

    md = report.write([run], tmp_path / "rep", with_plots=False).markdown.read_text()
    assert (
        "timed a fixed workload (loopback TCP, lz4) before and after every repetition: its calibration's "
        "own spread was 0.0%, and a repetition whose two probes' mean was more than 10% off the calibration was INVALID"
    ) in md
    assert "host speed -15.0% off the run's calibration" in md


def test_a_resume_keeps_the_runs_calibration_and_judges_the_machine_it_resumed_on(tmp_path: Path) -> None:
    plan = host_plan(tmp_path, retries=0)
    with pytest.raises(KeyboardInterrupt):
        execute(opts(tmp_path, plan, host_speed=hs.FixedSpeed([1.0])), FakeTransport(interrupt_after=2))
    run = tmp_path / "run"
    cal = json.loads((run / "manifest.json").read_text())["host_speed"]
    # resumed on a machine twice as fast: the kept calibration says so, the new one is not taken
    faster = hs.FixedSpeed([2.0])
    execute(opts(tmp_path, plan, resume=True, host_speed=faster), FakeTransport())
    assert json.loads((run / "manifest.json").read_text())["host_speed"] == cal
    a = store.read_rows(run / "A.csv")
    assert [r["status"] for r in a if r["attempt"] == "1"].count("INVALID") >= 1
    assert any("host speed +100.0% off the run's calibration" in r["reason"] for r in a)
    assert faster.calls >= 2 and faster.calls % 2 == 0  # no calibration on resume: pairs only


def test_no_probe_when_the_plan_turns_it_off_or_nothing_is_measured(tmp_path: Path) -> None:
    for name, plan in (
        ("off", host_plan(tmp_path, host_drift_pct=0)),
        ("dry", host_plan(tmp_path, transport="dry")),
    ):
        probe = hs.FixedSpeed([0.5])
        execute(opts(tmp_path / name, plan, host_speed=probe), FakeTransport())
        run = tmp_path / name / "run"
        man = json.loads((run / "manifest.json").read_text())["host_speed"]
        assert man["probed"] is False and man["why"], man
        assert probe.calls == 0
        assert all("host_speed" not in json.loads(x) for x in (run / "done.jsonl").read_text().splitlines())
        assert all("host speed" not in r["reason"] for r in store.read_rows(run / "A.csv"))


def test_the_test_injection_is_parsed_strictly() -> None:
    assert hs.injected({}) is None and hs.injected({hs.INJECT_ENV: ""}) is None
    f = hs.injected({hs.INJECT_ENV: "1,1.3"})
    assert f is not None and [f().tcp_gbps for _ in range(3)] == [3.5, pytest.approx(4.55), pytest.approx(4.55)]
    for bad in ("fast", "1,0", "-1"):
        with pytest.raises(ValueError, match=hs.INJECT_ENV):
            hs.injected({hs.INJECT_ENV: bad})
