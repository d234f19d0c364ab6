"""``kbench advise``: turn a user's records into a priced recommendation.

Every candidate (codec × level × ``batch.size`` × ``linger.ms``) goes through the batching model
(:mod:`kbench.model.simulator`, the C model of ``docs/batching-model.md``) on the user's records at
the user's rate and partition count.  The model gives the batches: their records, raw and stored
bytes and how long each stayed open.  Experiment M (:mod:`kbench.model.microbench`), measured on
this machine over the same records cut into blocks the size of the predicted batches, gives the
CPU a codec costs.  A cost model (``docs/advise.md``, :func:`price`) turns bytes and CPU into money
per month; the Pareto front over (cost, added p99 latency) and one recommendation follow.

Nothing here talks to Kafka; ``kbench.engine.advise_verify`` runs candidates for real.
"""

from __future__ import annotations

import csv
import io
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

from kbench.model import codecs as codecs_mod
from kbench.model import corpus as corpus_mod
from kbench.model import limits, textfile
from kbench.model import simulator as sim
from kbench.model.codecs import CodecSpec
from kbench.model.corpus import Corpus
from kbench.model.csvcell import safe_row
from kbench.model.mtable import M_BLOCKS, MTable, measure_m
from kbench.model.paths import atomic_write

__all__ = [
    "Advice",
    "DEFAULT_COST_TOLERANCE_PCT",
    "Candidate",
    "Choice",
    "CostError",
    "Prices",
    "Workload",
    "advise",
    "client_specs",
    "extreme_saving",
    "load_prices",
    "pareto_front",
    "price",
    "recommend",
]

HOURS_PER_MONTH = 730.0
SECONDS_PER_MONTH = HOURS_PER_MONTH * 3600.0
GB = 1e9

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


class CostError(ValueError):
    """A cost file or workload is invalid; the message names the key and the fix."""


def client_specs(client: str) -> list[CodecSpec]:
    if client not in CLIENT_SPECS:
        raise CostError(f"unknown client '{client}'; use {' or '.join(CLIENT_SPECS)}")
    return [codecs_mod.parse_spec(s) for s in CLIENT_SPECS[client]]


# --------------------------------------------------------------------------- prices


@dataclass(frozen=True)
class Prices:
    """Unit prices and the few coefficients the model cannot measure without a cluster.

    Defaults are public list prices of a large cloud provider in 2026 (inter-zone transfer
    0.01 $/GB each way, general-purpose vCPU-hour, gp3-class block storage) and a 3-zone
    cluster with producers and consumers spread evenly over the zones."""

    network_per_gb: float = 0.02  # $ per GB crossing zones (0.01 out + 0.01 in)
    core_hour: float = 0.04  # $ per vCPU-hour
    storage_gb_month: float = 0.08  # $ per GB-month of broker disk
    cross_zone_produce: float = 2 / 3  # share of produce traffic reaching a leader in another zone
    cross_zone_replication: float = 1.0  # followers sit in other zones
    cross_zone_consume: float = 2 / 3  # share of fetch traffic from a leader in another zone
    consumer_groups: int = 1  # how many times every stored byte is consumed
    # CPU besides (de)compression.  Defaults measured on the 2-vCPU development VM by
    # ``kbench advise --verify`` (its none run, json corpus, 10000 records/s, 2026-11-30).
    producer_cpu_us_per_record: float = 7.0  # client library + tick-paced loop, per record (6.6 measured)
    broker_cpu_us_per_record: float = 19.0  # per record per replica (request handling, validation)
    broker_cpu_s_per_gb: float = 1.0  # per GB stored per replica (network, page cache, CRC)
    consumer_cpu_us_per_record: float = 1.2  # client library, per record
    source: str = "defaults"

    def lines(self) -> list[str]:
        """Every price and coefficient, one per line, as printed with an answer."""
        doc = {
            "network_per_gb": "$ per GB between zones",
            "core_hour": "$ per core-hour",
            "storage_gb_month": "$ per GB-month stored",
            "cross_zone_produce": "share of produce bytes crossing zones",
            "cross_zone_replication": "share of replication bytes crossing zones",
            "cross_zone_consume": "share of consumed bytes crossing zones",
            "consumer_groups": "consumer groups reading every byte",
            "producer_cpu_us_per_record": "producer CPU-us per record besides compression",
            "broker_cpu_us_per_record": "broker CPU-us per record per replica",
            "broker_cpu_s_per_gb": "broker CPU-s per GB stored per replica",
            "consumer_cpu_us_per_record": "consumer CPU-us per record besides decompression",
        }
        return [f"  {k} = {getattr(self, k):.4g}  ({v})" for k, v in doc.items()]


