"""``kbench report --verify``/``--verify-only`` for ``report.html``: the page the runs give, figure by figure.

``report.md`` is checked line by line against the report built again from the run directories
(:func:`kbench.reporting.report.placement_problems`); ``report.html`` is checked here the same
way: every line of the page but its figures must be the line the rebuilt blocks render to (a
number edited in the page is found), and every figure must embed exactly one of the PNGs the
report wrote under ``plots/`` (the ones ``report.md`` links).  The plots are not drawn again.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

from kbench.reporting import document as doc

__all__ = ["html_problems"]

_FIGURE = "<figure>"
_DATA = re.compile(r'src="data:image/png;base64,([A-Za-z0-9+/=]*)"')


def html_problems(run_dirs: Sequence[Path | str], html: str, out: Path, limit: int = 20) -> list[str]:
    from kbench.reporting.frames import unique_dirs
    from kbench.reporting.report import build

    blocks, _, _, title = build(unique_dirs(run_dirs), with_plots=False)
    want = [x for x in doc.to_html(blocks, title).splitlines() if not x.startswith(_FIGURE)]
    lines = html.splitlines()
    got = [x for x in lines if not x.startswith(_FIGURE)]
    out_: list[str] = []
    for op, a0, a1, b0, b1 in difflib.SequenceMatcher(None, want, got, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        for k in range(max(a1 - a0, b1 - b0)):
            g = got[b0 + k] if b0 + k < b1 else None
            w = want[a0 + k] if a0 + k < a1 else None
            if g is not None and w is not None:  # show where the lines part, not their common start
                at = next((i for i, (x, y) in enumerate(zip(g, w)) if x != y), min(len(g), len(w)))
                g, w = g[max(0, at - 40) : at + 60], w[max(0, at - 40) : at + 60]
            else:
                g, w = (g or "")[:100] or None, (w or "")[:100] or None
            out_.append(
                f"report.html: reads {g!r} where the run directories give {w!r}: a number moved, swapped or edited"
                if g is not None and w is not None
                else (f"report.html: misses {w!r}" if g is None else f"report.html: {g!r} is no line the runs give")
            )
            if len(out_) >= limit:
                return out_
    plots = {hashlib.sha256(p.read_bytes()).hexdigest() for p in (out / "plots").glob("*.png") if p.is_file()}
    for i, line in enumerate((x for x in lines if x.startswith(_FIGURE)), 1):
        m = _DATA.search(line)
        try:
            digest = hashlib.sha256(base64.b64decode(m[1] if m else "", validate=True)).hexdigest()
        except (binascii.Error, ValueError):
            digest = ""
        if digest not in plots:
            out_.append(f"report.html: figure {i} embeds no plot the report wrote under plots/")
    return out_[:limit]
