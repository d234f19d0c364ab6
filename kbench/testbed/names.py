"""Names of what a testbed makes: every one carries the kbench prefix and the testbed's id.

A testbed id is 6 lowercase hex digits.  Network namespaces and cgroups are named
``kbench-<id>-<host>`` (the switch namespace ``kbench-<id>-switch``); interfaces, whose names the
kernel limits to 15 characters, are ``kb<id>h<i>`` (the host's end of host *i*'s veth pair, inside
the host's namespace), ``kb<id>s<i>`` (the switch's end) and ``kb<id>br`` (the bridge); each
interface's alias names the host.  Anything not matching these patterns is never touched.
"""

from __future__ import annotations

import re
import secrets

__all__ = [
    "PREFIX",
    "SWITCH",
    "bridge_name",
    "cgroup_name",
    "host_if",
    "is_ours",
    "netns_name",
    "new_id",
    "switch_if",
    "switch_netns",
]

PREFIX = "kbench"
SWITCH = "switch"
_ID = re.compile(r"^[0-9a-f]{6}$")
_OURS = re.compile(r"^kbench-(?P<id>[0-9a-f]{6})-[a-z0-9][a-z0-9-]{0,14}$")


def new_id() -> str:
    return secrets.token_hex(3)


def _check(tid: str) -> str:
    if not _ID.match(tid):
        raise ValueError(f"bad testbed id {tid!r}: 6 lowercase hex digits")
    return tid


def netns_name(tid: str, host: str) -> str:
    return f"{PREFIX}-{_check(tid)}-{host}"


def switch_netns(tid: str) -> str:
    return netns_name(tid, SWITCH)


def cgroup_name(tid: str, host: str) -> str:
    return f"{PREFIX}-{_check(tid)}-{host}"


def host_if(tid: str, index: int) -> str:
    return f"kb{_check(tid)}h{index}"


def switch_if(tid: str, index: int) -> str:
    return f"kb{_check(tid)}s{index}"


def bridge_name(tid: str) -> str:
    return f"kb{_check(tid)}br"


def is_ours(name: str, tid: str) -> bool:
    """True when ``name`` (a namespace or cgroup directory name) was made by testbed ``tid``."""
    m = _OURS.match(name)
    return m is not None and m.group("id") == tid