PRICE_KEYS: tuple[str, ...] = tuple(f.name for f in fields(Prices) if f.name != "source")
#: Largest price (or count) a cost file may give: above it, sums of a month's costs lose meaning.
MAX_PRICE = 1e9


def load_prices(path: Path | str | None, **overrides: float) -> Prices:
    """Prices from a TOML cost file (any subset of :data:`PRICE_KEYS`), then ``overrides``."""
    values: dict[str, object] = {}
    source = "defaults"
    if path is not None:
        p = Path(path)
        if not p.exists():
            raise CostError(f"cost file not found: {p}; give an existing TOML file")
        try:
            data = textfile.loads_toml(textfile.read_text(p, "cost file"), f"cost file {p}")
        except textfile.TextFileError as e:
            raise CostError(str(e)) from None
        for k, v in data.items():
            if k not in PRICE_KEYS:
                raise CostError(f"cost file {p}: unknown key '{k}'; use one of {', '.join(PRICE_KEYS)}")
            top = 1.0 if k.startswith("cross_zone_") else MAX_PRICE  # a share of the bytes
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0 <= v <= top
            if k == "consumer_groups" and ok:
                ok = float(v).is_integer()
            if not ok:
                what = "a whole number" if k == "consumer_groups" else "a number"
                raise CostError(f"cost file {p}: {k} must be {what} from 0 to {top:g}, got {v!r}")
            values[k] = float(v) if k != "consumer_groups" else int(v)
        source = str(p)
    for k, v in overrides.items():
        if v is not None:
            values[k] = v
            source = f"{source} + overrides"
    return replace(Prices(), source=source, **values)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- workload and batches


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


def _shape(res: sim.SimResult, rate: float) -> Shape:
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
            else f"corpus capped at {_size(MAX_CORPUS)} ({len(c.records)} of {need} records)"
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


# --------------------------------------------------------------------------- candidates and prices


@dataclass(frozen=True)
class Candidate:
    codec: str
    level: int | None
    batch_size: int
    linger_ms: float
    ratio: float  # payload / stored
    stored_per_payload: float
    produced_per_payload: float
    raw_batch_p50: float
    records_per_batch_p50: float
    compress_mb_s: float
    decompress_mb_s: float
    wait_p50_ms: float
    wait_p99_ms: float
    compress_ms_p99: float
    decompress_ms_p99: float
    added_p99_ms: float
    producer_cores: float
    broker_cores: float
    consumer_cores: float
    network_gb_month: float
    stored_gb: float
    cpu_usd_month: float
    network_usd_month: float
    storage_usd_month: float
    total_usd_month: float
    within_budget: bool
    steady: bool
    equivalent_batch_sizes: tuple[int, ...] = ()

    @property
    def spec(self) -> str:
        return self.codec if self.level is None else f"{self.codec}:{self.level}"

    @property
    def label(self) -> str:
        return f"{self.spec} batch.size={_size(self.batch_size)} linger.ms={self.linger_ms:g}"

    @property
    def cores(self) -> float:
        return self.producer_cores + self.broker_cores + self.consumer_cores

    def row(self) -> dict[str, object]:
        d = asdict(self)
        d["equivalent_batch_sizes"] = ";".join(str(x) for x in self.equivalent_batch_sizes)
        d["spec"] = self.spec
        return d


def _size(n: int) -> str:
    if n % (1 << 20) == 0:
        return f"{n >> 20}MiB"
    if n % 1024 == 0:
        return f"{n >> 10}KiB"
    return str(n)


def _p(sorted_values: Sequence[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    return float(sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))])


