"""``kbench codecs``: list the codecs, and experiment M (``kbench codecs bench``)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time

from kbench.commands.args import (
    SIZE_HELP,
    add_corpus,
    add_csv,
    add_json,
    add_list,
    add_output,
    corpus_size,
    emit_json,
    output_file,
    sizes,
)
from kbench.model import codecs, corpus, limits, microbench
from kbench.model.codecs import CodecSpec

#: The CSV ``-o DIR`` holds (a run directory's experiment M file, docs/csv-schema.md).
M_FILE = "M.csv"

DEFAULT_CODECS = ("zstd:1", "zstd:3", "lz4", "snappy", "gzip:6")
DEFAULT_BLOCKS = (16384, 65536, 1048576)
DEFAULT_CORPORA = ("json", "logs", "random")


def _specs(items: list[str] | None) -> list[CodecSpec]:
    specs = [codecs.parse_spec(t) for t in (items if items is not None else DEFAULT_CODECS)]
    if not specs:
        raise ValueError("--codecs is empty; give e.g. --codecs zstd:3,lz4")
    return specs


def _blocks(items: list[str] | None) -> list[int]:
    out = [int(limits.check("--block-sizes", v, "block_size")) for v in sizes("--block-sizes", items, DEFAULT_BLOCKS)]
    if len(set(out)) != len(out):
        raise ValueError("--block-sizes: a size is listed twice; list each once")
    return out


def _list(args: argparse.Namespace) -> int:
    versions = codecs.library_versions()
    lib = {"gzip": "zlib", "snappy": "snappy", "lz4": "lz4", "zstd": "zstd"}
    ranges = {
        "none": "-",
        "gzip": "1..9 (default 6)",
        "snappy": "-",
        "lz4": "1..17 (default 9 = fast; others LZ4HC)",
        "zstd": "-131072..-1, 1..22 (default 3)",
    }
    rows = [
        {"codec": c, "levels": ranges[c], "library": lib.get(c, ""), "version": versions.get(lib.get(c, ""), "")}
        for c in codecs.available()
    ]
    if args.json:
        emit_json({"codecs": rows})
        return 0
    for r in rows:
        print(f"{r['codec']:<7} levels {r['levels']:<40} {r['library']} {r['version']}")
    return 0


def _bench(args: argparse.Namespace) -> int:
    specs = _specs(args.codecs)
    blocks = _blocks(args.block_sizes)
    limits.check("--repeats", args.repeats, "repeats")
    limits.check("--min-time", args.min_time, "min_time")
    limits.check("--seed", args.seed, "seed")
    size_b = corpus_size(args)
    out = output_file(args, M_FILE, "--csv")
    names = args.corpus if args.corpus is not None else DEFAULT_CORPORA
    if not names:
        raise ValueError("--corpus is empty; give e.g. --corpus json,logs")
    corpora = [corpus.load(c, size=size_b, seed=args.seed, fmt=args.corpus_format) for c in names]
    for c in corpora:
        if c.near_random:
            print(
                f"kbench: warning: corpus '{c.name}' has {c.entropy:.2f} bits/byte, near random data: "
                "ratios will be ~1; use it only as a control",
                file=sys.stderr,
            )
    writer = microbench.RowWriter(out[1]) if out else None
    total = len(corpora) * len(specs) * len(blocks)
    t0 = time.monotonic()

    def progress(done: int, n: int, rows: list[microbench.MRow]) -> None:
        if writer:
            writer.write(rows)
        el = time.monotonic() - t0
        eta = el / done * (n - done)
        r = rows[-1]
        print(
            f"[{done}/{n}] {r.corpus} {r.codec}{'' if r.level is None else ':' + str(r.level)} "
            f"block={r.block_size} elapsed {el:.0f}s eta {eta:.0f}s",
            file=sys.stderr,
            flush=True,
        )

    print(
        f"kbench codecs bench: {total} cells, ≥{args.min_time}s per figure, 1 warm-up + {args.repeats} repeats each",
        file=sys.stderr,
    )
    rows = microbench.run(corpora, specs, blocks, args.min_time, args.repeats, on_cell=progress)
    summary = microbench.summarize(rows)
    if args.json:
        emit_json({"experiment": "M", "cells": [{**dataclasses.asdict(x), "spec": str(x.spec)} for x in summary]})
    else:
        print(microbench.format_table(summary))
    if writer:
        print(f"wrote {writer.close()}", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "codecs",
        help="Kafka-exact codecs: list them, benchmark them (experiment M)",
        description="Kafka-exact codecs: list them, benchmark them in memory (experiment M).",
    )
    s = p.add_subparsers(dest="codecs_command", metavar="ACTION")
    s.required = True
    lp = s.add_parser("list", help="codecs, level ranges and library versions")
    add_json(lp, "the codecs (name, levels, library, version)")
    lp.set_defaults(func=_list)
    b = s.add_parser(
        "bench",
        help="experiment M: compress/decompress MB/s and ratio per codec × level × block size",
        description=(
            "Experiment M. The corpus is cut into blocks (like Kafka batches); each block is compressed and "
            "decompressed in Kafka's framing. Loops are calibrated so each figure lasts at least --min-time; "
            "one warm-up is excluded; --repeats timed runs give median, min and max MB/s (MB = 10^6 bytes). "
            "Every decompression is checked against the input."
        ),
    )
    add_corpus(b, many=DEFAULT_CORPORA)
    b.add_argument("--seed", type=int, default=1, help="seed of the built-in corpus generators (default 1)")
    add_list(b, "--codecs", "--codec", help=f"codec[:level] specs (default {','.join(DEFAULT_CODECS)})")
    add_list(b, "--block-sizes", "--block-size", help=f"block sizes (default 16KiB,64KiB,1MiB; {SIZE_HELP})")
    b.add_argument("--min-time", type=float, default=0.5, help="minimum seconds per timed figure (default 0.5)")
    b.add_argument("--repeats", type=int, default=5, help="timed repetitions per figure (default 5)")
    add_output(b, f"{M_FILE} (tidy rows, one per cell × repetition)")
    add_csv(b, "the tidy rows (one per cell × repetition)")
    add_json(b, "the summary (one object per cell)")
    b.set_defaults(func=_bench)
