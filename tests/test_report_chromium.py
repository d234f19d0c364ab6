"""report.html of committed runs read in headless Chromium, as a reader at a 1400 px wide window
sees it: it renders without a console error, every plot loads, the first section is the answer
and ends with the priced choice, and the A table fits the page without scrolling sideways.

The runs are the committed seed000-testbed (A, B, C, D on emulated hosts) and knee-testbed
(a rate sweep: the latency-against-rate plot) directories, copied to a temporary directory.
Screenshots are written next to the report (and to $KBENCH_REPORT_SHOTS when set, to look at).
"""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

from chromium import chromium_binary, probe, render  # noqa: E402

from kbench.reporting import report  # noqa: E402

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
RUNS = ("seed000-testbed-2026-12-01", "knee-testbed-2026-12-01")
WIDTH = 1400

#: What the probe reads from the loaded page (a JS expression).
PROBE = """{
  viewport: window.innerWidth,
  pageWidth: document.documentElement.scrollWidth,
  pageHeight: document.documentElement.scrollHeight,
  images: document.images.length,
  broken: [...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.alt),
  sharp: [...document.images].filter(i => i.naturalWidth >= 2 * i.width).length,
  h2: [...document.querySelectorAll("h2")].map(h => h.id),
  firstAfterTitle: document.querySelector("h1").nextElementSibling.nextElementSibling.id,
  choice: (() => {
    const h = document.getElementById("choice");
    if (!h) return null;
    const kinds = [];
    let e = h.nextElementSibling;
    while (e && e.tagName !== "H2" && e.tagName !== "H3") { kinds.push(e.tagName); e = e.nextElementSibling; }
    const list = h.nextElementSibling && h.nextElementSibling.nextElementSibling;
    const items = list ? [...list.querySelectorAll("li")].map(li => li.innerText) : [];
    const para = h.nextElementSibling ? h.nextElementSibling.innerText : "";
    return {next: e ? e.id : "", kinds, top: h.getBoundingClientRect().top + window.scrollY, items, para};
  })(),
  tables: [...document.querySelectorAll("table")].map(t => {
    let h = t.previousElementSibling;
    while (h && h.tagName !== "H2") h = h.previousElementSibling;
    const r = t.getBoundingClientRect();
    return {section: h ? h.id : "", scroll: t.scrollWidth, client: t.clientWidth, right: r.right};
  }),
}"""


@dataclass(frozen=True)
class Page:
    html: Path
    seen: dict  # what PROBE read
    shot: Path  # the whole page as a reader sees it at WIDTH px
    console: list[str]  # the console lines of opening it


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Page]:
    """Each run's report.html, probed and then photographed (the pages in parallel: each step
    is a Chromium process)."""
    if chromium_binary() is None:
        pytest.skip("chromium not installed (scripts/setup.sh installs it)")
    base = tmp_path_factory.mktemp("chromium-reports")
    html = {}
    for name in RUNS:
        run = base / name
        shutil.copytree(ROOT / "benchmarks" / "results" / name, run, ignore=shutil.ignore_patterns("histograms"))
        html[name] = report.write([run], base / f"report-{name}").html
    with ThreadPoolExecutor(max_workers=len(RUNS)) as pool:
        seen = dict(zip(RUNS, pool.map(lambda n: probe(html[n], base / f"probe-{n}", PROBE, f"{WIDTH},900"), RUNS)))

        def shoot(n: str) -> list[str]:
            height = min(int(seen[n]["pageHeight"]), 16000)
            return render(html[n], base / f"{n}.png", base / f"shot-{n}", size=f"{WIDTH},{height}")

        console = dict(zip(RUNS, pool.map(shoot, RUNS)))
    keep = os.environ.get("KBENCH_REPORT_SHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        for n in RUNS:
            shutil.copy(base / f"{n}.png", Path(keep) / f"{n}.png")
    return {n: Page(html[n], seen[n], base / f"{n}.png", console[n]) for n in RUNS}


@pytest.mark.parametrize("name", RUNS)
def test_the_page_reads_at_1400_px(pages: dict[str, Page], name: str) -> None:
    got = pages[name].seen
    assert got["viewport"] == WIDTH
    # the first section is the answer, then the setup, then the threats, then the experiments
    assert got["firstAfterTitle"] == "answer"
    assert got["h2"][:4] == ["answer", "setup", "threats", "exp-a"], got["h2"]
    # every plot loads, drawn at twice the size it is shown at
    assert got["images"] >= 2 and got["broken"] == [], got
    assert got["sharp"] == got["images"], got
    # nothing scrolls sideways: not the page, not the A table
    assert got["pageWidth"] <= WIDTH, got["pageWidth"]
    a = [t for t in got["tables"] if t["section"] == "exp-a"]
    assert a, got["tables"]
    assert a[0]["scroll"] <= a[0]["client"] and a[0]["right"] <= WIDTH, a[0]
    assert all(t["scroll"] <= t["client"] for t in got["tables"] if t["section"] in ("answer", "exp-a")), got
    # the first section ends with the priced choice (h3 "choice", its paragraph and list, then the setup),
    # inside the screenshot
    ch = got["choice"]
    assert ch is not None and ch["next"] == "setup", ch
    if name.startswith("knee"):  # a rate sweep of A and B: no C or D to price a choice with, and it says so
        assert ch["kinds"] == ["P"] and "needs experiments A, C and D" in ch["para"], ch
    else:
        assert ch["kinds"] == ["P", "UL"] and "kbench advise's cost model" in ch["para"], ch
        assert ch["items"] and all("choose " in t and "/month" in t for t in ch["items"]), ch
    assert 0 < ch["top"] < min(int(got["pageHeight"]), 16000)
    # what a reader sees: the whole page, no console message
    assert pages[name].console == [], pages[name].console
    assert pages[name].shot.stat().st_size > 50_000


def test_the_probe_sees_a_broken_image_and_a_wide_table(tmp_path: Path) -> None:
    """The checks above can fail: a page with an image that does not decode and a table wider
    than the window is reported as such."""
    if chromium_binary() is None:
        pytest.skip("chromium not installed (scripts/setup.sh installs it)")
    bad = tmp_path / "bad.html"
    cells = "".join(f"<td>{'x' * 40}</td>" for _ in range(60))
    bad.write_text(
        "<!DOCTYPE html><html><head><style>table{display:block;overflow-x:auto}td{white-space:nowrap}</style></head>"
        '<body><h1>t</h1><p>p</p><h2 id="exp-a">A</h2><img alt="broken" src="data:image/png;base64,AAAA">'
        f"<table><tr>{cells}</tr></table></body></html>"
    )
    got = probe(bad, tmp_path / "profile", PROBE, size=f"{WIDTH},900")
    assert got["broken"] == ["broken"]
    t = next(t for t in got["tables"] if t["section"] == "exp-a")
    assert t["scroll"] > t["client"]