def price(
    spec: CodecSpec,
    batch_size: int,
    linger_ms: float,
    shape: Shape,
    payload_bytes_per_s: float,
    work: Workload,
    prices: Prices,
    m: MTable,
) -> Candidate:
    """The cost model of ``docs/advise.md`` for one candidate."""
    comp, dec = m.speed(str(spec), shape.raw_batch_p50)
    gbps = payload_bytes_per_s / GB  # payload GB per second
    stored_gbps = gbps * shape.stored_per_payload
    produced_gbps = gbps * shape.produced_per_payload
    compressed = spec.codec != "none"
    compress_s_per_gb = GB / 1e6 / comp if compressed else 0.0
    decompress_s_per_gb = GB / 1e6 / dec if compressed else 0.0
    rps = work.rate
    producer = rps * prices.producer_cpu_us_per_record / 1e6 + gbps * compress_s_per_gb
    # The leader decompresses every compressed batch to validate it; every replica handles records and bytes.
    broker = (
        gbps * decompress_s_per_gb
        + rps * work.replication_factor * prices.broker_cpu_us_per_record / 1e6
        + stored_gbps * work.replication_factor * prices.broker_cpu_s_per_gb
    )
    consumer = prices.consumer_groups * (rps * prices.consumer_cpu_us_per_record / 1e6 + gbps * decompress_s_per_gb)
    net_gbps = (
        produced_gbps * prices.cross_zone_produce
        + stored_gbps * (work.replication_factor - 1) * prices.cross_zone_replication
        + stored_gbps * prices.consumer_groups * prices.cross_zone_consume
    )
    stored_gb = stored_gbps * work.retention_hours * 3600.0 * work.replication_factor
    cpu_usd = (producer + broker + consumer) * HOURS_PER_MONTH * prices.core_hour
    net_usd = net_gbps * SECONDS_PER_MONTH * prices.network_per_gb
    storage_usd = stored_gb * prices.storage_gb_month
    # Latency a record gains: waiting for its batch to close, then compressing and decompressing it.
    added = sorted(
        w + (r / (comp * 1e6) + r / (dec * 1e6)) * 1e3 for w, r in zip(shape.wait_ms, shape.batch_raw_by_record)
    )
    raw_p99 = _p(sorted(shape.batch_raw_by_record), 0.99)
    added_p99 = _p(added, 0.99)
    return Candidate(
        codec=spec.codec,
        level=spec.level,
        batch_size=batch_size,
        linger_ms=linger_ms,
        ratio=1.0 / shape.stored_per_payload,
        stored_per_payload=shape.stored_per_payload,
        produced_per_payload=shape.produced_per_payload,
        raw_batch_p50=shape.raw_batch_p50,
        records_per_batch_p50=shape.records_per_batch_p50,
        compress_mb_s=comp,
        decompress_mb_s=dec,
        wait_p50_ms=_p(shape.wait_ms, 0.5),
        wait_p99_ms=_p(shape.wait_ms, 0.99),
        compress_ms_p99=raw_p99 / (comp * 1e6) * 1e3,
        decompress_ms_p99=raw_p99 / (dec * 1e6) * 1e3,
        added_p99_ms=added_p99,
        producer_cores=producer,
        broker_cores=broker,
        consumer_cores=consumer,
        network_gb_month=net_gbps * SECONDS_PER_MONTH,
        stored_gb=stored_gb,
        cpu_usd_month=cpu_usd,
        network_usd_month=net_usd,
        storage_usd_month=storage_usd,
        total_usd_month=cpu_usd + net_usd + storage_usd,
        within_budget=work.p99_budget_ms is None or added_p99 <= work.p99_budget_ms,
        steady=shape.steady,
    )


def pareto_front(cands: Iterable[Candidate]) -> list[Candidate]:
    """Candidates no other beats on both total cost and added p99 latency, cheapest first."""
    pts = sorted(cands, key=lambda c: (c.total_usd_month, c.added_p99_ms))
    front: list[Candidate] = []
    best_lat = math.inf
    for c in pts:
        if c.added_p99_ms < best_lat:
            front.append(c)
            best_lat = c.added_p99_ms
    return front


#: The default p99 budget (ms) of a recommendation: twice Kafka's default linger.ms (5 ms since Kafka
#: 4.0), so a choice never waits more than one extra default linger at p99 (docs/advise.md).
DEFAULT_P99_BUDGET_MS = 10.0

