"""Removing what a testbed made, from its state file: now (close) or after its creator died (reap).

Only what the state file lists *and* what carries the kbench prefix with that testbed's id is
touched (a namespace ``kbench-<id>-*`` in /run/netns, a cgroup directory ``kbench-<id>-*`` directly
under a cgroup hierarchy's root): a damaged or foreign state file cannot make kbench remove anything
else.  Cgroups go first (their processes are killed), then the hosts' namespaces (what still runs
in them is killed), then the switch's.
"""

from __future__ import annotations

from pathlib import Path

from kbench.testbed import cgroups, names, network
from kbench.testbed.errors import TestbedError
from kbench.testbed.state import DEFAULT_RUNTIME_DIR, State, creator_alive, load_all

__all__ = ["reap_stale", "teardown"]


def _owned_cgroup(path: Path, tid: str, layout: cgroups.CgroupLayout) -> bool:
    return names.is_ours(path.name, tid) and path.parent in layout.roots


def teardown(st: State, layout: cgroups.CgroupLayout | None = None) -> list[str]:
    """Remove everything ``st`` lists; returns the problems (empty: all gone, state file deleted)."""
    layout = layout or cgroups.detect()
    problems: list[str] = []
    ordered = [i for i in reversed(st.items) if i.kind == "cgroup"] + [
        i for i in reversed(st.items) if i.kind == "netns"
    ]
    for item in ordered:
        try:
            if item.kind == "cgroup":
                if _owned_cgroup(Path(item.name), st.id, layout):
                    cgroups.remove(Path(item.name))
                else:
                    problems.append(f"not removing {item.name}: not a kbench cgroup of testbed {st.id}")
            elif item.kind == "netns":
                if names.is_ours(item.name, st.id):
                    network.remove_netns(item.name)
                else:
                    problems.append(f"not removing namespace {item.name}: not one of testbed {st.id}")
            else:
                problems.append(f"unknown item kind {item.kind!r} in {st.path}")
        except TestbedError as e:
            problems.append(str(e))
    if not problems:
        st.delete()
    return problems


def reap_stale(runtime_dir: Path | str = DEFAULT_RUNTIME_DIR) -> list[str]:
    """Remove the leftovers of every testbed whose creating process is dead (e.g. after SIGKILL).

    Returns the ids reaped.  Testbeds whose creator still runs are left alone; a state file that
    cannot be read, or leftovers that cannot be removed, raise one TestbedError naming them.
    """
    reaped: list[str] = []
    problems: list[str] = []
    layout = cgroups.detect()
    for path, st in load_all(Path(runtime_dir)):
        if st is None:
            problems.append(f"unreadable testbed state file {path}; inspect and remove it")
            continue
        if creator_alive(st):
            continue
        p = teardown(st, layout)
        if p:
            problems.extend(p)
        else:
            reaped.append(st.id)
    if problems:
        raise TestbedError("stale testbed leftovers remain: " + "; ".join(problems))
    return reaped
