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


def test_the_eta_counts_a_catch_up_run_by_its_own_estimate() -> None:
    """A catch-up run (G) lasts until its backlog is produced and drained, not the plan's
    duration_s: the progress line's planned seconds are the estimate's (own_run_s)."""
    from kbench.engine import plan as plan_mod
    from kbench.engine.runner import _planned_s
    from kbench.experiments.g_backlog import CATCH_UP_RUN_S

    plan = plan_mod.load("catch-up")
    cells = plan_mod.expand(plan)
    queued = [(c, rep, 1) for c in cells for rep in range(1, plan.repetitions + 1)]
    want = (len(queued) + len(cells)) * CATCH_UP_RUN_S  # every repetition and every cell's warm-up
    assert _planned_s(plan, queued, cells) == want
    quick = plan_mod.load("quick")
    qcells = plan_mod.expand(quick)
    qq = [(c, 1, 1) for c in qcells]
    assert _planned_s(quick, qq, qcells) == len(qq) * quick.duration_s + len(qcells) * quick.warmup_s