#: The default tolerance of the recommendation: a candidate costing at most this many percent more
#: than the cheapest counts as "as cheap" (docs/advise.md).
DEFAULT_COST_TOLERANCE_PCT = 1.0


@dataclass(frozen=True)
class Choice:
    """The recommendation, its runner-up, the cheapest candidate (the front's extreme), the reason."""

    best: Candidate
    runner_up: Candidate | None
    cheapest: Candidate
    reason: str


def recommend(
    cands: Sequence[Candidate], tolerance_pct: float = DEFAULT_COST_TOLERANCE_PCT, budget_ms: float | None = None
) -> Choice:
    """The knee of the (cost, added p99) front: among the candidates within the latency budget that
    cost at most ``tolerance_pct`` % more than the cheapest, the one adding the least p99 latency
    (ties: the cheaper).  It is on the front.  The runner-up is its neighbour on the front (cheapest
    first): the row above it when that one is within the tolerance too, else the row below."""
    ok = [c for c in cands if c.within_budget]
    if not ok:
        raise CostError("no candidate meets the p99 budget; raise --p99-budget-ms or add --linger-ms 0")
    if not (math.isfinite(tolerance_pct) and 0 <= tolerance_pct <= 100):
        raise CostError(f"--cost-tolerance: {tolerance_pct:g} is out of range; give 0 to 100 (percent)")
    cheapest = min(ok, key=lambda c: (c.total_usd_month, c.added_p99_ms))
    limit = cheapest.total_usd_month * (1 + tolerance_pct / 100)
    near = [c for c in ok if c.total_usd_month <= limit]
    best = min(near, key=lambda c: (c.added_p99_ms, c.total_usd_month))
    front = pareto_front(ok)
    i = next(k for k, c in enumerate(front) if c is best)
    if i > 0:
        runner: Candidate | None = front[i - 1]
    else:
        runner = front[i + 1] if i + 1 < len(front) else None
    none = min((c for c in ok if c.codec == "none"), key=lambda c: c.total_usd_month, default=None)
    parts = {"CPU": best.cpu_usd_month, "network": best.network_usd_month, "storage": best.storage_usd_month}
    main = max(parts, key=lambda k: parts[k])
    if budget_ms is not None:
        budget = f" within the p99 budget of {budget_ms:g} ms"
    else:
        budget = " within the p99 budget" if len(ok) < len(cands) else ""
    reason = (
        f"{best.label} adds the least p99 latency ({best.added_p99_ms:.2f} ms) of the candidates{budget} costing "
        f"at most {tolerance_pct:g} % more than the cheapest, at ${best.total_usd_month:,.2f}/month ({main} is its "
        f"largest part, ${parts[main]:,.2f}); it stores {best.ratio:.2f}x less than the payload"
    )
    if none is not None and best.codec != "none":
        reason += f"; no compression would cost ${none.total_usd_month:,.2f}/month"
    return Choice(best, runner, cheapest, reason + ".")


def extreme_saving(advice: Advice) -> str:
    """What the cheapest candidate (the front's extreme) would save against the recommendation, in one line."""
    b = advice.best
    x = advice.cheapest or b
    if x is b:
        return f"the recommendation is also the cheapest candidate (${b.total_usd_month:,.2f}/month)"
    saved = b.total_usd_month - x.total_usd_month
    return (
        f"the cheapest candidate, {x.label}, would save ${saved:,.2f}/month "
        f"({100 * saved / b.total_usd_month:.2f} % of ${b.total_usd_month:,.2f}) "
        f"for {x.added_p99_ms - b.added_p99_ms:+.2f} ms of added p99 ({x.added_p99_ms:.2f} ms)"
    )


# --------------------------------------------------------------------------- the sweep


@dataclass
class Advice:
    workload: Workload
    prices: Prices
    corpus: Corpus
    candidates: list[Candidate]
    front: list[Candidate]
    best: Candidate
    runner_up: Candidate | None
    reason: str
    m_measured: int
    notes: list[str] = field(default_factory=list)
    cheapest: Candidate | None = None  # the front's cheapest extreme; None only in hand-made Advice
    tolerance_pct: float = DEFAULT_COST_TOLERANCE_PCT

    def __post_init__(self) -> None:
        if self.cheapest is None:
            self.cheapest = self.best

    def choice_of(self, c: Candidate) -> str:
        """advise.csv's ``choice`` column: recommended, runner-up, cheapest or empty."""
        if c is self.best:
            return "recommended"
        if c is self.runner_up:
            return "runner-up"
        return "cheapest" if c is self.cheapest else ""


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


