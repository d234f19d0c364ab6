"""The experiments' rules (DESIGN §2–3): from one run's measurements to CSV rows with a status.

- fixed rate: achieved rate off the target by more than :data:`RATE_TOLERANCE` → ``REJECTED``;
- saturated (B): latencies flagged ``latency-NOT-comparable-saturated``;
- CPU (D, F): unreadable counters → ``NA`` (never 0), a negative delta → ``FAILED_CPU_REGRESSED``;
  CPU-s/GB divides a role's CPU by the payload of that role's own CPU window, never the run's;
- steal above the plan's ``max_steal_pct`` (default :data:`STEAL_LIMIT_PCT`) → ``INVALID`` (for
  every row of that run); such a run, or a ``REJECTED`` one, is retried within the plan's budget
  (:data:`RETRY_STATUSES`);
- the host-speed probe (before or after the run) further from the run's calibration than the
  plan's ``host_drift_pct`` → ``INVALID`` (the machine changed under the run; retried as steal is);
- steal that could not be measured (``None``) on a measuring transport → ``NA`` for every row of
  that run (the run cannot be shown within the limit; a synthetic run's timings are labelled as such);
- A at a fixed rate: a send delay p99, a queue wait beyond linger.ms or a consumer lag above the
  plan's ``saturation_bound_ms`` → ``SATURATED`` (not retried: the load caused it);
- lost or duplicated records, or delivery errors → ``FAILED_LOSS``;
- a topic whose ``compression.type`` does not read back as planned → ``FAILED_TOPIC_CONFIG``.
"""

from __future__ import annotations

from typing import Any

from kbench.engine import window
from kbench.engine.cell import Cell
from kbench.engine.status import RETRY_STATUSES, Status, Verdict, worst
from kbench.engine.transports.base import RunResult
from kbench.experiments import registry
from kbench.experiments.spec import DEFAULT_SATURATION_BOUND_MS, SATURATED_FLAG, RowInput, row_columns
from kbench.kafka.procstat import STEAL_LIMIT_PCT
from kbench.model.codecs import topic_compression
from kbench.model.corpus import Corpus

__all__ = [
    "RATE_TOLERANCE",
    "RETRY_STATUSES",
    "STEAL_LIMIT_PCT",
    "SATURATED_FLAG",
    "Verdict",
    "judge",
    "rows_for",
    "failed_rows",
    "worst",
]

RATE_TOLERANCE = 0.02


def judge(
    cell: Cell, res: RunResult, steal_limit_pct: float = STEAL_LIMIT_PCT, host_drift_limit_pct: float = 0.0
) -> Verdict:
    """The run-level verdict that applies to every row of the run (``host_drift_limit_pct`` 0: the
    host's speed is not judged)."""
    v = Verdict()
    if res.target_rate is not None and res.target_rate > 0:
        err = (res.achieved_rate - res.target_rate) / res.target_rate
        if abs(err) > RATE_TOLERANCE:
            v.add(
                Status.REJECTED,
                f"achieved {res.achieved_rate:.1f} msgs/s is {err * 100:+.2f}% off the target {res.target_rate:.1f} msgs/s (limit ±{RATE_TOLERANCE * 100:.0f}%)",
            )
    if res.steal_pct is not None and res.steal_pct > steal_limit_pct:
        v.add(Status.INVALID, f"CPU steal {res.steal_pct:.2f}% > {steal_limit_pct:g}% during the run")
    elif res.steal_pct is None and not res.synthetic:
        v.add(Status.NA, f"CPU steal not measurable during the run: cannot show it within {steal_limit_pct:g}%")
    if host_drift_limit_pct > 0 and res.host_drift_pct is not None and abs(res.host_drift_pct) > host_drift_limit_pct:
        v.add(
            Status.INVALID,
            f"host speed {res.host_drift_pct:+.1f}% off the run's calibration ({res.host_drift_part} probe; limit "
            f"±{host_drift_limit_pct:g}%): the machine changed under the run",
        )
    if res.lost or res.duplicated:
        v.add(Status.FAILED_LOSS, f"consumer saw {res.lost or 0} lost and {res.duplicated or 0} duplicated records")
    if res.delivery_errors:
        v.add(Status.FAILED_LOSS, f"{res.delivery_errors} delivery errors")
    want = cell.topic_compression
    got = res.topic_compression_readback
    if got is not None and topic_compression(got) != topic_compression(want):
        v.add(Status.FAILED_TOPIC_CONFIG, f"topic compression.type reads back '{got}', the plan says '{want}'")
    if res.synthetic:
        v.reasons.append("dry transport: timings and CPU are synthetic, not measurements")
    return v


def rows_for(
    cell: Cell,
    rep: int,
    res: RunResult,
    corpus: Corpus,
    corpus_entropy: float,
    replication_factor: int,
    steal_limit_pct: float = STEAL_LIMIT_PCT,
    attempt: int = 1,
    saturation_bound_ms: float = DEFAULT_SATURATION_BOUND_MS,
    knee: tuple[float | None, float] = (None, 2.0),
    min_window: tuple[float, float] | None = None,
    host_drift_limit_pct: float = 0.0,
) -> dict[str, list[dict[str, Any]]]:
    """The rows this run (attempt ``attempt`` of repetition ``rep``) contributes to each
    experiment CSV its cell feeds (each experiment's own rule, from the registry);
    ``saturation_bound_ms`` is A's unsaturated check's bound (the plan's); ``knee`` the cell's
    latency floor (µs, None: none) and the plan's knee_factor; ``min_window`` (the repetition's
    steady skip, the plan's min_window_s): a shorter judged window is SHORT_WINDOW (kbench.engine.window);
    ``host_drift_limit_pct`` the plan's host_drift_pct (0: not judged)."""
    v = judge(cell, res, steal_limit_pct, host_drift_limit_pct)
    if min_window is not None:
        v = v.merged(window.check(res, *min_window, own_fix=registry.short_window_fix(cell)))
    x = RowInput(
        cell,
        rep,
        res,
        corpus,
        corpus_entropy,
        replication_factor,
        v,
        attempt,
        saturation_bound_ms,
        knee_floor_us=knee[0],
        knee_factor=knee[1],
    )
    out: dict[str, list[dict[str, Any]]] = {}
    for exp in cell.experiments:
        rows = registry.get(exp).rows
        if rows is None:
            raise ValueError(f"experiment {exp} derives no rows from a run (it is not run by kbench run)")
        out[exp] = rows(x)
    return out


def failed_rows(
    cell: Cell, rep: int, target: float | None, reason: str, attempt: int = 1
) -> dict[str, list[dict[str, Any]]]:
    """Rows for a run that could not complete (status FAILED_RUN), one per experiment (its row-key
    columns, e.g. D's role, read ``all``)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for exp in cell.experiments:
        row = row_columns(cell, rep, None, target, attempt)
        for k in registry.get(exp).row_key:
            row[k] = "all"
        row["status"] = Status.FAILED_RUN
        row["reason"] = reason
        out[exp] = [row]
    return out
