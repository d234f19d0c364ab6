"""The topology a machine can carry (docs/testbed.md, docs/methodology.md §2).

A plan with ``fit_topology = true`` runs its own topology only where the machine has a CPU for
every host it puts on it; otherwise one broker (replication factor 1).  Why: seed 000's five
hosts emulated on a 2-vCPU machine (three broker JVMs, a producer and a consumer sharing two CPUs)
put a tail of 20–540 ms under every codec (seed000-testbed 2026-12-01/02: p99 131–399 ms, 3 s at
low rates while cold), while one broker on the same testbed gives p99 3.8–7.0 ms at 20,000–60,000
msgs/s (knee-testbed 2026-12-01): the three-broker numbers measure the CPUs' contention, not the
codecs.  The run's latency floor (kbench.engine.knee) is the measurement that backs the choice: it
is recorded beside it, and a floor that never settles says the topology is still too much.

The choice, its reason and the CPUs counted go to the console, the manifest (``topology``) and
the report.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

__all__ = ["Choice", "choose", "cpus", "hosts"]


class _Transport(Protocol):
    @property
    def kind(self) -> str: ...
    @property
    def brokers(self) -> int: ...
    @property
    def replication_factor(self) -> int: ...
    @property
    def min_insync_replicas(self) -> int | None: ...


T = TypeVar("T", bound=_Transport)

#: The client hosts every topology has besides its brokers: a producer and a consumer.
CLIENT_HOSTS = 2


@dataclass(frozen=True)
class Choice:
    """The topology a run uses: brokers, replication, the hosts it needs and the CPUs it had."""

    brokers: int
    replication_factor: int
    min_insync_replicas: int | None
    hosts: int
    cpus: int
    planned_brokers: int
    reason: str

    @property
    def reduced(self) -> bool:
        return self.brokers < self.planned_brokers

    def describe(self) -> str:
        rf = f", RF {self.replication_factor}" if self.brokers > 1 else ""
        return f"{self.brokers} broker{'s' if self.brokers > 1 else ''}{rf}: {self.reason}"

    def as_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "reduced": self.reduced, "summary": self.describe()}


def hosts(t: _Transport) -> int:
    """The hosts (roles that each want a CPU) a topology runs: its brokers and the two clients."""
    return t.brokers + CLIENT_HOSTS


def cpus() -> int:
    """The CPUs this process may run on (a container's or cgroup's affinity, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def choose(t: T, ncpus: int) -> tuple[T, Choice]:
    """The transport to run (``t``, or one broker with RF 1 when the machine has fewer CPUs than
    the topology's hosts) and the choice with its reason."""
    need = hosts(t)
    if t.brokers <= 1:
        why = (
            f"the smallest topology (one broker, a producer and a consumer: {need} hosts on {ncpus} CPUs"
            + (", sharing them" if ncpus < need else "")
            + ")"
        )
        return t, Choice(t.brokers, t.replication_factor, t.min_insync_replicas, need, ncpus, t.brokers, why)
    if ncpus >= need:
        why = (
            f"{ncpus} CPUs carry the plan's {need} hosts ({t.brokers} brokers, a producer and a consumer), one CPU each"
        )
        return t, Choice(t.brokers, t.replication_factor, t.min_insync_replicas, need, ncpus, t.brokers, why)
    small = dataclasses.replace(t, brokers=1, replication_factor=1, min_insync_replicas=None)  # type: ignore[type-var]
    why = (
        f"this machine has {ncpus} CPUs for the plan's {need} hosts ({t.brokers} brokers with RF "
        f"{t.replication_factor}, a producer and a consumer): the brokers would compete with the clients for the CPUs "
        f"and acks would measure that contention (tens to hundreds of ms); one broker (RF 1) instead, "
        f"{hosts(small)} hosts"
    )
    return small, Choice(1, 1, None, hosts(small), ncpus, t.brokers, why)
