"""One writer per run directory: an exclusive lock held for the life of a run.

``kbench run -o DIR`` and ``kbench run --resume DIR`` take an exclusive ``flock`` on
:data:`LOCK` inside the run directory before anything else is written there, and hold it until
the run ends; a second writer on the same directory is refused at once, with one line naming the
holder's pid (written into the lock file).  A new run directory is created with one
``mkdir`` (atomic: of two commands racing, one makes it), and after the lock is taken it must
still be empty apart from the lock: a run that finished between another command's checks and
its lock is found there, so exactly one of two writers started together runs.

The lock file is removed when the run ends (the directory is left as the run made it).  A lock
taken on a file another process has just removed is detected (its inode is no longer the path's)
and taken again, so two writers can never hold two different files of one path.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["LOCK", "RunDirBusy", "holding", "is_empty"]

#: The lock file of a run directory (hidden; present only while a run writes there).
LOCK = ".kbench.lock"


class RunDirBusy(ValueError):
    """Another kbench process writes to this run directory (a one-line refusal)."""


def is_empty(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds nothing but (possibly) its lock file."""
    return all(p.name == LOCK for p in run_dir.iterdir())


def _holder(path: Path, ino: int) -> str | None:
    """Who holds the lock of ``path``'s inode ``ino``: the pid the kernel lists for it in /proc/locks
    (the holder may not have written its pid into the file yet), else the pid in the file; None
    when no process holds it any more (it ended and removed the file between two looks)."""
    try:
        if os.stat(path, follow_symlinks=False).st_ino != ino:
            return None
        with open("/proc/locks") as f:
            for line in f:
                parts = line.split()
                if (
                    "FLOCK" in parts
                    and "->" not in parts
                    and len(parts) > 5
                    and parts[5].rsplit(":", 1)[-1] == str(ino)
                ):
                    return f"kbench pid {parts[4]}"
        text = path.read_text(errors="replace")[:32].strip()
    except FileNotFoundError:
        return None
    except OSError:
        return "another process"
    return f"kbench pid {text}" if text.isdigit() else "another process"


def _acquire(run_dir: Path, flag: str) -> int:
    path = run_dir / LOCK
    for _ in range(100):
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            ino = os.fstat(fd).st_ino
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                holder = _holder(path, ino)
                if holder is None:  # the holder ended (and removed its lock) meanwhile: try again
                    continue
                raise RunDirBusy(
                    f"{flag} {run_dir}: in use by {holder} (it holds {LOCK}); wait for it to end or choose another directory"
                ) from None
            raise
        try:
            same = os.fstat(fd).st_ino == os.stat(path, follow_symlinks=False).st_ino
        except FileNotFoundError:
            same = False
        if same:
            try:  # the holder's pid, for the refusal of a second writer (a full disk leaves it out)
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
            except OSError:
                pass
            return fd
        os.close(fd)  # the holder removed the file after we opened it: take the new one
    raise RunDirBusy(f"{flag} {run_dir}: its lock keeps changing hands; try again")


@contextmanager
def holding(run_dir: Path, new: bool) -> Iterator[bool]:
    """Hold ``run_dir``'s lock for the ``with`` block; yields whether this call created the directory.

    ``new`` (``run -o``): the directory is created here (parents too) when missing, and must be
    empty once locked.  Otherwise (``--resume``) it must exist."""
    flag = "-o" if new else "--resume"
    created = False
    if new:
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        try:
            run_dir.mkdir()
            created = True
        except FileExistsError:
            pass
    fd = _acquire(run_dir, flag)
    try:
        if new and not is_empty(run_dir):
            raise RunDirBusy(
                f"-o {run_dir}: directory is not empty (another run wrote there first); choose another -o "
                f"or continue it with --resume {run_dir}"
            )
        yield created
    finally:
        try:
            os.unlink(run_dir / LOCK)
        except OSError:
            pass
        os.close(fd)
