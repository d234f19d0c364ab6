"""The plan's premises of a judged window: the latency knee's factor, the minimum steady window,
the cluster's warm-up and the topology choice (docs/plan-format.md, docs/methodology.md).

Parsed here, apart from :mod:`kbench.engine.plan`, which only calls :func:`parse` and keeps the
result as ``Plan.premises``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kbench.engine.host_speed import DEFAULT_HOST_DRIFT_PCT

__all__ = [
    "DEFAULT_KNEE_FACTOR",
    "DEFAULT_MIN_WINDOW_S",
    "KEYS",
    "MAX_FLOOR_MS",
    "Premises",
    "PremiseError",
    "parse",
]

#: A's corrected p99 may be at most this many times the pipeline's latency floor (the knee).
DEFAULT_KNEE_FACTOR = 2.0
#: Seconds of steady window every measured repetition must hold (G: of its drain).
DEFAULT_MIN_WINDOW_S = 3.0
#: A latency floor (corrected p99 at a low rate) above this many ms is not a floor: the cluster is
#: not warm (or cannot carry the topology); the warm-up goes on (kbench.engine.floor).
MAX_FLOOR_MS = 50.0

KEYS = {
    "knee_factor": 'A: a repetition whose corrected p99 exceeds this many times the pipeline\'s latency floor is ABOVE_KNEE (default 2; the floor is measured with auto_rate_basis = "pipeline")',
    "min_window_s": "seconds of steady window a measured repetition must hold (G: of its drain), else SHORT_WINDOW (default 3)",
    "warm_cluster": "true: before anything is measured, probe the pipeline until its p99 is steady (default true on a Kafka transport)",
    "fit_topology": "true: run on a smaller topology (one broker) when the machine has fewer CPUs than the plan's emulated hosts (the run says which and why)",
    "floor_max_ms": "a latency floor above this many ms means the cluster is not warm: keep warming (default 50)",
    "host_drift_pct": "a repetition whose host-speed probe (before or after it) is off the run's calibration by more than this many % is INVALID and retried: the machine changed under it (default 10; 0: no probe)",
}


class PremiseError(ValueError):
    """A premise key is invalid; one line naming the key and the fix."""


@dataclass(frozen=True)
class Premises:
    knee_factor: float = DEFAULT_KNEE_FACTOR
    min_window_s: float = DEFAULT_MIN_WINDOW_S
    warm_cluster: bool = True
    fit_topology: bool = False
    floor_max_ms: float = MAX_FLOOR_MS
    host_drift_pct: float = DEFAULT_HOST_DRIFT_PCT


def _positive(key: str, v: Any, low: float, high: float) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise PremiseError(f"{key}: {v!r} is not a number; write a number in [{low:g}, {high:g}]")
    if not low <= v <= high:
        raise PremiseError(f"{key}: {v:g} must be in [{low:g}, {high:g}]")
    return float(v)


def _flag(key: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise PremiseError(f"{key}: must be true or false")
    return v


def parse(data: Mapping[str, Any], duration_s: float, steady_skip_s: float) -> Premises:
    """The premises of a plan's top-level table (raises :class:`PremiseError`)."""
    p = Premises(
        knee_factor=_positive("knee_factor", data.get("knee_factor", DEFAULT_KNEE_FACTOR), 1.0, 100.0),
        min_window_s=_positive("min_window_s", data.get("min_window_s", DEFAULT_MIN_WINDOW_S), 0.0, 86_400.0),
        warm_cluster=_flag("warm_cluster", data.get("warm_cluster", True)),
        fit_topology=_flag("fit_topology", data.get("fit_topology", False)),
        floor_max_ms=_positive("floor_max_ms", data.get("floor_max_ms", MAX_FLOOR_MS), 0.1, 60_000.0),
        host_drift_pct=_positive("host_drift_pct", data.get("host_drift_pct", DEFAULT_HOST_DRIFT_PCT), 0.0, 100.0),
    )
    window = duration_s - steady_skip_s
    if window < p.min_window_s:
        raise PremiseError(
            f"min_window_s: duration_s {duration_s:g} − steady_skip_s {steady_skip_s:g} leaves a {window:g} s steady "
            f"window, below min_window_s {p.min_window_s:g}; raise duration_s or lower min_window_s"
        )
    return p
