"""Row statuses and the missing-value marker: the one definition (docs/csv-schema.md).

A row's ``status`` is one of :class:`Status`; when a run holds several problems the most severe
one wins (:data:`SEVERITY`).  :data:`MISSING` is what a CSV cell holds when a value was not
measured — the same text as the status ``NA`` on disk, but a different thing: a value, not a
verdict.  Statuses are :class:`enum.StrEnum` members, so they compare equal to the text a CSV
holds (``Status.OK == "OK"``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

__all__ = [
    "EXPLAIN",
    "MISSING",
    "RETRY_STATUSES",
    "SEVERITY",
    "Explanation",
    "Status",
    "Verdict",
    "parse_status",
    "worst",
]

#: A CSV cell whose value was not measured (never 0).
MISSING = "NA"


class Status(StrEnum):
    OK = "OK"
    NA = "NA"  # not measured: the row cannot be shown within the method
    SATURATED = "SATURATED"  # A: the pipeline fell behind its fixed rate (send delay, queue or consumer lag)
    #: A: corrected p99 above knee_factor × the pipeline's latency floor (the rate is past the knee)
    ABOVE_KNEE = "ABOVE_KNEE"
    #: A: saturated only while the driver or cluster was still warming (the per-second p99 fell and settled)
    WARMING = "WARMING"
    #: the measured steady window (or G's drain) is shorter than the plan's min_window_s
    SHORT_WINDOW = "SHORT_WINDOW"
    REJECTED = "REJECTED"  # achieved rate off the target
    FAILED_CPU_REGRESSED = "FAILED_CPU_REGRESSED"
    FAILED_TOPIC_CONFIG = "FAILED_TOPIC_CONFIG"
    FAILED_LOSS = "FAILED_LOSS"
    FAILED_RUN = "FAILED_RUN"
    INVALID = "INVALID"  # CPU steal above the limit, or a value that is not a number


#: Severity of statuses: the most severe one of a run wins.
SEVERITY: dict[Status, int] = {
    Status.OK: 0,
    Status.NA: 1,
    Status.SATURATED: 2,
    Status.WARMING: 2,
    Status.ABOVE_KNEE: 2,
    Status.SHORT_WINDOW: 3,
    Status.REJECTED: 3,
    Status.FAILED_CPU_REGRESSED: 4,
    Status.FAILED_TOPIC_CONFIG: 4,
    Status.FAILED_LOSS: 4,
    Status.FAILED_RUN: 5,
    Status.INVALID: 6,
}


@dataclass(frozen=True)
class Explanation:
    """What one status means, said once for every reader: ``meaning`` (docs/csv-schema.md's
    table, checked by a test), ``cause`` and ``fix`` (the console's "cells short of OK
    repetitions" lines), ``excluded`` (the report's threat line "X: N rows {excluded}; see
    Excluded data points."; empty for OK)."""

    meaning: str
    cause: str
    fix: str
    excluded: str


#: Every status explained (a new status is added here too; tests check that none is missing).
#: The order is the order of the report's threat lines.
EXPLAIN: dict[Status, Explanation] = {
    Status.OK: Explanation("counts in medians, ranges and verdicts", "", "", ""),
    Status.INVALID: Explanation(
        "CPU steal above 1 % during the run (all rows of that run)",
        "CPU steal above the plan's max_steal_pct",
        "run on a machine with less steal (kbench gate measures it under load), or raise retries or max_steal_pct in the plan",
        "invalid (steal above the limit)",
    ),
    Status.REJECTED: Explanation(
        "fixed-rate run whose achieved rate is more than 2 % off the target; the reason gives both",
        "the fixed rate was not held within 2 %",
        "lower the rate (rate, or auto_rate_fraction) or give the producer more CPU",
        "rejected (achieved rate off the target)",
    ),
    Status.NA: Explanation(
        "the row's metric could not be measured (CPU counter unreadable, no local broker pid, no latency from this "
        "transport), or CPU steal could not be measured during the run (all rows of that run)",
        "a needed figure was not measured",
        "see the reason (transport or CPU window)",
        "not measured (NA)",
    ),
    Status.FAILED_CPU_REGRESSED: Explanation(
        "a CPU counter went backwards (D, F)",
        "a CPU counter went backwards",
        "check the clock source and /proc of the roles",
        "failed: CPU counter regressed",
    ),
    Status.FAILED_LOSS: Explanation(
        "the consumer saw lost or duplicated records, or the producer had delivery errors",
        "records were lost or duplicated",
        "see the reason and run.log; check the brokers' logs",
        "failed: records lost or duplicated",
    ),
    Status.FAILED_RUN: Explanation(
        "the run could not complete (the reason is the error, secrets scrubbed)",
        "the run could not complete",
        "see the reason and run.log",
        "failed runs",
    ),
    Status.FAILED_TOPIC_CONFIG: Explanation(
        "the topic's `compression.type` did not read back as planned",
        "the topic's compression.type did not read back as planned",
        "check the brokers' config",
        "failed: the topic's compression.type did not read back as planned",
    ),
    Status.SATURATED: Explanation(
        "A: the repetition held its rate only by queueing — send delay p99, queue wait beyond `linger.ms`, or "
        "e2e p50 − corrected p50 above the plan's `saturation_bound_ms` (default 20); the reason names each signal "
        "with its figure and the bound. Not retried (docs/methodology.md §4)",
        "A: the pipeline fell behind its fixed rate (send delay, queue wait or consumer lag above saturation_bound_ms)",
        'lower the rate (a smaller auto_rate_fraction or "auto:F"); a rerun at the same rate saturates again',
        "saturated (the premise of a fixed-rate latency comparison broke: send delay, queue wait or consumer lag "
        "above saturation_bound_ms); no verdict uses them",
    ),
    Status.ABOVE_KNEE: Explanation(
        "A: the repetition's corrected p99 exceeds the plan's `knee_factor` (default 2) × its pipeline's latency floor "
        '(measured with `auto_rate_basis = "pipeline"`); the reason gives the p99, the factor, the floor and their '
        "product. Retried within the plan's budget (docs/methodology.md §2, §4)",
        "A: the corrected p99 exceeds knee_factor × the pipeline's latency floor (the rate is past the latency knee)",
        'lower the rate (a smaller auto_rate_fraction or "auto:F"), or raise knee_factor in the plan',
        "above the latency knee (corrected p99 above knee_factor × the pipeline's latency floor); no verdict uses them",
    ),
    Status.WARMING: Explanation(
        "A: the three saturation signals fired, but the per-second producer p99 fell from the window's first second "
        "and settled: the driver or cluster was still warming; the reason gives both p99s and the signals. Retried "
        "within the plan's budget",
        "A: the driver or cluster was still warming in the steady window (its per-second p99 fell, then settled)",
        "lengthen steady_skip_s or warmup_s in the plan; retries run on a warmer cluster",
        "still warming (per-second p99 fell from the window's first second, then settled); no verdict uses them",
    ),
    Status.SHORT_WINDOW: Explanation(
        "any: the judged window (producing window less the steady skip; G: the drain) is shorter than the plan's "
        "`min_window_s` (default 3 s); the reason gives the figure. Not retried",
        "the steady window (G: the drain) was shorter than the plan's min_window_s",
        "raise duration_s (G: backlog_bytes; the runner sizes it from the measured drain rate)",
        "short windows (steady window or drain below min_window_s); no verdict uses them",
    ),
}

#: Statuses of a run that the machine (steal, a tail in one window), a missed rate or a warm-up not
#: yet over caused: run again, within budget (a later attempt runs on a warmer cluster).
#: ``ABOVE_KNEE`` is among them: A runs at half the knee, where a p99 past knee_factor × floor is
#: mostly the host's tail in one window (GC, steal; seed000-testbed of 2026-12-03 had 3 of 25 A
#: repetitions past it at a rate below the floor's own probe rate); a rate truly past the knee
#: exhausts the budget and the cell ends short, which the console and report say.  ``SATURATED`` is
#: not: queueing at the rate recurs on a rerun (lower the rate instead; docs/methodology.md); nor is
#: ``SHORT_WINDOW``: the plan's durations (or G's backlog) set the window, a rerun is as short.
RETRY_STATUSES = frozenset({Status.INVALID, Status.REJECTED, Status.WARMING, Status.ABOVE_KNEE})


def parse_status(text: str) -> Status | None:
    """The status a CSV cell names, or None when it names none."""
    try:
        return Status(text)
    except ValueError:
        return None


def worst(statuses: Iterable[str]) -> str:
    """The most severe of ``statuses`` (OK when empty)."""
    return max(statuses, key=lambda s: SEVERITY.get(s, 0), default="OK")  # type: ignore[call-overload]


@dataclass
class Verdict:
    """A status and the reasons behind it (joined with '; ' in the CSV)."""

    status: str = Status.OK
    reasons: list[str] = field(default_factory=list)

    def add(self, status: str, reason: str) -> None:
        if SEVERITY[Status(status)] > SEVERITY[Status(self.status)]:
            self.status = status
        self.reasons.append(reason)

    def merged(self, other: Verdict) -> Verdict:
        v = Verdict(self.status, list(self.reasons))
        if SEVERITY[Status(other.status)] > SEVERITY[Status(v.status)]:
            v.status = other.status
        v.reasons += [r for r in other.reasons if r not in v.reasons]
        return v

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)
