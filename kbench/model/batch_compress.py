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


def _block(corpus: Corpus, size: int) -> bytes:
    """The first ``size`` bytes of the records, cycled (a batch's payload)."""
    out = bytearray()
    while len(out) < size:
        for r in corpus.records:
            out += r
            if len(out) >= size:
                break
    return bytes(out[:size])


def per_batch_s_per_byte(
    corpus: Corpus, spec: CodecSpec, batch_bytes: int, repeats: int = 5, min_time: float = 0.05
) -> float:
    """Seconds per uncompressed byte to compress ``batch_bytes`` blocks, a new context per block:
    the median of ``repeats`` timed loops of at least ``min_time`` s each."""
    if spec.codec == "none" or batch_bytes <= 0:
        return 0.0
    block = _block(corpus, max(1, int(batch_bytes)))
    codecs_mod.compress(block, spec.codec, spec.level)  # warm: the library's code and tables paged in
    loops: list[float] = []
    for _ in range(repeats):
        n, t0 = 0, time.perf_counter()
        while True:
            codecs_mod.compress(block, spec.codec, spec.level)
            n += 1
            el = time.perf_counter() - t0
            if el >= min_time:
                break
        loops.append(el / n / len(block))
    return statistics.median(loops)