def _scratch() -> str | None:
    """Segments of the model's runs are thrown away at once: keep them in memory when possible."""
    return "/dev/shm" if os.access("/dev/shm", os.W_OK) else None


def _structure(res: sim.SimResult) -> tuple[tuple[int, int], ...]:
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

    with tempfile.TemporaryDirectory(prefix="kbench-advise-", dir=_scratch()) as tmp:
        groups: list[tuple[int, float, list[int]]] = []
        for linger in lingers:
            seen: dict[tuple[tuple[int, int], ...], list[int]] = {}
            rep: list[tuple[int, list[int]]] = []
            for bs in sorted(batch_sizes):
                res = one(sim_config(work, CodecSpec("none"), bs, linger))
                st = _structure(res)
                full = res.close_reasons.get("full", 0)
                if full == 0 and st in seen:
                    seen[st].append(bs)
                    continue
                eq = [bs]
                if full == 0:
                    seen[st] = eq
                rep.append((bs, eq))
                out[("none", bs, linger)] = (_shape(res, work.rate), ())
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
                out[(str(spec), bs, linger)] = (_shape(res, work.rate), extra)
                if on_run:
                    on_run(f"{spec} {bs} {linger:g}")
    return out


def advise(
    corpus: Corpus,
    work: Workload,
    prices: Prices,
    *,
    specs: Sequence[CodecSpec] | None = None,
    batch_sizes: Sequence[int] = DEFAULT_BATCH_SIZES,
    lingers: Sequence[float] = DEFAULT_LINGERS_MS,
    cache_dir: Path | None = None,
    shapes: Mapping[tuple[str, int, float], tuple[Shape, tuple[int, ...]]] | None = None,
    m: MTable | None = None,
    on_progress: Callable[[str], None] | None = None,
    tolerance_pct: float = DEFAULT_COST_TOLERANCE_PCT,
) -> Advice:
    """Sweep, price, and recommend.  ``shapes`` and ``m`` may be passed in to re-price a sweep
    under other prices or budgets without re-running the model (tests and what-ifs)."""
    work.validate()
    specs = list(specs) if specs is not None else client_specs(work.client)
    notes: list[str] = []
    if m is None:
        m = measure_m(corpus, specs, cache_dir=cache_dir, on_cell=on_progress)
    if shapes is None:
        shapes = sweep_shapes(corpus, work, specs, batch_sizes, lingers, on_run=on_progress)
    payload_per_record = corpus.size / len(corpus.records)
    bps = work.rate * payload_per_record
    cands: list[Candidate] = []
    for (s, bs, linger), (shape, eq) in shapes.items():
        spec = codecs_mod.parse_spec(s)
        c = price(spec, bs, linger, shape, bps, work, prices, m)
        cands.append(replace(c, equivalent_batch_sizes=eq))
    if not all(c.steady for c in cands):
        notes.append(
            "some candidates saw only flush-closed batches (the corpus is shorter than their linger.ms "
            "at this rate); their ratios are those of partial batches"
        )
    choice = recommend(cands, tolerance_pct, work.p99_budget_ms)
    return Advice(
        workload=work,
        prices=prices,
        corpus=corpus,
        candidates=sorted(cands, key=lambda c: c.total_usd_month),
        front=pareto_front(cands),
        best=choice.best,
        runner_up=choice.runner_up,
        reason=choice.reason,
        m_measured=m.measured,
        notes=notes,
        cheapest=choice.cheapest,
        tolerance_pct=tolerance_pct,
    )


def write_csv(cands: Sequence[Candidate], path: Path, advice: Advice | None = None) -> Path:
    """Every candidate, one row each; with ``advice``, a ``choice`` column marks the recommendation,
    the runner-up and the cheapest."""
    rows = [c.row() | ({"choice": advice.choice_of(c)} if advice is not None else {}) for c in cands]
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=list(rows[0]))
    w.writeheader()
    for r in rows:
        w.writerow(safe_row({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()}))
    return atomic_write(path, buf.getvalue().encode())
