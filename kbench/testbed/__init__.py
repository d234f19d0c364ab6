"""Emulated hosts on one Linux machine: network namespaces on a bridge, shaped NICs, CPU sets.

See docs/testbed.md.  Needs root and the ``testbed`` extra (pyroute2).
"""

from __future__ import annotations

from kbench.testbed.env import Environment, probe
from kbench.testbed.errors import TestbedError
from kbench.testbed.spec import DEFAULT_SUBNET, HostSpec, TestbedSpec, spread_cpus
from kbench.testbed.teardown import reap_stale
from kbench.testbed.testbed import Testbed

__all__ = [
    "DEFAULT_SUBNET",
    "Environment",
    "HostSpec",
    "Testbed",
    "TestbedError",
    "TestbedSpec",
    "probe",
    "reap_stale",
    "spread_cpus",
]
