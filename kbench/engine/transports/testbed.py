"""The testbed transport: the local Kafka transport with every role on an emulated host.

Each broker, the producer and the consumer run on a host of their own (a network namespace on a
bridge, its own CPU set and, where the plan says, a shaped NIC; :mod:`kbench.testbed`,
docs/testbed.md).  kbench itself stays on the machine's network and reaches the brokers from the
producer's host; /proc sampling is unchanged (one pid namespace).  Over each repetition's broker
window every host's NIC bytes are read, so D shows measured network bytes per role, and next to
each broker's the byte counters Kafka itself keeps (its JMX exporter, scraped from its host).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from kbench.engine.transports.base import RunRequest, TransportError, TransportInfo
from kbench.engine.transports.kafka import KafkaTransport
from kbench.engine.transports.local_pool import LocalPool
from kbench.engine.transports.measure import Window
from kbench.install import pip_install
from kbench.kafka import metrics

__all__ = ["CLIENT_HOSTS", "TestbedTransport", "broker_host", "host_specs"]

T = TypeVar("T")

#: The client roles' hosts, in the order CPUs are dealt (producer and consumer first, so that on a
#: machine with fewer CPUs than hosts they land on different CPUs).
CLIENT_HOSTS = ("producer", "consumer")


def broker_host(node_id: int) -> str:
    """The host (and D's role) of broker ``node_id``."""
    return f"broker-{node_id}"


def host_specs(defn: Any, cpus: list[int]) -> list[Any]:
    """Every host of the plan's testbed: CPUs split as evenly as ``cpus`` allow."""
    from kbench.testbed import HostSpec, spread_cpus

    names = [*CLIENT_HOSTS, *(broker_host(i) for i in range(1, defn.brokers + 1))]
    sets = spread_cpus(len(names), cpus)
    out = []
    for name, cs in zip(names, sets, strict=True):
        rate = defn.client_nic_mbit if name in CLIENT_HOSTS else defn.broker_nic_mbit
        out.append(HostSpec(name, cs, None, rate, defn.delay_ms))
    return out


@dataclass
class TestbedTransport(KafkaTransport):
    __test__ = False  # not a pytest test class, whatever its name says

    kind: str = "testbed"
    testbed: Any = None  # kbench.testbed.Testbed while open

    def open(self) -> TransportInfo:
        try:
            from kbench.testbed import Testbed, TestbedError, TestbedSpec
        except ImportError as e:  # pyroute2 missing
            raise TransportError(f"testbed: {e}; install it with {pip_install('testbed')}") from None
        try:
            spec = TestbedSpec(tuple(host_specs(self.defn, sorted(os.sched_getaffinity(0)))))
            self.testbed = Testbed.create(spec)
        except TestbedError as e:
            raise TransportError(f"testbed: {e}") from None
        try:
            info = super().open()
        except BaseException:
            self.testbed.close()
            self.testbed = None
            raise
        described = self.testbed.describe()
        cpus = sorted(os.sched_getaffinity(0))
        described["cpu_split"] = f"{len(spec.hosts)} hosts on {len(cpus)} CPU(s) {cpus}: " + (
            "each host its own CPUs" if len(cpus) >= len(spec.hosts) else "hosts share CPUs, dealt round-robin"
        )
        extra = {**info.extra, "testbed": json.dumps(described, sort_keys=True)}
        return dataclasses.replace(info, extra=extra)

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self.testbed is not None:
                self.testbed.close()
                self.testbed = None

    # ------------------------------------------------------------------ what the testbed changes
    def _make_cluster(self) -> Any:
        from kbench.testbed.brokers import cluster_on

        hosts = [broker_host(i) for i in range(1, self.defn.brokers + 1)]
        return cluster_on(self.testbed, hosts, CLIENT_HOSTS[0])

    def _make_pool(self, tmp: Path) -> LocalPool:
        tb = self.testbed
        return LocalPool(tmp, self.defn.header_sample, launch=lambda role, argv, kw: tb.spawn(role, argv, **kw))

    def _reach(self, fn: Callable[[], T]) -> T:
        """Admin requests go from the producer's host: the brokers' addresses exist only there."""
        return self.testbed.call_in(CLIENT_HOSTS[0], fn)

    def _window(self, req: RunRequest) -> Window:
        w = super()._window(req)
        w.nic = self.testbed.nic_counters
        w.kafka = self._kafka_counters
        return w

    def _kafka_counters(self) -> dict[str, metrics.BrokerMetrics | metrics.MetricsError]:
        """Every broker's own metrics, scraped from inside its host: the exporter listens on the
        host's address, so the scrape stays on that host's loopback and never crosses the NIC
        whose bytes it is compared with."""
        out: dict[str, metrics.BrokerMetrics | metrics.MetricsError] = {}
        for b in self.cluster.state.brokers if self.cluster is not None and self.cluster.state else ():
            url = b.metrics_url
            if url is None:
                continue
            host = broker_host(b.node_id)

            def one(u: str = url) -> metrics.BrokerMetrics | metrics.MetricsError:
                try:
                    return metrics.scrape(u)
                except metrics.MetricsError as e:
                    return e

            out[host] = self.testbed.call_in(host, one)
        return out
