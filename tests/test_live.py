"""Live figures while ``kbench run`` runs: a terminal status (tmux capture-pane), a line every 5 s
elsewhere, run.log one JSON object per line, and ``--metrics-port`` scraped mid-run with the
prometheus-client parser.  The dry transport (its figures synthetic, said so) without Kafka; the
local cluster's real figures under the Kafka marker."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from kbenv import KBENCH_PATH
from prometheus_client.parser import text_string_to_metric_families

from kbench.engine.live import LiveBoard, LiveFigures, describe
from kbench.engine.transports.live_feed import LiveFeed, cpu_pct
from kbench.engine.transports.persecond import PerSecond, SecondSample
from kbench.kafka import procstat

ROOT = Path(__file__).resolve().parent.parent

DRY = """
name = "live-dry"
description = "live figures"
repetitions = 2
warmup = false
duration_s = 4
seed = 3

[transport]
kind = "dry"

[corpora]
json = { source = "json", size = "64KiB", seed = 1 }

[[sweep]]
name = "c"
experiments = ["C"]
codec = ["none", "lz4"]
corpus = ["json"]
batch_size = "16KiB"
linger_ms = 5
rate = 2000
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=KBENCH_PATH + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env[procstat.INJECT_ENV] = "0"
    return env


def _scrape(port: int) -> dict[str, dict[tuple[tuple[str, str], ...], float]] | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
            text = r.read().decode()
    except OSError:
        return None
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def _scrape_mid_run(proc: subprocess.Popen[str], port: int, want: str, deadline_s: float) -> dict:  # type: ignore[type-arg]
    """Scrapes until ``want`` has a sample while a repetition runs (the run not finished)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end and proc.poll() is None:
        m = _scrape(port)
        if m and m.get(want) and m.get("kbench_repetition_elapsed_seconds"):
            return m
        time.sleep(0.2)  # polling an HTTP endpoint until it answers: the condition is checked above
    raise AssertionError(f"no {want} scraped while the run ran (exit {proc.poll()})")


def test_metrics_port_scraped_mid_run_and_lines_in_the_log(tmp_path: Path) -> None:
    plan = tmp_path / "live.toml"
    plan.write_text(DRY)
    port = _free_port()
    cmd = [sys.executable, "-m", "kbench", "run", str(plan), "-o", "run", "--gate-sample-s", "0"]
    proc = subprocess.Popen(
        [*cmd, "--metrics-port", str(port)],
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        m = _scrape_mid_run(proc, port, "kbench_messages_per_second", 60)
        (labels, rate), *_ = m["kbench_messages_per_second"].items()
        assert rate == 2000.0  # the dry transport's (synthetic) rate: the target
        assert dict(labels)["repetition"].startswith("c-00") and "rep " in dict(labels)["repetition"]
        assert list(m["kbench_repetitions_planned"].values()) == [4.0]
        assert 0 <= next(iter(m["kbench_repetition_elapsed_seconds"].values())) < 30
        assert "kbench_producer_cpu_percent" not in m  # not measured by the dry transport: absent, not 0
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err[-2000:]
    # not a terminal: a line every 5 s with the figures, and each repetition's end with its status
    lines = [x for x in err.splitlines() if "msgs/s" in x]
    assert len(lines) >= 2 and all("2,000 msgs/s" in x and "dry transport: synthetic" in x for x in lines)
    assert sum(1 for x in err.splitlines() if x.startswith("kbench: ended c-00") and x.endswith(": OK")) == 4
    # run.log: one JSON object per line, the live lines and the ends among them
    log = [json.loads(x) for x in (tmp_path / "run" / "run.log").read_text().splitlines()]
    assert all(isinstance(d, dict) and "time" in d and "event" in d for d in log)
    assert sum(d["event"] == "repetition ended" for d in log) == 4
    live = [d for d in log if d["event"] == "live"]
    assert len(live) >= 2 and all(d["msgs_s"] == 2000.0 and d["producer_cpu_pct"] is None for d in live)


def test_a_terminal_shows_the_live_status(tmp_path: Path) -> None:
    tmux = shutil.which("tmux")
    assert tmux is not None, "tmux is missing: scripts/setup.sh installs it"
    plan = tmp_path / "live.toml"
    plan.write_text(DRY)
    session = f"kbench-live-{os.getpid()}"
    env = " ".join(f"{k}={v}" for k, v in _env().items() if k in ("PYTHONPATH", procstat.INJECT_ENV))
    cmd = f"cd {tmp_path} && env -u COLUMNS -u LINES {env} {sys.executable} -m kbench run live.toml -o run --gate-sample-s 0; sleep 60"
    subprocess.run([tmux, "new-session", "-d", "-s", session, "-x", "160", "-y", "40", cmd], check=True)
    try:
        end = time.monotonic() + 60
        screen = ""
        while time.monotonic() < end:
            screen = subprocess.run(
                [tmux, "capture-pane", "-p", "-t", session], capture_output=True, text=True, check=True
            ).stdout
            if "(running)" in screen and "2,000" in screen:
                break
            time.sleep(0.2)  # polling the screen until the status shows: the condition is checked above
        assert "(running)" in screen, screen
        rows = screen.splitlines()
        i = next(i for i, x in enumerate(rows) if "msgs/s" in x)
        for col in ("MB/s", "RTT p50", "RTT p99", "CPU prod", "CPU cons", "CPU broker"):
            assert col in rows[i]
        assert "(running)" in rows[i - 1] and "dry transport: synthetic" in rows[i - 1]  # the repetition, its source
        assert rows[i + 1].split()[:2] == ["2,000", "0.75"]  # msgs/s and MB/s of the repetition in progress
        assert rows[i + 1].split()[2:] == ["n/a"] * 5  # not measured by the dry transport: said, not 0
    finally:
        subprocess.run([tmux, "kill-session", "-t", session], capture_output=True)


def _sample(t_s: float, prod: float, brok: float) -> SecondSample:
    return SecondSample(int(t_s * 1e9), {"producer": (prod, 0.0), "broker-1": (brok / 2, brok / 2)}, {})


def test_cpu_pct_and_the_feed_from_the_statistics_file(tmp_path: Path) -> None:
    a, b = _sample(10.0, 1.0, 2.0), _sample(11.0, 1.5, 2.25)
    assert cpu_pct(a, b, lambda r: r == "producer") == pytest.approx(50.0)
    assert cpu_pct(a, b, lambda r: r.startswith("broker")) == pytest.approx(25.0)
    stats = tmp_path / "s.jsonl"
    brokers = {"b1": {"rtt": {"cnt": 10, "p50": 1500, "p99": 8000}}}
    line = {"ts": 1_000_000, "txmsgs": 1000, "txmsg_bytes": 400_000, "brokers": brokers}
    stats.write_text(json.dumps(line) + "\n")
    sampler = PerSecond({})
    sampler.samples.extend([a, b])
    feed = LiveFeed(lambda f: None, stats, sampler)
    first = feed.figures()
    assert first.msgs_s is None and first.p50_ms == 1.5 and first.p99_ms == 8.0  # one line: no rate yet
    assert first.producer_cpu_pct == pytest.approx(50.0)
    with stats.open("a") as f:  # librdkafka appends a line a second later
        f.write(json.dumps({**line, "ts": 2_000_000, "txmsgs": 21000, "txmsg_bytes": 8_400_000}) + "\n")
    second = feed.figures()
    assert second.msgs_s == pytest.approx(20000.0) and second.mb_s == pytest.approx(8.0)


def test_the_feed_names_its_stage_and_sums_the_consumers() -> None:
    """G's stages: the feed pushes its stage at once (before any second is measured), and the
    consumers' CPU is the sum over a group's members."""
    a = SecondSample(0, {"consumer-1": (1.0, 0.0), "consumer-2": (2.0, 0.0), "broker-1": (0.0, 0.0)}, {})
    b = SecondSample(2_000_000_000, {"consumer-1": (1.5, 0.1), "consumer-2": (2.3, 0.1), "broker-1": (0.2, 0.0)}, {})
    sampler = PerSecond({})
    sampler.samples.append(a)
    pushed: list[LiveFigures] = []
    feed = LiveFeed(pushed.append, None, sampler, "drain").start()
    try:
        assert pushed and pushed[0].stage == "drain" and pushed[0].consumer_cpu_pct is None  # one sample: no CPU yet
        sampler.samples.append(b)
        f = feed.figures()
    finally:
        feed.stop()
    assert f.consumer_cpu_pct == pytest.approx(50.0) and f.broker_cpu_pct == pytest.approx(10.0)
    assert f.producer_cpu_pct is None and f.msgs_s is None  # no producer in a drain: n/a, not 0
    board = LiveBoard(reps_total=1)
    board.begin("drain-000 rep 1/5")
    board.update(f)
    assert "drain-000 rep 1/5 running [drain] " in describe(board.snapshot())
    board.begin("drain-000 warm-up", "warm-up")
    board.update(f)
    assert "drain-000 warm-up [drain] " in describe(board.snapshot())  # the phase once


def test_the_board_says_what_it_does_not_know() -> None:
    board = LiveBoard(reps_total=2)
    board.begin("x-000 rep 1/2")
    board.update(LiveFigures(msgs_s=1234.0))
    line = describe(board.snapshot())
    assert "1,234 msgs/s" in line and "CPU producer n/a % consumer n/a % broker n/a %" in line
    ended: list[str] = []
    board.listeners.append(lambda s: ended.append(s.last_status))
    board.end("x-000 rep 1/2", "REJECTED")
    s = board.snapshot()
    assert ended == ["REJECTED"] and s.reps_done == 1 and s.statuses == {"REJECTED": 1}


def test_no_line_before_anything_is_planned() -> None:
    """While the plan, corpus and cluster load, a non-terminal gets no "0/0 starting" line (a run
    refused there ends with its one error line); once repetitions are planned, a line each period."""
    import io

    from kbench.engine.live_view import LiveView

    out = io.StringIO()
    board = LiveBoard()
    logged: list[dict[str, object]] = []
    view = LiveView(board, stream=out, log=logged.append)
    view._line()
    # nor a run.log line: a run refused while loading leaves its new run directory empty (removed)
    assert out.getvalue() == "" and logged == []
    board.add_total(2)
    view._line()
    assert out.getvalue().startswith("kbench: 0/2 starting"), out.getvalue()
    assert [d["event"] for d in logged] == ["live"]


LOCAL = """
name = "live-kafka"
description = "live figures on a local cluster"
repetitions = 1
warmup = false
duration_s = 8
steady_skip_s = 1
min_window_s = 3
warm_cluster = false
corpus_size = 500000

