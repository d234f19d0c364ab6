"""A producer's steady window (:class:`kbench.kafka.drivers.ProducerResult`): from ``cpu_skip``
seconds after the first due time (or first send) to the end of the flush, so that the process's
start-up, the connection and the first second of sending are outside it.  Its delivered messages
are those delivered after the window opened (the loop notes the count when it takes the CPU sample
that opens it); the delivered rate and the CPU per message are over that window alone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kbench.kafka.drivers_spec import ProducerResult

__all__ = ["STEADY_SKIP_S", "SendWindow", "send_window"]

#: Seconds after the first due time (saturated: the first send) before the steady window opens.
STEADY_SKIP_S = 1.0


@dataclass(frozen=True)
class SendWindow:
    window_s: float  # wall time of the window
    delivered: int  # messages delivered within it
    delivered_per_s: float
    cpu_us_per_msg: float  # the whole process (loop and librdkafka's threads) over the window
    loop_us_per_msg: float  # the loop thread alone
    client_us_per_msg: float  # librdkafka's threads
    cpu_pct: float  # the process's CPU over the window, % of one core

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def send_window(r: ProducerResult) -> SendWindow | None:
    """The steady window of a run made with ``cpu_skip`` >= 0; None when it never opened (a run
    shorter than the skip) or delivered nothing."""
    c = r.cpu
    if not c or "delivered_at_start" not in c or c["wall_s"] <= 0:
        return None
    n = r.delivered - int(c["delivered_at_start"])
    if n <= 0:
        return None
    cpu = c["usr_s"] + c["sys_s"]
    loop = c["loop_usr_s"] + c["loop_sys_s"]
    client = c["client_usr_s"] + c["client_sys_s"]
    return SendWindow(
        window_s=c["wall_s"],
        delivered=n,
        delivered_per_s=n / c["wall_s"],
        cpu_us_per_msg=cpu / n * 1e6,
        loop_us_per_msg=loop / n * 1e6,
        client_us_per_msg=client / n * 1e6,
        cpu_pct=100.0 * cpu / c["wall_s"],
    )
