"""Kafka brokers on testbed hosts: a :class:`~kbench.kafka.cluster.LocalCluster` whose node i runs on
``broker_hosts[i-1]`` (spawned in that host's namespace, cgroup and CPU set), listens on and
advertises that host's address, and is checked for readiness from ``client_host``'s network.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from typing import Any

from kbench.kafka.cluster import LocalCluster
from kbench.testbed.errors import TestbedError
from kbench.testbed.testbed import Testbed

__all__ = ["cluster_on"]


def cluster_on(tb: Testbed, broker_hosts: Sequence[str], client_host: str, **cluster_kwargs: Any) -> LocalCluster:
    """A LocalCluster of ``len(broker_hosts)`` nodes placed on the testbed (not started yet)."""
    hosts = list(broker_hosts)
    if len(set(hosts)) != len(hosts):
        raise TestbedError(f"broker hosts {hosts} repeat a host; give every broker its own host")
    if client_host in hosts:
        raise TestbedError(f"client host {client_host} is also a broker host; give clients a host of their own")
    for h in [*hosts, client_host]:
        tb.address(h)  # an unknown host is named here, before any JVM starts

    def launch(node_id: int, argv: list[str], kwargs: dict[str, Any]) -> subprocess.Popen[bytes]:
        return tb.spawn(hosts[node_id - 1], argv, **kwargs)

    def reach(fn: Callable[[], Any]) -> Any:
        return tb.call_in(client_host, fn)

    return LocalCluster(
        brokers=len(hosts),
        hosts=[tb.address(h) for h in hosts],
        launcher=launch,
        reach=reach,
        **cluster_kwargs,
    )
