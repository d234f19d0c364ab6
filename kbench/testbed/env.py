"""What this machine offers a testbed, found before anything is made, and the checks against it.

:func:`probe` gathers an :class:`Environment` (root, pyroute2, network namespaces and the qdiscs
that work in one, the CPUs this process may use, the cgroup layout); :func:`require` and
:func:`check_spec` turn what is missing into a one-line :class:`TestbedError` naming the fix.
Tests inject an Environment to simulate a machine that lacks something.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from kbench.install import pip_install
from kbench.testbed import cgroups
from kbench.testbed import probe as probe_module
from kbench.testbed.errors import TestbedError
from kbench.testbed.spec import TestbedSpec

__all__ = ["Environment", "check_spec", "probe", "require"]


@dataclass(frozen=True)
class Environment:
    """The facilities a testbed needs, as found on this machine."""

    root: bool
    pyroute2: str | None  # its version; None when it cannot be imported
    netns: bool
    netns_note: str = ""  # why namespaces do not work
    qdiscs: frozenset[str] = field(default_factory=frozenset)  # the qdiscs that could be added in a namespace
    cpus: frozenset[int] = field(default_factory=frozenset)  # os.sched_getaffinity(0)
    cgroups: cgroups.CgroupLayout = field(default_factory=lambda: cgroups.CgroupLayout(0))


def _pyroute2_version() -> str | None:
    try:
        import pyroute2
    except ImportError:
        return None
    return str(getattr(pyroute2, "__version__", "unknown"))


def _probe_net(timeout: float = 30.0) -> tuple[bool, str, frozenset[str]]:
    try:
        r = subprocess.run(
            # by path: the probe imports nothing of kbench, so whichever kbench a child would find does not matter
            [sys.executable, str(Path(probe_module.__file__))],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        out = json.loads(r.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError) as e:
        return False, f"the namespace probe failed: {e}", frozenset()
    qdiscs = frozenset(k for k, ok in out.get("qdiscs", {}).items() if ok)
    return bool(out.get("netns")), str(out.get("error", "")), qdiscs


def probe() -> Environment:
    """This machine's Environment.  Without root or pyroute2 the namespace probe is not tried."""
    root = os.geteuid() == 0
    version = _pyroute2_version()
    if root and version is not None:
        netns, note, qdiscs = _probe_net()
    else:
        netns, note, qdiscs = False, "not probed", frozenset()
    return Environment(
        root=root,
        pyroute2=version,
        netns=netns,
        netns_note=note,
        qdiscs=qdiscs,
        cpus=frozenset(os.sched_getaffinity(0)),
        cgroups=cgroups.detect(),
    )


def require(env: Environment) -> None:
    """Root, pyroute2 and network namespaces, or a one-line TestbedError naming what is missing."""
    if not env.root:
        raise TestbedError(
            "the testbed needs root (network namespaces, veth links, qdiscs and cgroups); run kbench as root, "
            "or use another transport"
        )
    if env.pyroute2 is None:
        raise TestbedError(f"the testbed needs the Python package pyroute2; install it with: {pip_install('testbed')}")
    if not env.netns:
        raise TestbedError(
            f"network namespaces do not work here ({env.netns_note}); the testbed needs a kernel with "
            f"CONFIG_NET_NS and veth, and a process allowed to unshare (root outside a restricted container)"
        )
    if "tbf" not in env.qdiscs:
        raise TestbedError("the tbf qdisc is not available in this kernel (CONFIG_NET_SCH_TBF); it shapes NIC rates")


def check_spec(spec: TestbedSpec, env: Environment) -> None:
    """What ``spec`` asks of the machine, against what ``env`` found; a one-line TestbedError if it cannot be had."""
    for h in spec.hosts:
        missing = sorted(set(h.cpus) - env.cpus)
        if missing:
            raise TestbedError(
                f"host {h.name}: CPU(s) {','.join(map(str, missing))} do not exist for this process "
                f"(usable: {','.join(map(str, sorted(env.cpus)))}); give the host CPUs from that list"
            )
        if h.wants_delay and "netem" not in env.qdiscs:
            raise TestbedError(
                f"host {h.name}: delay_ms = {h.delay_ms} needs the netem qdisc, which this kernel lacks "
                f"(CONFIG_NET_SCH_NETEM); drop the delay or run on a kernel with netem"
            )
        if h.cpu_quota is not None and not env.cgroups.can_quota:
            raise TestbedError(
                f"host {h.name}: cpu_quota needs a writable cgroup cpu controller, and here "
                f"{env.cgroups.note or 'there is none'}; drop cpu_quota and size the host by its CPU set"
            )
