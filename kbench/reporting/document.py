"""A report as a list of blocks, rendered to Markdown and to one self-contained HTML page.

Both renderings come from the same blocks, so ``report.md`` and ``report.html`` say the
same thing.  The HTML page has its CSS inline, its images as ``data:`` URIs and no script:
it opens offline and makes no request.
"""

from __future__ import annotations

import base64
import html
import re
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["Block", "Heading", "Para", "Table", "Image", "Items", "md_text", "to_markdown", "to_html"]


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    anchor: str = ""


@dataclass(frozen=True)
class Para:
    text: str
    kind: str = ""  # "", "note", "warn"


@dataclass(frozen=True)
class Table:
    headers: Sequence[str]
    rows: Sequence[Sequence[str]]
    caption: str = ""
    emphasis_rows: frozenset[int] = field(default_factory=frozenset)  # e.g. verdict rows
    wrap: bool = False  # cells of prose (the answer): wrapped in the HTML page, not one long line


@dataclass(frozen=True)
class Image:
    name: str  # file name under plots/
    png: bytes
    caption: str


@dataclass(frozen=True)
class Items:
    items: Sequence[str]


Block = Heading | Para | Table | Image | Items


#: What Markdown (CommonMark) would read as markup inside a line: a backslash, a code span, emphasis,
#: a table's cell separator, an HTML tag or autolink (``<`` before a letter, ``/``, ``!`` or ``?``), a
#: link or image target (``](``) and a character reference (``&name;``).  Each is backslash-escaped.
_MD_INLINE = re.compile(r"[\\`*|]|<(?=[A-Za-z/!?])|\](?=\()|&(?=#?\w+;)")
#: What starts a block at the beginning of a line: a heading, a quote, a list item, a setext line.
_MD_LINE_START = re.compile(r"^(\s*)([#>]|[-+*=](?=\s|$)|\d+[.)](?=\s|$))")


def md_text(s: str) -> str:
    """Text as Markdown that renders as that text and nothing else: every input label (plan, corpus,
    run-directory names, ``--label``) is plain text in a report, never markup, HTML or a link; a
    line break (which would start a heading or a list) is a space.  The one escaping rule of
    ``report.md``; :mod:`kbench.reporting.provenance` finds labels in it by the same rule."""
    if "\n" in s or "\r" in s:
        s = s.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
    s = _MD_INLINE.sub(lambda m: "\\" + m[0], s)
    return _MD_LINE_START.sub(lambda m: f"{m[1]}{m[2][:-1]}\\{m[2][-1]}", s)


def _md_cell(s: str) -> str:
    return md_text(s)


def _esc(s: str) -> str:
    """HTML text escaping (fast path for the many cells that need none)."""
    if "&" not in s and "<" not in s and ">" not in s and '"' not in s:
        return s
    return html.escape(s)


