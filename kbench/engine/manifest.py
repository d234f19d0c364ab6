"""``manifest.json``: the provenance of a run, written atomically and never holding a secret.

Schema in ``docs/csv-schema.md`` (section "manifest.json").  The manifest is written when
a run starts (``state: running``), updated when the common rate is derived, and finished
(``state: complete`` or ``interrupted``).  Every write goes through :class:`Scrubber.deep`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kbench.engine.redact import Scrubber
from kbench.model import textfile
from kbench.model.paths import atomic_write

__all__ = ["MANIFEST", "read", "write"]

MANIFEST = "manifest.json"
SCHEMA_VERSION = 1


def write(run_dir: Path, data: Mapping[str, Any], scrub: Scrubber) -> Path:
    """Write ``manifest.json`` atomically (tmp + fsync + rename), secrets redacted; a failed write
    (a full disk) leaves the old manifest and no temporary file, and names the path."""
    path = run_dir / MANIFEST
    body = dict(scrub.deep(dict(data)))
    body["schema_version"] = SCHEMA_VERSION
    atomic_write(path, (json.dumps(body, indent=2, sort_keys=True, default=str) + "\n").encode())
    return path


def read(run_dir: Path) -> dict[str, Any]:
    path = run_dir / MANIFEST
    if not path.exists():
        raise FileNotFoundError(f"{path} not found; --resume needs a run directory made by kbench run")
    try:  # bounded, an object, nested a few levels: anything else is one line
        return dict(textfile.loads_json(textfile.read_text(path, "manifest"), str(path)))
    except textfile.TextFileError as e:
        raise ValueError(f"{e}; the run directory is damaged" if "damaged" not in str(e) else str(e)) from None
