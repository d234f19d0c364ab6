"""Experiment M: in-memory codec micro-benchmark over a corpus cut into blocks.

Method (pyperf-style): the corpus is cut into ``block_size`` blocks; contexts and
buffers are made outside the timed region (``_native.CodecBench``); the loop count is
calibrated so each timed figure lasts at least ``min_time`` seconds; one warm-up run is
recorded but excluded; then ``repeats`` timed runs of compress and decompress alternate.
Every decompression run is checked byte for byte against the input.  MB = 10**6 bytes.
"""

from __future__ import annotations

import csv
import math
import os
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from kbench import _native
from kbench.model.codecs import CodecSpec
from kbench.model.corpus import Corpus
from kbench.model.csvcell import safe_row

__all__ = ["MRow", "MSummary", "bench_cell", "format_table", "run", "summarize", "write_csv"]


@dataclass(frozen=True)
class MRow:
    """One timed (or warm-up) repetition of one cell: corpus × codec × level × block size."""

    experiment: str
    corpus: str
    corpus_sha256: str
    corpus_entropy_bits_per_byte: float
    codec: str
    level: int | None
    block_size: int
    repetition: int
    warmup: bool
    input_bytes: int
    compressed_bytes: int
    ratio: float
    compress_loops: int
    decompress_loops: int
    compress_seconds: float
    decompress_seconds: float
    compress_mb_s: float
    decompress_mb_s: float
    status: str
    reason: str


@dataclass(frozen=True)
class MSummary:
    """Median and spread of the timed repetitions of one cell."""

    corpus: str
    entropy: float
    codec: str
    level: int | None
    block_size: int
    ratio: float
    compress_median: float
    compress_min: float
    compress_max: float
    decompress_median: float
    decompress_min: float
    decompress_max: float
    repeats: int

    @property
    def spec(self) -> str:
        return str(CodecSpec(self.codec, self.level))


def _calibrate(timed: Callable[[int], int], min_time: float) -> int:
    """Loops needed for one figure to last at least ``min_time`` seconds."""
    loops = 1
    target_ns = min_time * 1e9
    while True:
        ns = max(timed(loops), 1)
        if ns >= target_ns:
            return loops
        # Aim 10 % above the target so noise does not leave a figure short.
        loops = max(loops + 1, math.ceil(loops * target_ns * 1.1 / ns))


def bench_cell(corpus: Corpus, spec: CodecSpec, block_size: int, min_time: float = 0.5, repeats: int = 5) -> list[MRow]:
    """Rows for one cell: one warm-up (repetition 0) then ``repeats`` timed repetitions."""
    data = corpus.payload
    entropy = corpus.entropy
    b = _native.CodecBench(data, block_size, spec.codec, spec.level)
    c_loops = _calibrate(b.compress, min_time)
    d_loops = _calibrate(b.decompress, min_time)
    rows: list[MRow] = []
    target_ns = min_time * 1e9
    for rep in range(repeats + 1):
        # A run that comes in under min_time (the machine got faster after calibration)
        # is discarded and redone with more loops, so every figure honours min_time.
        for _ in range(8):
            c_ns = b.compress(c_loops)
            if c_ns >= target_ns:
                break
            c_loops = max(c_loops + 1, math.ceil(c_loops * target_ns * 1.1 / max(c_ns, 1)))
        for _ in range(8):
            d_ns = b.decompress(d_loops)  # raises CodecError if any block differs from the input
            if d_ns >= target_ns:
                break
            d_loops = max(d_loops + 1, math.ceil(d_loops * target_ns * 1.1 / max(d_ns, 1)))
        n = b.input_size
        csize = b.compressed_size
        rows.append(
            MRow(
                experiment="M",
                corpus=corpus.name,
                corpus_sha256=corpus.sha256,
                corpus_entropy_bits_per_byte=round(entropy, 4),
                codec=spec.codec,
                level=spec.level,
                block_size=block_size,
                repetition=rep,
                warmup=rep == 0,
                input_bytes=n,
                compressed_bytes=csize,
                ratio=round(n / csize, 4) if csize else float("nan"),
                compress_loops=c_loops,
                decompress_loops=d_loops,
                compress_seconds=c_ns / 1e9,
                decompress_seconds=d_ns / 1e9,
                compress_mb_s=round(n * c_loops / 1e6 / (c_ns / 1e9), 2),
                decompress_mb_s=round(n * d_loops / 1e6 / (d_ns / 1e9), 2),
                status="OK",
                reason="",
            )
        )
    return rows


def run(
    corpora: Sequence[Corpus],
    specs: Sequence[CodecSpec],
    block_sizes: Sequence[int],
    min_time: float = 0.5,
    repeats: int = 5,
    on_cell: Callable[[int, int, list[MRow]], None] | None = None,
) -> list[MRow]:
    """Run every corpus × codec × block cell; ``on_cell(done, total, rows)`` after each."""
    cells = [(c, s, b) for c in corpora for s in specs for b in block_sizes]
    out: list[MRow] = []
    for i, (c, s, b) in enumerate(cells, 1):
        rows = bench_cell(c, s, b, min_time, repeats)
        out += rows
        if on_cell:
            on_cell(i, len(cells), rows)
    return out


def summarize(rows: Iterable[MRow]) -> list[MSummary]:
    """Per cell: median, min and max MB/s over the timed repetitions (warm-ups excluded)."""
    groups: dict[tuple[str, str, int | None, int], list[MRow]] = {}
    for r in rows:
        if r.warmup or r.status != "OK":
            continue
        groups.setdefault((r.corpus, r.codec, r.level, r.block_size), []).append(r)
    out = []
    for (corpus, codec, level, block), rs in groups.items():
        c = [r.compress_mb_s for r in rs]
        d = [r.decompress_mb_s for r in rs]
        out.append(
            MSummary(
                corpus,
                rs[0].corpus_entropy_bits_per_byte,
                codec,
                level,
                block,
                rs[0].ratio,
                statistics.median(c),
                min(c),
                max(c),
                statistics.median(d),
                min(d),
                max(d),
                len(rs),
            )
        )
    return out


def _human_block(n: int) -> str:
    if n % (1 << 20) == 0:
        return f"{n >> 20}MiB"
    if n % 1024 == 0:
        return f"{n >> 10}KiB"
    return str(n)


def format_table(summary: Sequence[MSummary]) -> str:
    """A fixed-width table: one line per cell, MB/s as median [min–max]."""
    head = f"{'corpus':<8} {'H b/B':>5} {'codec':<9} {'block':>7} {'ratio':>7} {'compress MB/s med [min-max]':>30} {'decompress MB/s med [min-max]':>32}"
    lines = [head, "-" * len(head)]
    for s in summary:
        # median and range at one precision: a median never prints outside its own range
        comp = f"{s.compress_median:9.1f} [{s.compress_min:.1f}-{s.compress_max:.1f}]"
        dec = f"{s.decompress_median:9.1f} [{s.decompress_min:.1f}-{s.decompress_max:.1f}]"
        lines.append(
            f"{s.corpus:<8} {s.entropy:5.2f} {s.spec:<9} {_human_block(s.block_size):>7} {s.ratio:7.3f} {comp:>30} {dec:>32}"
        )
    return "\n".join(lines)


COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(MRow))


class RowWriter:
    """Append complete rows to ``OUT.partial`` (flushed and fsynced per cell); ``close()``
    renames it over ``OUT`` atomically, so an existing ``OUT`` is never left half-written."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.partial = path.with_name(path.name + ".partial")
        path.parent.mkdir(parents=True, exist_ok=True)
        self._f = self.partial.open("w", newline="")
        self._w = csv.DictWriter(self._f, fieldnames=COLUMNS)
        self._w.writeheader()

    def write(self, rows: Iterable[MRow]) -> None:
        for r in rows:
            d = asdict(r)
            d["level"] = "" if r.level is None else r.level
            self._w.writerow(safe_row(d))
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> Path:
        self._f.close()
        try:
            self.partial.replace(self.path)
        finally:
            self.partial.unlink(missing_ok=True)  # never left behind, even when the rename fails
        return self.path


def write_csv(rows: Iterable[MRow], path: Path) -> Path:
    """Write rows to ``path`` atomically."""
    w = RowWriter(path)
    w.write(rows)
    return w.close()


def batch_decompress_us(corpus: Corpus, spec: CodecSpec, block_bytes: int, min_time: float = 0.02) -> float:
    """Microseconds to decompress one block of ``block_bytes`` of the corpus compressed with
    ``spec`` on this machine (as :func:`batch_compress_us`): the consumer's decompression phase of
    one batch of that size.  0 for codec none."""
    return _batch_us(corpus, spec, block_bytes, min_time, decompress=True)


def batch_compress_us(corpus: Corpus, spec: CodecSpec, block_bytes: int, min_time: float = 0.02) -> float:
    """Microseconds to compress one block of ``block_bytes`` of the corpus with ``spec`` on this
    machine: experiment M at one block size (median of 3 timed runs, a warm-up excluded), used to
    put a time on the compression phase of a producer's latency.  0 for codec none."""
    return _batch_us(corpus, spec, block_bytes, min_time, decompress=False)


def decompress_loop(data: bytes, block_size: int, codec: str) -> tuple[Callable[[int], int], int]:
    """``data`` cut into blocks and compressed once; returns the C decompression loop (``loops`` →
    ns) and the bytes one loop decompresses (the host-speed probe's lz4 part)."""
    b = _native.CodecBench(data, block_size, codec)
    return b.decompress, int(b.input_size)


def _batch_us(corpus: Corpus, spec: CodecSpec, block_bytes: int, min_time: float, decompress: bool) -> float:
    if spec.codec == "none" or block_bytes <= 0:
        return 0.0
    block = int(block_bytes)
    data = corpus.payload[: max(block * 8, 1 << 18)]
    if len(data) < block:
        block = len(data)
    nblocks = -(-len(data) // block)
    b = _native.CodecBench(data, block, spec.codec, spec.level)
    run = b.decompress if decompress else b.compress
    loops = _calibrate(run, min_time)
    times = [run(loops) for _ in range(4)][1:]
    return statistics.median(times) / 1e3 / (loops * nblocks)
