"""What a testbed is made of: hosts with a CPU set, a CPU quota, a NIC rate and a delay.

A :class:`TestbedSpec` checks its own shape when made (names, numbers, the subnet); what depends
on the machine (do the CPUs exist, is netem built in, can a CPU quota be set) is checked by
:func:`kbench.testbed.env.check_spec` before anything is made.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass

from kbench.testbed.errors import TestbedError
from kbench.testbed.names import SWITCH

__all__ = ["DEFAULT_SUBNET", "HostSpec", "TestbedSpec", "spread_cpus"]

#: RFC 2544's range for benchmarking: never routed on the Internet.
DEFAULT_SUBNET = "198.18.0.0/15"
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,14}$")


@dataclass(frozen=True)
class HostSpec:
    """One emulated host.

    ``cpus``: the CPUs its processes may run on (affinity, and a cpuset where cgroups are writable);
    ``cpu_quota``: CPUs' worth of time per CFS period (e.g. 0.5), None for no quota;
    ``nic_rate_mbit``: its NIC's rate in each direction (tbf), None for unshaped;
    ``delay_ms``: one-way delay on its NIC (netem), None for none.
    """

    name: str
    cpus: tuple[int, ...]
    cpu_quota: float | None = None
    nic_rate_mbit: float | None = None
    delay_ms: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name) or self.name == SWITCH:
            raise TestbedError(
                f"bad host name {self.name!r}: use 1-15 characters of a-z, 0-9 and '-' "
                f"(not starting with '-', and not {SWITCH!r})"
            )
        cpus = tuple(self.cpus)
        if not cpus or any(not isinstance(c, int) or isinstance(c, bool) or c < 0 for c in cpus):
            raise TestbedError(f"host {self.name}: cpus must be a non-empty list of CPU numbers, got {self.cpus!r}")
        if len(set(cpus)) != len(cpus):
            raise TestbedError(f"host {self.name}: cpus {list(cpus)} lists a CPU twice; list each once")
        object.__setattr__(self, "cpus", tuple(sorted(cpus)))
        for field, value in (("cpu_quota", self.cpu_quota), ("nic_rate_mbit", self.nic_rate_mbit)):
            if value is not None and not (isinstance(value, int | float) and value > 0):
                raise TestbedError(f"host {self.name}: {field} must be a positive number or absent, got {value!r}")
        if self.cpu_quota is not None and self.cpu_quota > len(cpus):
            raise TestbedError(
                f"host {self.name}: cpu_quota {self.cpu_quota} exceeds its {len(cpus)} CPU(s); "
                f"lower the quota or give it more CPUs"
            )
        if self.nic_rate_mbit is not None and self.nic_rate_mbit < 0.1:
            raise TestbedError(f"host {self.name}: nic_rate_mbit {self.nic_rate_mbit} is below 0.1 Mbit/s; raise it")
        if self.delay_ms is not None and not (isinstance(self.delay_ms, int | float) and self.delay_ms >= 0):
            raise TestbedError(f"host {self.name}: delay_ms must be a number >= 0 or absent, got {self.delay_ms!r}")

    @property
    def wants_delay(self) -> bool:
        return bool(self.delay_ms)


@dataclass(frozen=True)
class TestbedSpec:
    """The hosts of a testbed and the subnet their addresses come from (hosts get the first /24)."""

    __test__ = False  # not a pytest test class, whatever its name says

    hosts: tuple[HostSpec, ...]
    subnet: str = DEFAULT_SUBNET

    def __post_init__(self) -> None:
        hosts = tuple(self.hosts)
        object.__setattr__(self, "hosts", hosts)
        if not hosts:
            raise TestbedError("a testbed needs at least one host; list them in the spec")
        names = [h.name for h in hosts]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise TestbedError(f"host name(s) {', '.join(dup)} used twice; give every host its own name")
        try:
            ipaddress.IPv4Network(self.subnet, strict=True)
        except ValueError as e:
            raise TestbedError(f"bad subnet {self.subnet!r}: {e}; use an IPv4 network such as {DEFAULT_SUBNET}") from e
        if len(hosts) > self.network.num_addresses - 2:
            raise TestbedError(
                f"{len(hosts)} hosts do not fit in {self.network} (room for {self.network.num_addresses - 2}); "
                f"use fewer hosts or a larger subnet"
            )

    @property
    def network(self) -> ipaddress.IPv4Network:
        """The hosts' link network: the subnet's first /24 (or the subnet itself when smaller)."""
        net = ipaddress.IPv4Network(self.subnet)
        return next(net.subnets(new_prefix=24)) if net.prefixlen < 24 else net

    def host(self, name: str) -> HostSpec:
        for h in self.hosts:
            if h.name == name:
                return h
        raise TestbedError(f"no host {name!r} in this testbed; its hosts are {', '.join(h.name for h in self.hosts)}")

    def address(self, name: str) -> ipaddress.IPv4Interface:
        """Host ``name``'s address with the link's prefix length (host i gets the network's i+1-th address)."""
        i = [h.name for h in self.hosts].index(self.host(name).name)
        net = self.network
        return ipaddress.IPv4Interface(f"{net.network_address + i + 1}/{net.prefixlen}")


def spread_cpus(n_hosts: int, cpus: Sequence[int]) -> list[tuple[int, ...]]:
    """CPU sets for ``n_hosts`` hosts, split as evenly as ``cpus`` allow.

    With at least as many CPUs as hosts, every host gets its own contiguous CPUs (the first hosts
    one more when they do not divide evenly); with fewer, each host gets one CPU, dealt round-robin,
    so hosts share CPUs as evenly as they can.
    """
    pool = sorted(set(cpus))
    if n_hosts < 1 or not pool:
        raise TestbedError(f"cannot spread {len(pool)} CPU(s) over {n_hosts} host(s); give at least one of each")
    if n_hosts > len(pool):
        return [(pool[i % len(pool)],) for i in range(n_hosts)]
    base, extra = divmod(len(pool), n_hosts)
    out: list[tuple[int, ...]] = []
    at = 0
    for i in range(n_hosts):
        k = base + (1 if i < extra else 0)
        out.append(tuple(pool[at : at + k]))
        at += k
    return out
