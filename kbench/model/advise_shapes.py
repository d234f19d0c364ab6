"""The workload ``kbench advise`` models and the batch shapes of each candidate setting: the
client's codec range, the corpus sized to the workload, and the simulated transport's batches
reduced to what the cost model needs."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kbench.model import codecs as codecs_mod
from kbench.model import corpus as corpus_mod
from kbench.model import limits
from kbench.model import simulator as sim
from kbench.model.advise_prices import (
    CostError,
)
from kbench.model.codecs import CodecSpec
from kbench.model.corpus import Corpus
from kbench.model.mtable import M_BLOCKS

__all__ = [
    "size_text",
    "CLIENT_SPECS",
    "DEFAULT_BATCH_SIZES",
    "DEFAULT_LINGERS_MS",
    "MAX_CORPUS",
    "MIN_CORPUS",
    "Shape",
    "Workload",
    "batch_structure",
    "client_specs",
    "corpus_for",
    "records_needed",
    "scratch_dir",
    "shape_of",
    "sim_config",
    "sweep_shapes",
]


#: Codec specs swept per client: every codec, and levels spread over the client's range
#: (librdkafka's ``compression.level`` stops at 12; the Java client takes KIP-390's ranges).
CLIENT_SPECS: dict[str, tuple[str, ...]] = {
    "librdkafka": (
        "none",
        "snappy",
        "lz4",
        "lz4:12",
        "gzip:1",
        "gzip:6",
        "gzip:9",
        "zstd:1",
        "zstd:3",
        "zstd:6",
        "zstd:9",
        "zstd:12",
    ),
    "java": (
        "none",
        "snappy",
        "lz4",
        "lz4:17",
        "gzip:1",
        "gzip:6",
        "gzip:9",
        "zstd:-5",
        "zstd:1",
        "zstd:3",
        "zstd:6",
        "zstd:9",
        "zstd:12",
        "zstd:19",
    ),
}


DEFAULT_BATCH_SIZES: tuple[int, ...] = (16 << 10, 64 << 10, 256 << 10, 1 << 20)


DEFAULT_LINGERS_MS: tuple[float, ...] = (0.0, 5.0, 20.0, 50.0)


def client_specs(client: str) -> list[CodecSpec]:
    if client not in CLIENT_SPECS:
        raise CostError(f"unknown client '{client}'; use {' or '.join(CLIENT_SPECS)}")
    return [codecs_mod.parse_spec(s) for s in CLIENT_SPECS[client]]


@dataclass(frozen=True)
class Workload:
    rate: float  # records per second
    partitions: int
    replication_factor: int = 3
    retention_hours: float = 168.0
    client: str = "librdkafka"
    p99_budget_ms: float | None = None

    def validate(self) -> None:
        """Every figure within kbench.model.limits (NaN and infinities refused), before any work."""
        try:
            limits.check("--rate", self.rate, "topic_rate")
            if self.partitions < 1:
                raise CostError(f"--partitions must be >= 1, got {self.partitions}")
            limits.check("--rf", self.replication_factor, "replication_factor")
            limits.check("--retention", self.retention_hours, "retention_h")
            if self.p99_budget_ms is not None:
                limits.check("--p99-budget-ms", self.p99_budget_ms, "p99_budget_ms")
        except limits.LimitError as e:
            raise CostError(str(e)) from None
        client_specs(self.client)


@dataclass(frozen=True)
class Shape:
    """What the batching model predicts for one candidate, per byte of payload."""

    stored_per_payload: float  # stored bytes / payload bytes (steady batches)
    produced_per_payload: float  # bytes the producer sends / payload bytes
    raw_batch_p50: float  # uncompressed records bytes per batch (median over records)
    records_per_batch_p50: float
    batches_per_s: float
    wait_ms: tuple[float, ...]  # per-record linger/fill wait (sorted), steady batches
    batch_raw_by_record: tuple[float, ...]  # raw bytes of the batch each record sits in (same order)
    steady: bool  # False when every batch closed by flush (the corpus was too short)


def shape_of(res: sim.SimResult, rate: float) -> Shape:
    all_b = res.batches
    steady = [b for b in all_b if b.close_reason != "flush"]
    use = steady or list(all_b)
    raw_all = sum(b.raw_bytes for b in all_b)
    payload_per_raw = res.payload_bytes / raw_all if raw_all else 1.0
    raw_use = sum(b.raw_bytes for b in use)
    payload_use = raw_use * payload_per_raw
    stored = sum(b.stored_bytes for b in use)
    produced = sum(b.produced_bytes for b in use)
    pairs: list[tuple[float, float]] = []
    for b in use:
        n = max(1, b.records)
        d = max(0.0, b.t_close_ms - b.t_open_ms)
        step = max(1, n // 64)  # at most 64 points per batch, weighted by step
        for k in range(0, n, step):
            w = d * (1.0 - k / n)
            pairs.extend([(w, float(b.raw_bytes))] * step)
    pairs.sort()
    recs = sorted(b.records for b in use for _ in range(b.records))
    raws = sorted(b.raw_bytes for b in use for _ in range(max(1, b.records)))
    duration_s = res.stages["producer"].records / rate
    return Shape(
        stored_per_payload=stored / payload_use,
        produced_per_payload=produced / payload_use,
        raw_batch_p50=float(raws[len(raws) // 2]),
        records_per_batch_p50=float(recs[len(recs) // 2]),
        batches_per_s=len(all_b) / duration_s if duration_s else 0.0,
        wait_ms=tuple(p[0] for p in pairs),
        batch_raw_by_record=tuple(p[1] for p in pairs),
        steady=bool(steady),
    )


MIN_CORPUS = 1 << 20


MAX_CORPUS = 4 << 20


def records_needed(work: Workload, lingers: Sequence[float]) -> int:
    """Records covering four windows of the longest linger.ms (plus 50 ms) at the workload's rate."""
    return int(work.rate * (4 * max(lingers, default=0.0) / 1e3 + 0.05))


