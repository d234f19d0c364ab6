"""``kbench codecs``: list the codecs, and experiment M (``kbench codecs bench``)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from kbench.model import codecs, corpus, limits, microbench
from kbench.model.codecs import CodecSpec
from kbench.model.paths import check_output_file

DEFAULT_CODECS = "zstd:1,zstd:3,lz4,snappy,gzip:6"
DEFAULT_BLOCKS = "16384,65536,1048576"
DEFAULT_CORPORA = "json,logs,random"


def _specs(text: str) -> list[CodecSpec]:
    specs = [codecs.parse_spec(t) for t in text.split(",") if t.strip()]
    if not specs:
        raise ValueError("--codecs is empty; give e.g. --codecs zstd:3,lz4")
    return specs


def _blocks(text: str) -> list[int]:
    out = []
    for t in text.split(","):
        t = t.strip().lower()
        mult = 1
        if t.endswith("k"):
            mult, t = 1024, t[:-1]
        elif t.endswith("m"):
            mult, t = 1 << 20, t[:-1]
        try:
            v = int(t) * mult
        except ValueError:
            raise ValueError(f"bad block size '{t}' in --block-sizes; give bytes like 16384,65536 or 16k,1m") from None
        out.append(int(limits.check("--block-sizes", v, "block_size")))
    if not out:
        raise ValueError("--block-sizes is empty; give e.g. --block-sizes 16384,65536")
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
    for c in codecs.available():
        v = versions.get(lib.get(c, ""), "")
        print(f"{c:<7} levels {ranges[c]:<40} {lib.get(c, '')} {v}")
    return 0


def _bench(args: argparse.Namespace) -> int:
    specs = _specs(args.codecs)
    blocks = _blocks(args.block_sizes)
    limits.check("--repeats", args.repeats, "repeats")
    limits.check("--min-time", args.min_time, "min_time")
    limits.check("--seed", args.seed, "seed")
    limits.check_corpus_size("--corpus-size", args.corpus_size)
    if args.csv:
        check_output_file("--csv", args.csv)
    corpora = [
        corpus.load(c.strip(), size=args.corpus_size, seed=args.seed, fmt=args.corpus_format)
        for c in args.corpus.split(",")
        if c.strip()
    ]
    for c in corpora:
        if c.near_random:
            print(
                f"kbench: warning: corpus '{c.name}' has {c.entropy:.2f} bits/byte, near random data: "
                "ratios will be ~1; use it only as a control",
                file=sys.stderr,
            )
    writer = microbench.RowWriter(Path(args.csv)) if args.csv else None
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
    print(microbench.format_table(microbench.summarize(rows)))
    if writer:
        print(f"wrote {writer.close()}", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "codecs",
        help="Kafka-exact codecs: list them, benchmark them (experiment M)",
        description="Kafka-exact codecs: list them, benchmark them in memory (experiment M).",
    )
    s = p.add_subparsers(dest="codecs_command", metavar="ACTION")
    s.required = True
    lp = s.add_parser("list", help="codecs, level ranges and library versions")
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
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    b.add_argument(
        "--corpus", default=DEFAULT_CORPORA, help="comma-separated built-in corpora (json, logs, random) or file paths"
    )
    b.add_argument(
        "--corpus-format", default="lines", choices=["lines", "lenprefixed"], help="how a corpus file holds records"
    )
    b.add_argument("--corpus-size", type=int, default=4 << 20, help="bytes generated for a built-in corpus")
    b.add_argument("--seed", type=int, default=1, help="seed of the built-in corpus generators")
    b.add_argument("--codecs", default=DEFAULT_CODECS, help="comma-separated codec[:level] list")
    b.add_argument(
        "--block-sizes", default=DEFAULT_BLOCKS, help="comma-separated block sizes in bytes (k/m suffixes ok)"
    )
    b.add_argument("--min-time", type=float, default=0.5, help="minimum seconds per timed figure")
    b.add_argument("--repeats", type=int, default=5, help="timed repetitions per figure")
    b.add_argument("--csv", help="write tidy rows (one per cell × repetition) to this CSV, atomically")
    b.set_defaults(func=_bench)
