"""The producer's compression cost per byte as librdkafka pays it: each batch compressed with a
context made for it (librdkafka's zstd creates and frees a compression stream per batch), timed on
a batch-sized block of the user's records.

Experiment M times a codec with one context reused across blocks, the library's best case.  For
zstd the context is most of the difference: on the 2-vCPU VM, zstd:3 on 64 KiB of JSON ran at
323 MB/s with a reused context and 220 MB/s with a new one per call (lz4: no difference), and
``kbench advise --verify`` predicted the zstd:3 producer's CPU 21-36 % low from M's figure.
"""

from __future__ import annotations

import statistics
import time

from kbench.model import codecs as codecs_mod
from kbench.model.codecs import CodecSpec
from kbench.model.corpus import Corpus

__all__ = ["per_batch_s_per_byte"]


def _blocks(corpus: Corpus, size: int) -> list[bytes]:
    """Consecutive ``size``-byte blocks of the records (cycled when fewer than ``size`` bytes): the
    batches a producer compresses one after another, each new data, as M walks its corpus (the
    caller's corpus, M's first MiB; one block timed again and again stays in the cache and reads
    fast: lz4 on 16 KiB of JSON 1.2 GB/s against M's 0.7)."""
    data = bytearray()
    want = max(size, corpus.size)
    while len(data) < want:
        for r in corpus.records:
            data += r
            if len(data) >= want:
                break
    n = max(1, len(data) // size)
    return [bytes(data[i * size : (i + 1) * size]) for i in range(n)]


def per_batch_s_per_byte(
    corpus: Corpus, spec: CodecSpec, batch_bytes: int, repeats: int = 5, min_time: float = 0.05
) -> float:
    """Seconds per uncompressed byte to compress ``batch_bytes`` blocks, a new context per block,
    walking the records block after block: the median of ``repeats`` timed loops of at least
    ``min_time`` s each."""
    if spec.codec == "none" or batch_bytes <= 0:
        return 0.0
    blocks = _blocks(corpus, max(1, int(batch_bytes)))
    codecs_mod.compress(blocks[0], spec.codec, spec.level)  # warm: the library's code and tables paged in
    loops: list[float] = []
    i = 0
    for _ in range(repeats):
        n, t0 = 0, time.perf_counter()
        while True:
            codecs_mod.compress(blocks[i % len(blocks)], spec.codec, spec.level)
            i += 1
            n += 1
            el = time.perf_counter() - t0
            if el >= min_time:
                break
        loops.append(el / n / len(blocks[0]))
    return statistics.median(loops)
