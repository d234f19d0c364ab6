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


#: Injected (into a copy of a page) to read what the page shows once it has loaded: the result is
#: written into the DOM, which ``--dump-dom`` prints.  The report itself carries no script.
PROBE_ID = "kbench-probe"


def probe(page: Path, profile: Path, script: str, size: str = "1400,900", timeout: float = 60) -> dict:
    """Open a copy of ``page`` with ``script`` (a JS expression giving a JSON-able value,
    evaluated on load) and return that value."""
    import html
    import json

    exe = chromium_binary()
    assert exe is not None
    copy = profile.parent / f"{profile.name}-{page.stem}.probe.html"  # one per profile: probes may run at once
    tag = (
        f'<pre id="{PROBE_ID}"></pre><script>window.addEventListener("load", () => {{'
        f'document.getElementById("{PROBE_ID}").textContent = JSON.stringify(({script}));}});</script>'
    )
    copy.write_text(page.read_text().replace("</body>", tag + "</body>"))
    cmd = [
        exe,
        *FLAGS,
        f"--user-data-dir={profile}",
        f"--window-size={size}",
        "--virtual-time-budget=5000",
        "--dump-dom",
        copy.resolve().as_uri(),
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    start = p.stdout.find(f'<pre id="{PROBE_ID}">')
    assert start >= 0, f"chromium printed no DOM (exit {p.returncode}): {p.stderr[-2000:]}"
    body = p.stdout[start + len(f'<pre id="{PROBE_ID}">') : p.stdout.find("</pre>", start)]
    assert body, f"the probe did not run: {p.stderr[-2000:]}"
    return json.loads(html.unescape(body))
