"""The state file of a testbed: who made it and what it made, written before each thing is made.

``<runtime dir>/<id>.json`` (default ``/run/kbench/testbed``, a tmpfs: a reboot clears it along with
the namespaces and cgroups it lists) holds the creating process's pid and start time (a recycled
pid is not mistaken for the creator) and the namespaces and cgroups in the order they were made.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kbench.testbed.errors import TestbedError

__all__ = ["DEFAULT_RUNTIME_DIR", "Item", "State", "creator_alive", "load_all", "pid_start_time"]

DEFAULT_RUNTIME_DIR = Path("/run/kbench/testbed")


def pid_start_time(pid: int) -> int | None:
    """Field 22 of /proc/PID/stat (clock ticks after boot); None when the process is gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] == "Z":
        return None
    return int(fields[19])


@dataclass(frozen=True)
class Item:
    """One thing a testbed made: a network namespace (by name) or a cgroup directory (by path)."""

    kind: str  # "netns" or "cgroup"
    name: str


@dataclass
class State:
    id: str
    pid: int
    pid_start: int
    created_at: float
    items: list[Item] = field(default_factory=list)
    directory: Path = DEFAULT_RUNTIME_DIR

    @property
    def path(self) -> Path:
        return self.directory / f"{self.id}.json"

    @classmethod
    def new(cls, tid: str, directory: Path) -> State:
        start = pid_start_time(os.getpid())
        assert start is not None
        st = cls(tid, os.getpid(), start, time.time(), [], directory)
        st.write()
        return st

    def record(self, kind: str, name: str) -> None:
        """Add what is about to be made, and write the file before it is made."""
        self.items.append(Item(kind, name))
        self.write()

    def write(self) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            d = asdict(self)
            d.pop("directory")
            tmp.write_text(json.dumps(d, indent=2))
            os.replace(tmp, self.path)
        except OSError as e:
            raise TestbedError(f"cannot write the testbed state file {self.path}: {e.strerror}") from e

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)

    @classmethod
    def load(cls, path: Path) -> State:
        d = json.loads(path.read_text())
        d["items"] = [Item(**i) for i in d["items"]]
        return cls(**d, directory=path.parent)


def creator_alive(st: State) -> bool:
    return pid_start_time(st.pid) == st.pid_start


def load_all(directory: Path) -> list[tuple[Path, State | None]]:
    """Every state file in ``directory`` (None for one that cannot be read)."""
    if not directory.is_dir():
        return []
    out: list[tuple[Path, State | None]] = []
    for p in sorted(directory.glob("*.json")):
        try:
            out.append((p, State.load(p)))
        except (OSError, ValueError, TypeError, KeyError):
            out.append((p, None))
    return out
