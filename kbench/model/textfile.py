"""The one rule for reading a user's text file (plan, cost file, manifest): bounded, parsed in one line.

Every such file is read through :func:`read_text`: it must be a regular file (``/dev/zero``, a
FIFO or a directory are named as such, never read), no larger than its kind's bound in
:data:`MAX_BYTES` (checked on the open file, and at most bound + 1 bytes are ever read, so a file
growing while read is refused too), and UTF-8.  :func:`loads_toml` and :func:`loads_json` parse
it; any failure of the parser (bad syntax, nesting deep enough to exhaust Python's recursion,
a JSON document of the wrong shape) is a :class:`TextFileError` of one line naming the file.
:func:`check_depth` bounds the nesting of what was parsed (kbench's own files nest a few levels;
deeper is not a plan or a manifest, and code walking it would recurse as deep).
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

from kbench.model.paths import not_a_regular_file

__all__ = ["MAX_BYTES", "MAX_DEPTH", "TextFileError", "check_depth", "loads_json", "loads_toml", "read_text"]

#: Largest file of each kind, in bytes: a plan or a cost file is a page of text; a manifest
#: holds a run's provenance (cells, gate, machine), a few MiB for the largest plans.
MAX_BYTES: dict[str, int] = {
    "plan": 1 << 20,
    "cost file": 1 << 20,
    "manifest": 64 << 20,
    "provenance": 64 << 20,
}
#: Deepest nesting of tables, arrays or objects accepted.
MAX_DEPTH = 32


class TextFileError(ValueError):
    """A user's text file that cannot be used; one line naming it, the problem and the fix."""


def _shown(path: Path | str) -> str:
    return os.fsencode(str(path)).decode("utf-8", "replace")


def read_text(path: Path | str, kind: str) -> str:
    """The text of ``path``, a file of ``kind`` (a key of :data:`MAX_BYTES`), or TextFileError."""
    limit = MAX_BYTES[kind]
    why = not_a_regular_file(path)
    if why is not None:
        raise TextFileError(f"{kind} {_shown(path)} {why}; give a regular file")
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        data = f.read(limit + 1) if size <= limit else b""
    if size > limit or len(data) > limit:
        raise TextFileError(
            f"{kind} {_shown(path)} is {max(size, len(data))} bytes, over the limit of {limit} for a {kind}; "
            f"is it really a {kind}?"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TextFileError(
            f"{kind} {_shown(path)} is not UTF-8 text (byte {e.start}); is it really a {kind}?"
        ) from None


def check_depth(obj: Any, source: str) -> Any:
    """``obj`` when its nesting is at most :data:`MAX_DEPTH`, else TextFileError (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(obj, 0)]
    while stack:
        o, d = stack.pop()
        if d > MAX_DEPTH:
            raise TextFileError(f"{source}: nested more than {MAX_DEPTH} levels deep; kbench's files nest a few levels")
        if isinstance(o, dict):
            stack.extend((v, d + 1) for v in o.values())
        elif isinstance(o, list):
            stack.extend((v, d + 1) for v in o)
    return obj


def loads_toml(text: str, source: str) -> dict[str, Any]:
    """``text`` parsed as TOML; one-line TextFileError on any failure."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise TextFileError(f"{source}: not valid TOML ({e}); fix the syntax") from None
    except RecursionError:
        raise TextFileError(f"{source}: nested too deep to parse; kbench's files nest a few levels") from None
    return dict(check_depth(data, source))


def loads_json(text: str, source: str, what: type = dict) -> Any:
    """``text`` parsed as JSON whose top level is a ``what`` (an object by default)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise TextFileError(f"{source} is not valid JSON ({e}); the file is damaged") from None
    except RecursionError:
        raise TextFileError(f"{source}: nested too deep to parse; the file is damaged") from None
    if not isinstance(data, what):
        names: dict[type, str] = {dict: "an object", list: "a list"}
        name = names.get(what, what.__name__)
        raise TextFileError(f"{source}: its top level is a {type(data).__name__}, not {name}; the file is damaged")
    return check_depth(data, source)