def corpus_for(
    spec: str, work: Workload, lingers: Sequence[float], fmt: str = "lines", seed: int = 1
) -> tuple[Corpus, str]:
    """The records to model: a built-in corpus sized to :func:`records_needed` (2-12 MiB), or a
    file's records (a user file or a topic sample), repeated in order when the file is shorter
    than needed.  Returns the corpus and a note ("" when nothing to say)."""
    need = records_needed(work, lingers)
    if spec in corpus_mod.BUILTIN:
        probe = corpus_mod.generate(spec, 64 << 10, seed)
        avg = probe.size / len(probe.records)
        size = int(min(MAX_CORPUS, max(MIN_CORPUS, need * avg)))
        c = corpus_mod.generate(spec, size, seed)
        if len(c.records) < need and size < MAX_CORPUS:  # the probe's mean record was a little short
            size = int(min(MAX_CORPUS, size * need / len(c.records) + 2 * avg))
            c = corpus_mod.generate(spec, size, seed)
        note = (
            ""
            if len(c.records) >= need
            else f"corpus capped at {size_text(MAX_CORPUS)} ({len(c.records)} of {need} records)"
        )
        return c, note
    c = corpus_mod.load(spec, fmt=fmt)
    reps = max(1, -(-need // len(c.records)))
    if c.size * reps < M_BLOCKS[0]:
        raise CostError(
            f"corpus {c.name}: {len(c.records)} records of {c.size} bytes in all ({c.size * reps} bytes as modelled), "
            f"less than the {M_BLOCKS[0]} bytes experiment M compresses at its smallest block; give a sample of more "
            "records (e.g. kcat -C -t TOPIC -c 20000 -e > sample.txt)"
        )
    if reps == 1:
        return c, ""
    c2 = Corpus(name=c.name, records=c.records * reps, source=f"{c.source} repeated {reps}x")
    return c2, f"{c.name} holds {len(c.records)} records, fewer than the {need} needed: repeated {reps} times"


def sim_config(work: Workload, spec: CodecSpec, batch_size: int, linger_ms: float, seed: int = 1) -> sim.SimConfig:
    return sim.SimConfig(
        codec=spec.codec,
        level=spec.level,
        client=work.client,
        batch_size=batch_size,
        linger_ms=linger_ms,
        partitions=work.partitions,
        rate=work.rate,
        seed=seed,
        start_ts_ms=1_700_000_000_000,
    )


def scratch_dir() -> str | None:
    """Segments of the model's runs are thrown away at once: keep them in memory when possible."""
    return "/dev/shm" if os.access("/dev/shm", os.W_OK) else None


def batch_structure(res: sim.SimResult) -> tuple[tuple[int, int], ...]:
    return tuple((b.partition, b.records) for b in res.batches)


def sweep_shapes(
    corpus: Corpus,
    work: Workload,
    specs: Sequence[CodecSpec],
    batch_sizes: Sequence[int],
    lingers: Sequence[float],
    on_run: Callable[[str], None] | None = None,
) -> dict[tuple[str, int, float], tuple[Shape, tuple[int, ...]]]:
    """Batching model for every candidate.  (batch.size, linger) pairs whose uncompressed batches
    never fill (same batches with codec none, no batch closed full) are run once, at the smallest
    batch.size; the others are recorded as equivalent."""
    out: dict[tuple[str, int, float], tuple[Shape, tuple[int, ...]]] = {}

    def one(cfg: sim.SimConfig) -> sim.SimResult:
        d = tempfile.mkdtemp(dir=tmp)
        try:
            return sim.run(corpus, cfg, d)
        finally:
            shutil.rmtree(d, ignore_errors=True)

    with tempfile.TemporaryDirectory(prefix="kbench-advise-", dir=scratch_dir()) as tmp:
        groups: list[tuple[int, float, list[int]]] = []
        for linger in lingers:
            seen: dict[tuple[tuple[int, int], ...], list[int]] = {}
            rep: list[tuple[int, list[int]]] = []
            for bs in sorted(batch_sizes):
                res = one(sim_config(work, CodecSpec("none"), bs, linger))
                st = batch_structure(res)
                full = res.close_reasons.get("full", 0)
                if full == 0 and st in seen:
                    seen[st].append(bs)
                    continue
                eq = [bs]
                if full == 0:
                    seen[st] = eq
                rep.append((bs, eq))
                out[("none", bs, linger)] = (shape_of(res, work.rate), ())
                if on_run:
                    on_run(f"none {bs} {linger:g}")
            groups += [(bs, linger, eq) for bs, eq in rep]
        for bs, linger, eq in groups:
            extra = tuple(x for x in eq if x != bs)
            out[("none", bs, linger)] = (out[("none", bs, linger)][0], extra)
            for spec in specs:
                if spec.codec == "none":
                    continue
                res = one(sim_config(work, spec, bs, linger))
                if res.mismatches:
                    raise RuntimeError(f"simulation of {spec} failed its verification ({res.mismatches} mismatches)")
                out[(str(spec), bs, linger)] = (shape_of(res, work.rate), extra)
                if on_run:
                    on_run(f"{spec} {bs} {linger:g}")
    return out


def size_text(n: int) -> str:
    if n % (1 << 20) == 0:
        return f"{n >> 20}MiB"
    if n % 1024 == 0:
        return f"{n >> 10}KiB"
    return str(n)
