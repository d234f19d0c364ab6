"""run.log: one JSON object per line (``time``, ``event`` and the event's fields), appended."""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["RUN_LOG", "append", "line"]

RUN_LOG = "run.log"


def line(event: str, fields: Mapping[str, Any] | None = None, scrub: Callable[[str], str] = str) -> str:
    """One run.log line (no newline): the event's text and fields, secrets scrubbed from both."""
    doc = {"time": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"), "event": event, **(fields or {})}
    return scrub(json.dumps(doc, ensure_ascii=False, default=str))


def append(
    run_dir: Path, event: str, fields: Mapping[str, Any] | None = None, scrub: Callable[[str], str] = str
) -> None:
    with (run_dir / RUN_LOG).open("a", encoding="utf-8") as f:
        f.write(line(event, fields, scrub) + "\n")
