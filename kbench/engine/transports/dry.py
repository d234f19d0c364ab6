"""The dry transport: checks a plan's plumbing without Kafka.

Stored bytes are real: the corpus is cut into batches of ``batch.size`` uncompressed bytes
and each batch compressed by the C codecs (Kafka framing).  Everything timed is synthetic
(the achieved rate equals the target, no latency, no CPU), and every row says so in its
reason.  Each run lasts its planned duration, like a real one, so progress and
interruption behave as in a real run.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from kbench.engine.live import LiveFigures
from kbench.engine.transports.base import BatchFill, RunRequest, RunResult, TransportInfo
from kbench.model import codecs

__all__ = ["DryTransport"]

#: RecordBatch v2 header bytes, and an estimate of per-record framing bytes.
BATCH_OVERHEAD = 61
RECORD_OVERHEAD = 8
#: At most this many uncompressed bytes are compressed per run (the ratio is extrapolated).
SAMPLE_BYTES = 1 << 20


@dataclass
class DryTransport:
    kind: str = "dry"
    saturated_rate: float = 50_000.0

    def open(self) -> TransportInfo:
        return TransportInfo(kind="dry", client="none (dry transport)")

    def close(self) -> None:
        return None

    def run(self, req: RunRequest) -> RunResult:
        t0 = time.monotonic()
        cell = req.cell
        rate = req.rate if req.rate is not None else self.saturated_rate
        n = max(1, int(rate * req.duration_s))
        recs = req.corpus.records
        spec = cell.spec

        def stored_size(batch: list[bytes]) -> int:
            return (
                BATCH_OVERHEAD
                + len(codecs.compress(b"".join(batch), spec.codec, spec.level))
                + RECORD_OVERHEAD * len(batch)
            )

        # Cut records (cycled) into batches; compress a sample of them.
        stored_sample = 0
        sample_payload = 0
        rec_counts: list[int] = []
        byte_counts: list[int] = []
        batch: list[bytes] = []
        size = 0
        # The payload of n records (cycled) in closed form: the loop below stops after the sample,
        # so a high rate costs no more CPU than a low one.
        lens = [len(r) for r in recs]
        cycles, rest = divmod(n, len(recs))
        payload = cycles * sum(lens) + sum(lens[:rest])
        for i in range(n):
            r = recs[i % len(recs)]
            if sample_payload >= SAMPLE_BYTES:
                break
            if batch and size + len(r) > cell.batch_size:
                stored = stored_size(batch)
                stored_sample += stored
                rec_counts.append(len(batch))
                byte_counts.append(stored)
                batch, size = [], 0
            batch.append(r)
            size += len(r)
            sample_payload += len(r)
        if batch:
            stored = stored_size(batch)
            stored_sample += stored
            rec_counts.append(len(batch))
            byte_counts.append(stored)
        stored_total = int(stored_sample * payload / max(1, sample_payload))
        batches = int(len(rec_counts) * payload / max(1, sample_payload))
        codec_name = codecs.stored_codec(cell.topic_compression, spec)
        if req.live is not None:  # the dry run's own figures: synthetic, and said so
            mean = sum(len(r) for r in recs) / max(1, len(recs))
            req.live(LiveFigures(msgs_s=rate, mb_s=rate * mean / 1e6, source="dry transport: synthetic"))
        remaining = req.duration_s - (time.monotonic() - t0)
        if remaining > 0:
            time.sleep(remaining)  # a dry run lasts as long as a real one
        q = lambda xs, p: float(sorted(xs)[min(len(xs) - 1, int(p * len(xs)))])  # noqa: E731
        return RunResult(
            messages_sent=n,
            messages_acked=n,
            payload_bytes=payload,
            elapsed_s=req.duration_s,
            target_rate=req.rate,
            achieved_rate=n / req.duration_s,
            stored_bytes=stored_total,
            stored_batches=batches,
            stored_codecs=(codec_name,),
            topic_compression_readback=cell.topic_compression,
            batch_fill=BatchFill(
                batches=batches,
                records_p50=float(statistics.median(rec_counts)),
                records_p90=q(rec_counts, 0.9),
                records_max=float(max(rec_counts)),
                bytes_p50=float(statistics.median(byte_counts)),
                bytes_p90=q(byte_counts, 0.9),
                bytes_max=float(max(byte_counts)),
                source="dry: uncompressed batch.size cut",
            ),
            consumed=n,
            lost=0,
            duplicated=0,
            synthetic=True,
        )
