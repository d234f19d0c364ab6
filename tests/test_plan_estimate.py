"""``kbench plans``' time estimate against committed real runs' wall time (manifest.json:
started_at to finished_at): within 25 %, set-up, knee probes and per-run overhead included."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from kbench.commands.plans import estimate_s
from kbench.engine import plan as plan_mod
from kbench.engine.estimate import estimate

ROOT = Path(__file__).resolve().parent.parent

#: Real runs (local cluster, testbed with knee probes, the Java and Go drivers, a catch-up plan
#: whose runs last until the backlog is drained: G's own_run_s, g_backlog.CATCH_UP_RUN_S, calibrated on that run).  Phases a run predates (the
#: cluster's warm-up, the floor probes: no ``warm_up`` entry, no ``floor`` in its derivation) are
#: left out of its estimate.
RUNS = (
    "quick-2026-12-02",
    "seed000-testbed-2026-12-02",
    "clients-2026-12-02",
    "quick-2026-12-04",
    "seed000-testbed-2026-12-04a",
    "catch-up-2026-12-06",
)


@pytest.mark.parametrize("name", RUNS)
def test_estimate_within_25_percent_of_the_measured_wall_time(name: str) -> None:
    man = json.loads((ROOT / "benchmarks" / "results" / name / "manifest.json").read_text())
    measured = (dt.datetime.fromisoformat(man["finished_at"]) - dt.datetime.fromisoformat(man["started_at"])).seconds
    plan = plan_mod.parse(man["plan"])
    floor = "floor" in json.dumps(man.get("rate_derivation", {}))
    est = estimate(plan, warm="warm_up" in man, floor=floor, host=bool(man.get("host_speed", {}).get("probed"))).total_s
    assert abs(est - measured) <= 0.25 * measured, f"{name}: estimated {est:.0f} s, measured {measured} s"


def test_the_phases_are_all_counted() -> None:
    plan = plan_mod.load("seed000-testbed")  # testbed, auto_rate_basis = "pipeline": every phase
    e = estimate(plan)
    assert e.setup_s > 0 and e.warm_s > 0 and e.probes_s > 0 and e.warmups_s > 0 and e.repetitions_s > 0
    assert e.overhead_s > 0 and e.total_s == pytest.approx(estimate_s(plan, 0))
    planned = e.warmups_s + e.repetitions_s
    assert e.total_s > 1.5 * planned  # the old estimate (planned seconds alone) was 1 min for 3.5 min
