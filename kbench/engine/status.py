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

__all__ = ["MISSING", "RETRY_STATUSES", "SEVERITY", "Status", "Verdict", "parse_status", "worst"]

#: A CSV cell whose value was not measured (never 0).
MISSING = "NA"


class Status(StrEnum):
    OK = "OK"
    NA = "NA"  # not measured: the row cannot be shown within the method
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
    Status.REJECTED: 2,
    Status.FAILED_CPU_REGRESSED: 3,
    Status.FAILED_TOPIC_CONFIG: 3,
    Status.FAILED_LOSS: 3,
    Status.FAILED_RUN: 4,
    Status.INVALID: 5,
}

#: Statuses of a run that the machine (steal) or the load (rate) caused: run again, within budget.
RETRY_STATUSES = frozenset({Status.INVALID, Status.REJECTED})


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
