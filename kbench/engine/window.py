"""The minimum steady window: a repetition judged on fewer seconds than the plan's
``min_window_s`` is ``SHORT_WINDOW`` with the figure, never OK (docs/methodology.md §4).

The steady window of an ordinary repetition is its producing window (first send to last ack)
less the steady skip; of a repetition that drained a backlog with a consumer group (an
experiment's own run, e.g. G's catch-up: ``RunResult.drain``), the drain (first record read to the
last).  Start-up and scheduling dominate shorter windows.
"""

from __future__ import annotations

from kbench.engine.status import Status, Verdict
from kbench.engine.transports.base import RunResult

__all__ = ["check", "steady_s"]


def steady_s(res: RunResult, steady_skip_s: float) -> float | None:
    """Seconds of the repetition's judged window (None: not measured)."""
    if res.drain:
        span = res.drain.get("span_s")
        return float(span) if isinstance(span, (int, float)) else None
    if res.elapsed_s <= 0:
        return None
    return max(0.0, res.elapsed_s - steady_skip_s)


def check(res: RunResult, steady_skip_s: float, min_window_s: float, own_fix: str = "") -> Verdict:
    """``SHORT_WINDOW`` when the judged window is shorter than ``min_window_s`` (OK otherwise,
    and when it was not measured: the experiments' own rules say NA then).  ``own_fix``: what the
    reason says to change when the window is an experiment's own run's drain (its
    ``short_window_fix``, through the registry; else: raise duration_s)."""
    if res.synthetic:
        return Verdict()  # a dry run's timings are synthetic: no window to judge
    w = steady_s(res, steady_skip_s)
    if w is None or w >= min_window_s:
        return Verdict()
    what = "drain" if res.drain else f"steady window (producing window − steady skip {steady_skip_s:g} s)"
    fix = own_fix if res.drain and own_fix else "raise duration_s"
    return Verdict(Status.SHORT_WINDOW, [f"{what} {w:.2f} s < min_window_s {min_window_s:g} s; {fix}"])
