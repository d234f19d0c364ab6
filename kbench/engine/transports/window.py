"""The payload of one role's CPU window, from the producer's schedule (docs/methodology.md §3).

CPU-s/GB divides a role's CPU by the payload of exactly the window in which that CPU was
sampled.  The windows start at different instants (each role's own ``steady_skip_s`` mark)
and run to the end of that role's work, so the payload of a window is the payload of the
messages from the first one that falls in it to the last one sent:

- fixed rate: message *i* is due at ``t0 + i/rate`` (the schedule the producer holds; a run
  off it by more than 2 % is REJECTED), so the first message of a window starting at *t* is
  ``ceil((t - t0) * rate)``;
- saturated: the messages are spread over the send span (first to last send) in proportion
  to time, an estimate;
- a role that sees a message later than its send time (the consumer fetches it after its
  end-to-end latency, the broker stores it before its acknowledgement) shifts the window
  start back by that role's median latency.

The corpus' records are sent cycled in order, so a message's size is its record's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Schedule"]


@dataclass(frozen=True)
class Schedule:
    """When the producer's messages were due (or sent) and how big each one was."""

    prefix: tuple[int, ...]  # prefix sums of the corpus' record sizes (len = records + 1)
    sent: int
    delivered: int
    t0_ns: int  # first due time (fixed rate) or first send (saturated)
    last_ns: int  # last send
    rate: float | None  # msgs/s; None = saturated

    @classmethod
    def of(
        cls, sizes: Sequence[int], sent: int, delivered: int, t0_ns: int, last_ns: int, rate: float | None
    ) -> Schedule:
        prefix = [0]
        for n in sizes:
            prefix.append(prefix[-1] + n)
        return cls(tuple(prefix), sent, delivered, t0_ns, last_ns, rate)

    def _upto(self, k: int) -> int:
        """Payload of messages 0..k-1 (records cycled)."""
        n = len(self.prefix) - 1
        return (k // n) * self.prefix[n] + self.prefix[k % n]

    def payload(self, first: int, end: int) -> int:
        """Payload of messages ``first`` .. ``end - 1``."""
        return self._upto(end) - self._upto(first) if end > first else 0

    def first_at(self, t_ns: int) -> int:
        """Index of the first message due (or sent) at or after ``t_ns``."""
        if self.rate:
            i = math.ceil((t_ns - self.t0_ns) * self.rate / 1e9)
        elif self.last_ns > self.t0_ns:
            i = math.ceil(self.sent * (t_ns - self.t0_ns) / (self.last_ns - self.t0_ns))
        else:
            i = 0 if t_ns <= self.t0_ns else self.sent
        return min(max(i, 0), self.sent)

    def window_payload(self, start_ns: int, lag_ns: int = 0) -> int:
        """Payload of the window that starts at ``start_ns`` and runs past the last message,
        for a role that sees each message ``lag_ns`` after its send time; delivered
        messages only (when some were not, in proportion)."""
        b = self.payload(self.first_at(start_ns - lag_ns), self.sent)
        if self.sent and self.delivered < self.sent:
            b = int(b * self.delivered / self.sent)
        return b
