"""What a path is, in words, for one-line errors about files given on the command line or in a plan.

``/dev/zero``, a FIFO or a directory given where a regular file is expected must be named as
such ("is a character device"), not reported as "not found": reading them blocks or never ends.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

__all__ = ["not_a_regular_file", "output_file_problem"]


def not_a_regular_file(path: Path | str) -> str | None:
    """None for an existing regular file (symlinks followed), else why it is not one:
    ``"does not exist"``, ``"is a directory"``, ``"is a FIFO (named pipe)"``, ..."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "does not exist"
    except NotADirectoryError:
        return "does not exist (a parent is a file)"
    except PermissionError:
        return "cannot be read (permission denied)"
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory"
    if stat.S_ISFIFO(mode):
        return "is a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "is a character device"
    if stat.S_ISBLK(mode):
        return "is a block device"
    if stat.S_ISSOCK(mode):
        return "is a socket"
    return "is not a regular file"


def output_file_problem(path: Path | str) -> str | None:
    """None when a file can be written (atomically, via a temporary file beside it) at ``path``,
    else why not: an existing directory or device, a missing or read-only parent directory."""
    p = Path(path)
    if p.exists() or p.is_symlink():
        why = not_a_regular_file(p)
        if why is not None:
            return why
    parent = p.absolute().parent
    if not parent.exists():
        return f"its directory {parent} does not exist"
    if not parent.is_dir():
        return f"{parent} is not a directory"
    try:  # a probe beside it: catches read-only mounts, /proc, /sys, quotas
        fd, probe = tempfile.mkstemp(prefix=f".{p.name}.probe", dir=parent)
    except OSError as e:
        return f"cannot create a file in {parent} ({e.strerror})"
    os.close(fd)
    os.unlink(probe)
    return None
