"""The testbed's network, made over netlink with pyroute2 (no ``ip`` output is parsed).

Layout: a "switch" namespace holds a bridge; every host has a namespace joined to the bridge by a
veth pair (the host's end carries its address, the switch's end is a bridge port).  Loopback is up
everywhere; no namespace has a default route, so traffic can only reach the other hosts.  A NIC
rate is a tbf qdisc on the host's end (its egress) and one on the switch's end (the host's ingress).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbench.testbed import names
from kbench.testbed.errors import TestbedError
from kbench.testbed.spec import HostSpec

__all__ = [
    "NETNS_DIR",
    "HostLink",
    "add_host",
    "create_netns",
    "kill_netns_pids",
    "LinkCounters",
    "list_netns",
    "make_switch",
    "netns_pids",
    "remove_netns",
    "tbf_params",
]

NETNS_DIR = Path("/run/netns")
#: the queue a tbf keeps, in seconds of its rate
TBF_QUEUE_S = 0.05


@dataclass(frozen=True)
class HostLink:
    """A host's end of its veth pair, as made."""

    netns: str
    ifname: str
    address: str  # with prefix length, e.g. 198.18.0.1/24


def tbf_params(rate_mbit: float) -> dict[str, int]:
    """tbf settings for a rate: bytes/s, a burst of 10 ms of the rate (>= 16 KiB), a 50 ms queue."""
    rate = int(rate_mbit * 1e6 / 8)
    burst = max(16_384, rate // 100)
    return {"rate": rate, "burst": burst, "limit": burst + int(rate * TBF_QUEUE_S)}


def list_netns() -> list[str]:
    try:
        return sorted(p.name for p in NETNS_DIR.iterdir())
    except FileNotFoundError:
        return []


def create_netns(name: str) -> None:
    from pyroute2 import netns

    try:
        netns.create(name)
    except OSError as e:
        raise TestbedError(f"cannot create network namespace {name}: {e}") from e


def netns_pids(name: str) -> list[int]:
    """The processes whose network namespace is ``name`` (scanned in /proc)."""
    try:
        st = os.stat(NETNS_DIR / name)
    except OSError:
        return []
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            s = os.stat(p / "ns" / "net")
        except OSError:
            continue
        if (s.st_dev, s.st_ino) == (st.st_dev, st.st_ino):
            out.append(int(p.name))
    return out


def kill_netns_pids(name: str, timeout: float = 10.0) -> None:
    """SIGKILL every process in namespace ``name`` and wait until none is left."""
    deadline = time.monotonic() + timeout
    while True:
        pids = [p for p in netns_pids(name) if p != os.getpid()]
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if time.monotonic() > deadline:
            raise TestbedError(f"processes {pids} in network namespace {name} survive SIGKILL; see ps -p")
        time.sleep(0.05)  # they are exiting


def remove_netns(name: str) -> None:
    """Kill what runs in namespace ``name`` and remove it; its links and qdiscs go with it."""
    from pyroute2 import netns

    if name not in list_netns():
        return
    kill_netns_pids(name)
    try:
        netns.remove(name)
    except OSError as e:
        raise TestbedError(f"cannot remove network namespace {name}: {e}; remove it with: ip netns del {name}") from e


def _ipr(ns: str) -> Any:
    from pyroute2 import IPRoute

    return IPRoute(netns=ns, flags=0)  # never create a namespace that is not there


def _up(ipr: Any, ifname: str) -> int:
    idx = ipr.link_lookup(ifname=ifname)[0]
    ipr.link("set", index=idx, state="up")
    return int(idx)


def _shape(ipr: Any, index: int, host: HostSpec) -> None:
    if host.wants_delay:
        # netem on the root; tbf, when a rate is set too, below it
        ipr.tc("add", "netem", index=index, handle="1:", delay=int(float(host.delay_ms or 0) * 1000))
        if host.nic_rate_mbit is not None:
            ipr.tc("add", "tbf", index=index, handle="10:", parent="1:1", **tbf_params(host.nic_rate_mbit))
    elif host.nic_rate_mbit is not None:
        ipr.tc("add", "tbf", index=index, handle="1:", **tbf_params(host.nic_rate_mbit))


def make_switch(tid: str) -> None:
    """In the (already made) switch namespace: loopback up, the bridge up."""
    from pyroute2 import NetlinkError

    try:
        with _ipr(names.switch_netns(tid)) as ipr:
            _up(ipr, "lo")
            ipr.link("add", ifname=names.bridge_name(tid), kind="bridge")
            ipr.link("set", index=ipr.link_lookup(ifname=names.bridge_name(tid))[0], ifalias=f"kbench {tid} switch")
            _up(ipr, names.bridge_name(tid))
    except NetlinkError as e:
        raise TestbedError(f"cannot make the bridge of testbed {tid}: {e}") from e


def add_host(tid: str, index: int, host: HostSpec, address: str) -> HostLink:
    """Join the (already made) namespace of ``host`` to the bridge, address and shape it."""
    from pyroute2 import NetlinkError

    ns = names.netns_name(tid, host.name)
    hif, sif = names.host_if(tid, index), names.switch_if(tid, index)
    ip, plen = address.split("/")
    try:
        fd = os.open(NETNS_DIR / ns, os.O_RDONLY)
        try:
            with _ipr(names.switch_netns(tid)) as sw:
                # the pair is made in the switch namespace with its host end created in the host's
                sw.link("add", ifname=sif, kind="veth", peer={"ifname": hif, "net_ns_fd": fd})
                s_idx = sw.link_lookup(ifname=sif)[0]
                br = sw.link_lookup(ifname=names.bridge_name(tid))[0]
                sw.link("set", index=s_idx, master=br, ifalias=f"kbench {tid} port of {host.name}")
                _up(sw, sif)
                if host.nic_rate_mbit is not None:  # the host's ingress: the switch port's egress
                    sw.tc("add", "tbf", index=s_idx, handle="1:", **tbf_params(host.nic_rate_mbit))
        finally:
            os.close(fd)
        with _ipr(ns) as h:
            _up(h, "lo")
            h_idx = h.link_lookup(ifname=hif)[0]
            h.link("set", index=h_idx, ifalias=f"kbench {tid} host {host.name}")
            h.addr("add", index=h_idx, address=ip, prefixlen=int(plen))
            _up(h, hif)
            _shape(h, h_idx, host)
            routes = [r for r in h.get_routes(family=2) if r.get("dst_len") == 0 and r.get("table") == 254]
            if routes:
                raise TestbedError(f"namespace {ns} has a default route; the testbed must never route off the machine")
    except NetlinkError as e:
        raise TestbedError(f"cannot make the link of host {host.name} (testbed {tid}): {e}") from e
    return HostLink(ns, hif, address)


class LinkCounters:
    """The byte counters of interface ``ifname`` in namespace ``ns``, over a netlink socket kept open.

    The socket lives in the namespace (it keeps the namespace alive): :meth:`close` it before the
    namespace is removed.  Reads are serialised (one socket, any thread).
    """

    def __init__(self, ns: str, ifname: str) -> None:
        from pyroute2 import NetlinkError

        self.ns, self.ifname = ns, ifname
        self._lock = threading.Lock()
        try:
            self._ipr = _ipr(ns)
        except (NetlinkError, OSError) as e:
            raise TestbedError(f"cannot open a netlink socket in {ns}: {e}") from e

    def read(self) -> tuple[int, int]:
        """(tx_bytes, rx_bytes): netlink's 64-bit stats of the interface."""
        from pyroute2 import NetlinkError

        with self._lock:
            if self._ipr is None:
                raise TestbedError(f"the counters of {self.ifname} in {self.ns} are closed; was the testbed closed?")
            try:
                links = self._ipr.get_links(ifname=self.ifname)
            except (NetlinkError, OSError) as e:
                raise TestbedError(f"cannot read the counters of {self.ifname} in {self.ns}: {e}") from e
        if not links:
            raise TestbedError(f"no interface {self.ifname} in {self.ns}; was the testbed closed?")
        stats = links[0].get("IFLA_STATS64")
        return int(stats["tx_bytes"]), int(stats["rx_bytes"])

    def close(self) -> None:
        with self._lock:
            ipr, self._ipr = self._ipr, None
        if ipr is not None:
            ipr.close()
