"""Which columns may be negative in an OK row: the one rule of kbench.engine.csvio.bad_values."""

from __future__ import annotations

from kbench.engine import csvio


def test_a_negative_fetch_wait_is_data_and_a_negative_latency_is_not() -> None:
    # e2e p50 − service p50 − one batch's decompression: a difference of medians, near zero it dips below
    ok = {"status": "OK", "phase_fetch_wait_p50_us": "-114.688", "rate_error_pct": "-0.01"}
    assert csvio.bad_values([ok], "A.csv") == {}
    bad = {"status": "OK", "phase_fetch_wait_p50_us": "-1", "corrected_p99_us": "-3"}
    assert csvio.bad_values([bad], "A.csv") == {
        0: "corrected_p99_us: -3 is negative in an OK row, which it cannot be (A.csv row 1)"
    }