def to_markdown(blocks: Sequence[Block], plots_dir: str = "plots") -> str:
    out: list[str] = []
    for b in blocks:
        if isinstance(b, Heading):
            out.append(f"{'#' * b.level} {md_text(b.text)}\n")
        elif isinstance(b, Para):
            prefix = {"note": "> ", "warn": "> **Warning:** "}.get(b.kind, "")
            out.append(f"{prefix}{md_text(b.text)}\n")
        elif isinstance(b, Items):
            out.append("\n".join(f"- {md_text(i)}" for i in b.items) + "\n")
        elif isinstance(b, Table):
            if b.caption:
                out.append(f"*{md_text(b.caption)}*\n")
            lines = ["| " + " | ".join(_md_cell(h) for h in b.headers) + " |", "|" + "---|" * len(b.headers)]
            for i, r in enumerate(b.rows):
                cells = [_md_cell(c) for c in r]
                if i in b.emphasis_rows:
                    cells = [f"**{c}**" if c else c for c in cells]
                lines.append("| " + " | ".join(cells) + " |")
            out.append("\n".join(lines) + "\n")
        elif isinstance(b, Image):
            cap = md_text(b.caption)
            out.append(f"![{cap}]({plots_dir}/{urllib.parse.quote(b.name)})\n\n*{cap}*\n")
    return "\n".join(out)


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:1560px;margin:2em auto;padding:0 1em;color:#1d232a;line-height:1.45}
h1{border-bottom:3px solid #1d5fa7;padding-bottom:.2em}h2{margin-top:2em;border-bottom:1px solid #ccd;padding-bottom:.15em}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.88em;display:block;overflow-x:auto}
th,td{border:1px solid #d0d5dc;padding:.25em .55em;text-align:left;white-space:nowrap}
th{white-space:normal;vertical-align:bottom}td:first-child{white-space:normal;max-width:16em}table.wrap td{white-space:normal;min-width:7em}table.wrap td:nth-child(-n+2){white-space:nowrap;min-width:0}tr.verdict td{white-space:normal}
th{background:#eef2f7}tr.verdict td{background:#fff8e1;font-weight:600}
caption{caption-side:top;text-align:left;font-style:italic;padding:.2em 0}
.note{background:#f1f6fc;border-left:4px solid #1d5fa7;padding:.4em .8em}.warn{background:#fdf1ef;border-left:4px solid #c0392b;padding:.4em .8em}
figure{margin:1em 0}figure img{max-width:100%;height:auto;border:1px solid #e3e6ea}figcaption{font-style:italic;font-size:.9em}
code{background:#f3f4f6;padding:0 .25em}
"""


def to_html(blocks: Sequence[Block], title: str) -> str:
    e = _esc
    body: list[str] = []
    for b in blocks:
        if isinstance(b, Heading):
            anchor = f' id="{e(b.anchor)}"' if b.anchor else ""
            body.append(f"<h{b.level}{anchor}>{e(b.text)}</h{b.level}>")
        elif isinstance(b, Para):
            cls = f' class="{b.kind}"' if b.kind else ""
            body.append(f"<p{cls}>{e(b.text)}</p>")
        elif isinstance(b, Items):
            body.append("<ul>" + "".join(f"<li>{e(i)}</li>" for i in b.items) + "</ul>")
        elif isinstance(b, Table):
            cap = f"<caption>{e(b.caption)}</caption>" if b.caption else ""
            head = "<tr>" + "".join(f"<th>{e(h)}</th>" for h in b.headers) + "</tr>"
            rows = []
            for i, r in enumerate(b.rows):
                if i in b.emphasis_rows:  # a verdict row: its text spans the empty cells after it
                    cells = list(r)
                    last = max((j for j, c in enumerate(cells) if c), default=0)
                    span = len(cells) - last
                    tds = "".join(f"<td>{e(c)}</td>" for c in cells[:last])
                    tds += f'<td colspan="{span}">{e(cells[last])}</td>' if span > 1 else f"<td>{e(cells[last])}</td>"
                    rows.append(f'<tr class="verdict">{tds}</tr>')
                elif b.wrap:  # a line break in a cell of prose is kept
                    rows.append("<tr>" + "".join(f"<td>{e(c).replace(chr(10), '<br>')}</td>" for c in r) + "</tr>")
                else:
                    rows.append("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>")
            cls = ' class="wrap"' if b.wrap else ""
            body.append(f"<table{cls}>{cap}<thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>")
        elif isinstance(b, Image):
            data = base64.b64encode(b.png).decode()
            # plots are drawn at twice the resolution they are shown at (sharp on any screen)
            width = int.from_bytes(b.png[16:20], "big") // 2 if b.png[:8] == PNG_SIGNATURE else 0
            size = f' width="{width}"' if width else ""
            body.append(
                f'<figure><img alt="{e(b.caption)}"{size} src="data:image/png;base64,{data}">'
                f"<figcaption>{e(b.caption)}</figcaption></figure>"
            )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">'
        f"<title>{e(title)}</title><style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )
