"""Experiment M for ``kbench advise``: compress/decompress MB/s of each codec spec at a ladder of
block sizes on the user's records (and compress MB/s with a new context per block, as librdkafka's
producer compresses each batch), cached on disk per machine, codec library versions and corpus
fingerprint, so a second run spends no time here."""

from __future__ import annotations

import bisect
import json
import math
import os
import platform
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kbench.model import codecs as codecs_mod
from kbench.model import cpuinfo, microbench
from kbench.model.batch_compress import per_batch_s_per_byte
from kbench.model.codecs import CodecSpec
from kbench.model.corpus import Corpus
from kbench.model.paths import cache_dir

__all__ = ["M_BLOCKS", "MTable", "default_cache_dir", "m_corpus", "measure_m"]

#: Block sizes at which M is measured; speeds at other batch sizes are interpolated in log(size).
M_BLOCKS: tuple[int, ...] = (4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20)
#: The cache entries' format: [compress MB/s (M, one context reused), decompress MB/s, compress MB/s
#: with a new context per block]; part of every key.
CACHE_FORMAT = "m3"
#: Experiment M runs on the first records of the corpus, this many bytes (at least the largest block).
M_CORPUS = 1 << 20


@dataclass
class MTable:
    """Compress/decompress MB/s of each codec spec at each block size on one corpus (experiment M),
    cached on disk per machine, library versions and corpus fingerprint."""

    speeds: dict[tuple[str, int], tuple[float, float]] = field(default_factory=dict)
    #: compress MB/s with a new context per block, as librdkafka's producer pays it (batch_compress)
    fresh: dict[tuple[str, int], float] = field(default_factory=dict)
    measured: int = 0  # cells measured in this process (not from the cache)

    def speed(self, spec: str, raw_bytes: float) -> tuple[float, float]:
        """(compress, decompress) MB/s at ``raw_bytes``, one context reused across blocks (M's
        figure), interpolated in log(size) between blocks."""
        if spec == "none":
            return math.inf, math.inf
        c = _interp({b: v[0] for (s, b), v in self.speeds.items() if s == spec}, raw_bytes, spec)
        d = _interp({b: v[1] for (s, b), v in self.speeds.items() if s == spec}, raw_bytes, spec)
        return c, d

    def producer_speed(self, spec: str, raw_bytes: float) -> float:
        """Compress MB/s at ``raw_bytes`` with a new context per batch, as librdkafka's producer
        compresses (zstd:3, 64 KiB of JSON: 220 MB/s against M's 323 with a reused context)."""
        if spec == "none":
            return math.inf
        return _interp({b: v for (s, b), v in self.fresh.items() if s == spec}, raw_bytes, spec)


def _interp(by_block: dict[int, float], raw_bytes: float, spec: str) -> float:
    """The figure at ``raw_bytes``, interpolated in log(size) between the measured blocks."""
    blocks = sorted(by_block)
    if not blocks:
        raise KeyError(f"no M measurement for {spec}")
    x = max(blocks[0], min(blocks[-1], raw_bytes))
    i = bisect.bisect_left(blocks, x)
    if blocks[min(i, len(blocks) - 1)] == x:
        return by_block[int(x)]
    lo, hi = blocks[i - 1], blocks[i]
    t = (math.log(x) - math.log(lo)) / (math.log(hi) - math.log(lo))
    return by_block[lo] + t * (by_block[hi] - by_block[lo])


def _machine_key() -> str:
    model = cpuinfo.cpu_model()
    libs = ",".join(f"{k}={v}" for k, v in sorted(codecs_mod.library_versions().items()))
    return f"{platform.machine()}|{model}|{libs}"


def default_cache_dir() -> Path:
    return cache_dir()


def m_corpus(corpus: Corpus, size: int = M_CORPUS) -> Corpus:
    """The first records of the corpus, ``size`` bytes or a little more: M's input."""
    acc, n = 0, 0
    for r in corpus.records:
        if acc >= size:
            break
        acc += len(r)
        n += 1
    return corpus if n == len(corpus.records) else Corpus(corpus.name, corpus.records[:n], corpus.source)


def measure_m(
    corpus: Corpus,
    specs: Sequence[CodecSpec],
    blocks: Sequence[int] = M_BLOCKS,
    cache_dir: Path | None = None,
    min_time: float = 0.01,
    repeats: int = 3,
    on_cell: Callable[[str], None] | None = None,
) -> MTable:
    """Experiment M for every spec × block on the corpus, reusing cached cells."""
    cache_dir = cache_dir or default_cache_dir()
    corpus = m_corpus(corpus, max(blocks))
    path = cache_dir / "advise-m.json"
    try:
        cache: dict[str, list[float]] = json.loads(path.read_text())
    except (OSError, ValueError):
        cache = {}
    # CACHE_FORMAT first: an entry of another format (another kbench's) is never read as this one's
    prefix = f"{CACHE_FORMAT}|{_machine_key()}|{corpus.sha256}|{min_time}|{repeats}"
    table = MTable()
    for spec in specs:
        if spec.codec == "none":
            continue
        for b in blocks:
            if b > corpus.size:
                continue
            key = f"{prefix}|{spec}|{b}"
            if key not in cache:
                rows = microbench.bench_cell(corpus, spec, b, min_time=min_time, repeats=repeats)
                (s,) = microbench.summarize(rows)
                spb = per_batch_s_per_byte(corpus, spec, b, repeats=repeats, min_time=max(min_time, 0.02))
                cache[key] = [s.compress_median, s.decompress_median, 1 / spb / 1e6]
                table.measured += 1
                if on_cell:
                    on_cell(f"{spec}@{b}")
            c, d, f = cache[key]
            table.speeds[(str(spec), b)] = (c, d)
            table.fresh[(str(spec), b)] = f
    if table.measured:
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps(cache))
        tmp.replace(path)
    return table
