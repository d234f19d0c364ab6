"""The payload of a role's CPU window (kbench.engine.transports.window) and the injected steal source."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kbench.engine.transports.window import Schedule
from kbench.kafka import procstat

SIZES = [10, 20, 30, 40]  # cycled: message i has size SIZES[i % 4]
T0 = 5 * 10**9


def test_payload_of_a_range_of_cycled_records() -> None:
    s = Schedule.of(SIZES, 10, 10, T0, T0 + 9 * 10**9, 1.0)
    assert s.payload(0, 4) == 100 and s.payload(0, 10) == 100 + 100 + 10 + 20
    assert s.payload(3, 6) == 40 + 10 + 20 and s.payload(6, 6) == 0 and s.payload(7, 3) == 0


def test_fixed_rate_window_starts_at_the_first_message_due_in_it() -> None:
    s = Schedule.of(SIZES, 10, 10, T0, T0 + 9 * 10**9, 1.0)  # one message a second
    assert s.window_payload(T0) == s.payload(0, 10)
    assert s.window_payload(T0 + 2 * 10**9) == s.payload(2, 10)  # due exactly at the start: in
    assert s.window_payload(T0 + 2 * 10**9 + 1) == s.payload(3, 10)
    assert s.window_payload(T0 + 60 * 10**9) == 0 and s.window_payload(0) == s.payload(0, 10)
    # a role that sees each message 1.5 s after its send time (e.g. the consumer)
    assert s.window_payload(T0 + 4 * 10**9, lag_ns=1_500_000_000) == s.payload(3, 10)


def test_saturated_window_in_proportion_to_time_and_undelivered_scaled() -> None:
    s = Schedule.of(SIZES, 100, 100, T0, T0 + 10 * 10**9, None)
    assert s.window_payload(T0 + 5 * 10**9) == s.payload(50, 100)
    half = Schedule.of(SIZES, 100, 50, T0, T0 + 10 * 10**9, None)
    assert half.window_payload(T0) == s.payload(0, 100) // 2


def test_fixed_steal_gives_exactly_its_figure_and_none_when_not_measurable() -> None:
    src = procstat.FixedSteal(5.0)
    a, b, c = src(), src(), src()
    assert procstat.steal_pct(a, b) == pytest.approx(5.0) and procstat.steal_pct(a, c) == pytest.approx(5.0)
    assert procstat.steal_pct(procstat.FixedSteal(None)(), b) is None
    assert procstat.steal_pct(b, a) is None  # no CPU time passed: cannot tell


def test_one_steal_rule_for_proc_stat_texts() -> None:
    from kbench.engine import gate

    before = "cpu  1000 0 500 8000 100 0 0 0 0 0\n"
    after = "cpu  1100 0 550 8800 100 0 0 50 0 0\n"
    assert gate.steal_pct(before, after) == pytest.approx(5.0)
    assert procstat.steal_pct(procstat.parse_system(before), procstat.parse_system(after)) == pytest.approx(5.0)
    assert gate.steal_pct(before, before) is None and gate.steal_pct("", after) is None


def test_injected_steal_from_the_environment() -> None:
    assert procstat.injected_steal({}) is None
    assert procstat.injected_steal({procstat.INJECT_ENV: "2.5"}) == procstat.FixedSteal(2.5)
    assert procstat.injected_steal({procstat.INJECT_ENV: "none"}) == procstat.FixedSteal(None)
    with pytest.raises(ValueError, match="is not a number"):
        procstat.injected_steal({procstat.INJECT_ENV: "lots"})
    p = subprocess.run(
        [sys.executable, "-m", "kbench", "gate", "--sample-s", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, procstat.INJECT_ENV: "lots"},
    )
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and procstat.INJECT_ENV in p.stderr