[transport]
kind = "local"

[[sweep]]
name = "fixed"
experiments = ["C", "D"]
codec = ["zstd:3"]
rate = 5000
"""


@pytest.mark.kafka
@pytest.mark.slow
def test_metrics_port_on_a_local_cluster_shows_the_producer_at_work(tmp_path: Path) -> None:
    """The real figures mid-run: the producer's records/s from librdkafka's statistics, its CPU and
    the broker's from /proc, scraped while the repetition runs."""
    plan = tmp_path / "live.toml"
    plan.write_text(LOCAL)
    port = _free_port()
    cmd = [sys.executable, "-m", "kbench", "run", str(plan), "-o", "run", "--gate-sample-s", "0", "--force"]
    proc = subprocess.Popen(
        [*cmd, "--metrics-port", str(port)],
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        m = _scrape_mid_run(proc, port, "kbench_producer_cpu_percent", 240)
        end = time.monotonic() + 30
        while (
            not (m.get("kbench_messages_per_second") and m.get("kbench_broker_cpu_percent")) and time.monotonic() < end
        ):
            time.sleep(0.5)  # polling the endpoint until both figures have a second of data: checked above
            m = _scrape(port) or m
        rate = next(iter(m["kbench_messages_per_second"].values()))
        assert 0.5 * 5000 <= rate <= 2 * 5000  # the fixed rate, as librdkafka's statistics count it
        assert next(iter(m["kbench_producer_cpu_percent"].values())) > 0
        assert next(iter(m["kbench_broker_cpu_percent"].values())) > 0
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode in (0, 4), err[-3000:]
    live = [json.loads(x) for x in (tmp_path / "run" / "run.log").read_text().splitlines()]
    assert any(d["event"] == "live" and (d["msgs_s"] or 0) > 0 for d in live)


def _pane(tmux: str, session: str) -> str:
    return subprocess.run(
        [tmux, "capture-pane", "-p", "-t", session], capture_output=True, text=True, check=True
    ).stdout


def _live_lines(log: Path) -> list[dict]:  # type: ignore[type-arg]
    if not log.is_file():
        return []
    rows = [json.loads(x) for x in log.read_text().splitlines() if x.endswith("}")]  # a line being written: later
    return [d for d in rows if d["event"] == "live"]


@pytest.mark.slow  # the built-in plan quick for ~15 s: two 5 s log periods, then C-c
def test_kbench_run_quick_live_on_a_terminal_and_in_its_log_then_c_c(tmp_path: Path) -> None:
    """The built-in plan ``quick`` itself (on the dry transport, which keeps it off Kafka: its
    figures synthetic, said so) in tmux: the status shows the running repetition's figures,
    run.log gets a live line every 5 s, and C-c sent through tmux ends the run interrupted with
    the resume hint (exit 130, the manifest's state ``interrupted``)."""
    tmux = shutil.which("tmux")
    assert tmux is not None, "tmux is missing: scripts/setup.sh installs it"
    session = f"kbench-quick-{os.getpid()}"
    env = " ".join(f"{k}={v}" for k, v in _env().items() if k in ("PYTHONPATH", procstat.INJECT_ENV))
    run = f"{sys.executable} -m kbench run quick -o run --transport dry --gate-sample-s 0"
    cmd = f"cd {tmp_path} && env -u COLUMNS -u LINES {env} {run}; echo kbench-exit-$?; sleep 120"
    subprocess.run([tmux, "new-session", "-d", "-s", session, "-x", "160", "-y", "40", cmd], check=True)
    try:
        end = time.monotonic() + 120
        screen = _pane(tmux, session)
        while time.monotonic() < end and not ("(running)" in screen and "msgs/s" in screen):
            time.sleep(0.2)  # polling the screen until the status shows: the condition is the loop's
            screen = _pane(tmux, session)
        rows = screen.splitlines()
        i = next(i for i, x in enumerate(rows) if "msgs/s" in x and "MB/s" in x)
        assert " rep " in rows[i - 1] and "(running)" in rows[i - 1], screen  # a repetition of quick running
        assert "dry transport: synthetic" in rows[i - 1], screen
        msgs_s, mb_s = (float(x.replace(",", "")) for x in rows[i + 1].split()[:2])
        assert msgs_s > 0 and mb_s > 0, screen  # figures, not placeholders
        log = tmp_path / "run" / "run.log"

        def figures(d: dict) -> bool:  # type: ignore[type-arg]
            return d["phase"] == "running" and " rep " in d["label"] and (d["msgs_s"] or 0) > 0

        live = _live_lines(log)
        while time.monotonic() < end and not (len(live) >= 2 and any(map(figures, live))):
            time.sleep(0.2)  # polling run.log until two periods have passed: the condition is the loop's
            live = _live_lines(log)
        assert len(live) >= 2 and any(map(figures, live)), log.read_text()[-2000:]
        # each line says where the run is (a tick may fall in a warm-up or between repetitions)
        assert all(d["phase"] in ("starting", "warm-up", "running", "done") and d["reps_total"] > 0 for d in live)
        gaps = [b["run_elapsed_s"] - a["run_elapsed_s"] for a, b in zip(live, live[1:])]
        # every 5 s: never sooner (the view waits a full period), at most one period's late wake-up
        assert all(4.9 <= g < 10 for g in gaps), gaps
        assert json.loads((tmp_path / "run" / "manifest.json").read_text())["state"] == "running"
        subprocess.run([tmux, "send-keys", "-t", session, "C-c"], check=True)
        end = time.monotonic() + 60
        while time.monotonic() < end and "kbench-exit-" not in screen:
            time.sleep(0.2)  # polling the screen until the run has exited: the condition is the loop's
            screen = _pane(tmux, session)
        assert "kbench-exit-130" in screen, screen
        assert "interrupted; continue with: kbench run --resume run" in screen, screen
        assert json.loads((tmp_path / "run" / "manifest.json").read_text())["state"] == "interrupted"
    finally:
        subprocess.run([tmux, "kill-session", "-t", session], capture_output=True)
