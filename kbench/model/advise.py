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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from kbench.model import codecs as codecs_mod
from kbench.model.advise_prices import (
    GB,
    HOURS_PER_MONTH,
    PRICE_KEYS,
    SECONDS_PER_MONTH,
    CostError,
    Prices,
    load_prices,
)
from kbench.model.advise_shapes import (
    CLIENT_SPECS,
    DEFAULT_BATCH_SIZES,
    DEFAULT_LINGERS_MS,
    MAX_CORPUS,
    MIN_CORPUS,
    Shape,
    Workload,
    client_specs,
    corpus_for,
    records_needed,
    shape_of,
    sim_config,
    size_text,
    sweep_shapes,
)
from kbench.model.codecs import CodecSpec
from kbench.model.corpus import Corpus
from kbench.model.csvcell import safe_row
from kbench.model.mtable import MTable, measure_m
from kbench.model.paths import atomic_write

__all__ = [
    "Advice",
    "DEFAULT_COST_TOLERANCE_PCT",
    "Candidate",
    "Choice",
    "CLIENT_SPECS",
    "CostError",
    "GB",
    "HOURS_PER_MONTH",
    "MAX_CORPUS",
    "MIN_CORPUS",
    "PRICE_KEYS",
    "Prices",
    "Shape",
    "Workload",
    "corpus_for",
    "records_needed",
    "shape_of",
    "size_text",
    "sim_config",
    "sweep_shapes",
    "advise",
    "client_specs",
    "extreme_saving",
    "load_prices",
    "pareto_front",
    "price",
    "recommend",
]


# --------------------------------------------------------------------------- prices


# --------------------------------------------------------------------------- workload and batches


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
        return f"{self.spec} batch.size={size_text(self.batch_size)} linger.ms={self.linger_ms:g}"

    @property
    def cores(self) -> float:
        return self.producer_cores + self.broker_cores + self.consumer_cores

    def row(self) -> dict[str, object]:
        d = asdict(self)
        d["equivalent_batch_sizes"] = ";".join(str(x) for x in self.equivalent_batch_sizes)
        d["spec"] = self.spec
        return d


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
    m_comp, dec = m.speed(str(spec), shape.raw_batch_p50)
    # librdkafka compresses each batch with a new context (linked to libzstd dynamically, sized for
    # the level, not the batch: zstd:12 pays ~26 ms per batch here), not M's reused one; the other
    # clients' codecs are priced at M's figure (their context reuse is not measured by kbench)
    comp = m.producer_speed(str(spec), shape.raw_batch_p50) if work.client == "librdkafka" else m_comp
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
