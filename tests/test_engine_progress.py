"""Progress: runs done of total and an ETA scaled by the observed overhead."""

from __future__ import annotations

import io

from kbench.engine.progress import Progress, fmt_duration


def test_eta_scales_with_observed_overhead() -> None:
    now = [0.0]
    p = Progress(total_runs=4, planned_s=40.0, stream=io.StringIO(), clock=lambda: now[0])
    assert p.eta_s() == 40.0
    now[0] = 20.0  # the first 10 planned seconds took 20 real seconds
    p.advance(10.0, "c-000 rep 1")
    assert p.eta_s() == 60.0
    line = p.stream.getvalue().splitlines()[-1]  # type: ignore[attr-defined]
    assert "1/4 runs" in line and "ETA 1m00s" in line and "elapsed 20s" in line


def test_fmt_duration() -> None:
    assert fmt_duration(5) == "5s" and fmt_duration(125) == "2m05s" and fmt_duration(3725) == "1h02m05s"
