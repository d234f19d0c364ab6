"""What a path is, in words, for one-line errors about files given on the command line or in a plan.

``/dev/zero``, a FIFO or a directory given where a regular file is expected must be named as
such ("is a character device"), not reported as "not found": reading them blocks or never ends.

And the one rule for every file a command writes (``-o``): a file of a run
directory (a directory holding a kbench ``manifest.json``, or one below it) is never replaced by a
command that did not make the run (``kbench report -o`` keeps its own, stricter ownership marker);
new files may be added there (``kbench codecs bench -o RUN/M.csv``).  Files are written by
:func:`atomic_write`: a temporary file beside the target, renamed over it, and removed when
anything fails, so a full disk leaves neither a half-written file nor a temporary one.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "atomic_stream",
    "atomic_write",
    "check_output_file",
    "default_cluster_dir",
    "not_a_regular_file",
    "output_file_problem",
    "run_directory_of",
]

#: The file that makes a directory a run directory (kbench.engine.manifest.MANIFEST).
RUN_MANIFEST = "manifest.json"


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


def _is_kbench_manifest(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            data = json.loads(f.read(64 << 20))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "schema_version" in data and "run_id" in data


def run_directory_of(path: Path | str) -> Path | None:
    """The run directory ``path`` lies in (its own directory or an ancestor holds a kbench
    ``manifest.json``), or None."""
    for d in Path(path).absolute().parents:
        m = d / RUN_MANIFEST
        if m.is_file() and _is_kbench_manifest(m):
            return d
    return None


def output_file_problem(path: Path | str) -> str | None:
    """None when a file can be written (atomically, via a temporary file beside it) at ``path``,
    else why not: an existing directory or device, a file of a run directory, a missing or
    read-only parent directory."""
    p = Path(path)
    if p.exists() or p.is_symlink():
        why = not_a_regular_file(p)
        if why is not None:
            return why
        run = run_directory_of(p)
        if run is not None:
            return (
                f"is a file of the run directory {run} (it holds a kbench manifest.json) and kbench never "
                "replaces a run's files"
            )
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


def check_output_file(flag: str, path: Path | str) -> None:
    """Refuse (ValueError, one line naming ``flag``, the problem and the fix) a file that
    :func:`output_file_problem` says cannot or must not be written."""
    why = output_file_problem(path)
    if why is None:
        return
    shown = os.fsencode(str(path)).decode("utf-8", "replace")
    fix = (
        "choose a new file name or another directory"
        if "run directory" in why
        else "give a file path in a writable directory"
    )
    raise ValueError(f"{flag} {shown}: {why}; {fix}")


def atomic_write(path: Path | str, data: bytes) -> Path:
    """Replace ``path`` with ``data`` durably: a per-process temporary file beside it, fsynced,
    renamed over it.  On any failure the temporary file is removed and the old file is left as
    it was; a full disk is an OSError naming ``path`` (ENOSPC, "no space left on the disk of ...")."""
    p = Path(path)
    with atomic_stream(p) as f:
        f.write(data)
    try:
        dfd = os.open(p.parent, os.O_RDONLY)
    except OSError:
        return p
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    return p


@contextmanager
def atomic_stream(path: Path | str) -> Iterator[BinaryIO]:
    """:func:`atomic_write` for data written piece by piece: a temporary file beside ``path``,
    renamed over it when the ``with`` block ends normally, removed otherwise."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.tmp{os.getpid()}")
    try:
        with tmp.open("wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(p)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            raise OSError(e.errno, os.strerror(e.errno), str(p)) from None
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def cache_dir() -> Path:
    """kbench's cache directory, the one rule: ``$KBENCH_CACHE``, else ``$XDG_CACHE_HOME/kbench``,
    else ``~/.cache/kbench`` (Kafka's jars, the Java and Go drivers, experiment M's speed tables)."""
    if os.environ.get("KBENCH_CACHE"):
        return Path(os.environ["KBENCH_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kbench"


def default_cluster_dir() -> Path:
    """Where ``kbench cluster`` keeps its cluster unless ``--dir`` says otherwise (defined here, not
    in kbench.kafka.cluster_state, so that a client command names it without importing the
    cluster's process machinery: ``kbench produce``'s start-up)."""
    return cache_dir() / "cluster"
