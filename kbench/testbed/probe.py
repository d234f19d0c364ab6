"""``python -m kbench.testbed.probe``: what this kernel's networking offers, tried in a throwaway namespace.

The process moves itself into a new, unnamed network namespace (it vanishes with the process, so
nothing is left behind whatever happens), makes a veth pair there, tries each qdisc kbench may use
on it, and prints one JSON line: ``{"netns": bool, "qdiscs": {"tbf": bool, "netem": bool}, "error": str}``.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from typing import Any

CLONE_NEWNET = 0x40000000
#: how each qdisc is tried (pyroute2 tc keyword arguments)
TRIALS: dict[str, dict[str, Any]] = {
    "tbf": {"rate": 125_000, "burst": 16_384, "limit": 65_536},
    "netem": {"delay": 1000},
}


def unshare_net() -> str:
    """Move this process into a new network namespace; '' on success, else the reason."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        return os.strerror(ctypes.get_errno())
    return ""


def run() -> dict[str, Any]:
    err = unshare_net()
    if err:
        return {"netns": False, "qdiscs": {}, "error": f"unshare(CLONE_NEWNET) failed: {err}"}
    try:
        from pyroute2 import IPRoute, NetlinkError
    except ImportError as e:
        return {"netns": True, "qdiscs": {}, "error": f"pyroute2 is not importable: {e}"}
    out: dict[str, bool] = {}
    try:
        with IPRoute() as ipr:
            for i, (kind, kwargs) in enumerate(TRIALS.items()):
                # a fresh veth pair per qdisc: each is tried as the root qdisc of an untouched link
                ipr.link("add", ifname=f"kbprobe{i}a", kind="veth", peer={"ifname": f"kbprobe{i}b"})
                idx = ipr.link_lookup(ifname=f"kbprobe{i}a")[0]
                ipr.link("set", index=idx, state="up")
                try:
                    ipr.tc("add", kind, index=idx, handle="1:", **kwargs)
                    out[kind] = True
                except NetlinkError:
                    out[kind] = False
    except (OSError, NetlinkError) as e:
        return {"netns": False, "qdiscs": out, "error": f"cannot make a veth pair in a new namespace: {e}"}
    return {"netns": True, "qdiscs": out, "error": ""}


def main() -> int:
    print(json.dumps(run()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
