"""``kbench inspect``: read Kafka log segments batch by batch, like kafka-dump-log with a summary.

Per batch: base offset, records, stored bytes, codec, uncompressed bytes, ratio, CRC validity.
Then a summary: stored batch size p50/p90/p99/max, records per batch, codec counts, overall ratio.
Truncated or corrupt batches are reported per batch; the exit status is 1 when there are any.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import sys
from pathlib import Path
from typing import IO

from kbench.commands.args import add_csv, add_json, add_output, emit_json, output_file, ready
from kbench.model import segment
from kbench.model.csvcell import safe_row
from kbench.model.paths import atomic_stream
from kbench.model.text import terminal_safe

NAME = "inspect"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        NAME,
        help="inspect Kafka .log segments or topic-partition directories",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH", help=".log files or topic-partition directories")
    add_output(p, "batches.csv (one row per batch)")
    add_csv(p, "the per-batch rows")
    add_json(p, "the summary and (without --summary-only) the batches")
    p.add_argument(
        "--no-decompress",
        action="store_true",
        help="do not decompress compressed batches (faster; their uncompressed size and ratio are unknown)",
    )
    p.add_argument("--summary-only", action="store_true", help="print only the summary")
    p.set_defaults(func=main)


def _fmt_dist(d: dict[str, float]) -> str:
    return " ".join(f"{k} {v:.0f}" for k, v in d.items())


def _shown(name: str) -> str:
    """A file name as printable text: bytes that are not UTF-8 shown as U+FFFD."""
    return os.fsencode(name).decode("utf-8", "replace")


def _row_line(r: segment.BatchRow) -> str:
    ratio = f"{r.ratio:.2f}" if r.ratio is not None else "-"
    unc = str(r.uncompressed_bytes) if r.uncompressed_bytes is not None else "-"
    crc = "-" if r.crc_valid is None else ("ok" if r.crc_valid else "BAD")
    name = terminal_safe(_shown(Path(r.file).parent.name + "/" + Path(r.file).name[-12:]))
    status = r.status if r.status == "ok" else f"{r.status.upper()}: {r.message}"
    return (
        f"{name:<28} {r.position:>10} {r.base_offset:>11} {r.records:>7} {r.stored_bytes:>8} "
        f"{r.codec or '?':<6} {unc:>8} {ratio:>6} {crc:<5} {status}"
    )


def _scan(
    args: argparse.Namespace, files: list[Path], sink: IO[bytes] | None, keep: list[dict[str, object]] | None
) -> segment.Summary:
    """Stream every batch of ``files``: printed (text, without --summary-only), written to ``sink``
    (the CSV), counted; no row is kept unless ``keep`` asks for them (``--json`` with the batches),
    so memory does not grow with the number of batches."""
    summ = segment.Summarizer()
    writer = None
    text = None
    if sink is not None:
        # surrogateescape: a file name that is not UTF-8 is written back as its own bytes
        text = io.TextIOWrapper(sink, encoding="utf-8", errors="surrogateescape", newline="")
        writer = csv.DictWriter(text, fieldnames=list(segment.BatchRow.CSV_FIELDS))
        writer.writeheader()
    show = not args.summary_only and not args.json
    if show:
        print(
            f"{'file':<28} {'position':>10} {'baseOffset':>11} {'records':>7} {'stored':>8} {'codec':<6} "
            f"{'uncompr':>8} {'ratio':>6} {'crc':<5} status"
        )
    for f in files:
        for r in segment.iter_file(f, decompress=not args.no_decompress):
            summ.add(r)
            if show:
                print(_row_line(r))
            if writer is not None:
                writer.writerow(safe_row(r.csv_row()))
            if keep is not None:
                keep.append(_shown_row(r.csv_row()))
    if text is not None:
        text.flush()
        text.detach()
    return summ.summary()


class _Empty(Exception):
    """No batch at all: the CSV is not written."""


def main(args: argparse.Namespace) -> int:
    out = output_file(args, "batches.csv", "--csv")
    keep: list[dict[str, object]] | None = [] if args.json and not args.summary_only else None
    try:
        files = segment.log_files(args.paths)
        if out is not None:
            with atomic_stream(ready(out[1])) as sink:
                s = _scan(args, files, sink, keep)
                if not s.batches and not s.problems:
                    raise _Empty
        else:
            s = _scan(args, files, None, keep)
    except segment.SegmentError as e:
        raise ValueError(terminal_safe(_shown(str(e)), 1000)) from None
    except _Empty:
        s = segment.summarize([])
    if not s.batches and not s.problems:
        names = ", ".join(terminal_safe(_shown(str(f))) for f in files)
        print(f"kbench: no batches in {names} (empty segment); nothing to inspect", file=sys.stderr)
        return 1
    if args.json:
        if out is not None:
            print(f"wrote {_shown(str(out[1]))}", file=sys.stderr)
        emit_json(
            {
                "files": [_shown(str(f)) for f in files],
                "summary": {
                    "batches": s.batches,
                    "records": s.records,
                    "stored_bytes": s.stored_bytes,
                    "ratio": s.ratio,
                    "stored_batch_bytes": s.stored_size,
                    "records_per_batch": s.records_per_batch,
                    "codecs": dict(s.codecs),
                    "problems": dict(s.problems),
                },
                "batches": keep,
                "csv": None if out is None else _shown(str(out[1])),
            }
        )
        return 1 if s.problems else 0
    if s.ratio is not None:
        ratio = f"{s.ratio:.3f}"
    elif args.no_decompress:
        ratio = "unknown (use without --no-decompress)"
    else:
        ratio = "unknown (no readable batch)"
    print(
        f"summary: {len(files)} file(s), {s.batches} batches, {s.records} records, {s.stored_bytes} stored bytes, "
        f"ratio {ratio}"
    )
    if s.batches:
        print(f"  stored batch bytes: {_fmt_dist(s.stored_size)}")
        print(f"  records per batch:  {_fmt_dist(s.records_per_batch)}")
    print(f"  codecs: {', '.join(f'{k} {v}' for k, v in sorted(s.codecs.items())) or 'none'}")
    if s.problems:
        print(f"  problems: {', '.join(f'{k} {v}' for k, v in sorted(s.problems.items()))}")
    if out is not None:
        print(f"wrote {terminal_safe(_shown(str(out[1])), 1000)}")
    return 1 if s.problems else 0


def _shown_row(row: dict[str, object]) -> dict[str, object]:
    return {k: _shown(v) if isinstance(v, str) else v for k, v in row.items()}
