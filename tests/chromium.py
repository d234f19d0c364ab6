"""Headless Chromium for the report tests: a screenshot and the page's console messages."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--enable-logging=stderr",
    "--v=0",
    "--hide-scrollbars",
)


def chromium_binary() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def render(page: Path, screenshot: Path, profile: Path, size: str = "1280,3000", timeout: float = 120) -> list[str]:
    """Open ``page``, write a PNG screenshot, return its console lines (errors, warnings, logs)."""
    exe = chromium_binary()
    assert exe is not None
    cmd = [
        exe,
        *FLAGS,
        f"--user-data-dir={profile}",
        f"--screenshot={screenshot}",
        f"--window-size={size}",
        page.resolve().as_uri(),
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert screenshot.is_file(), f"chromium wrote no screenshot (exit {p.returncode}): {p.stderr[-2000:]}"
    return [line for line in p.stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
