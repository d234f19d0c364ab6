"""Plans: a TOML matrix of cells, validated before any work, expanded into cells.

A plan names its settings at the top level, a ``[transport]`` table, optional
``[client]`` properties (librdkafka, passed verbatim), optional ``[corpora]`` and one
or more ``[[sweep]]`` tables whose list-valued axes are crossed into cells.
The full format is documented in ``docs/plan-format.md``.

Every problem is reported as a :class:`PlanError` whose message is one line naming the
key and the fix, e.g. ``sweep[0].codec: unknown codec 'zstdd'; use one of ...``.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from kbench.engine import control, premises
from kbench.engine.cell import KEY_POLICY_SPELLINGS, MAX_CELLS, Cell, cell_count, sweep_name_problem
from kbench.engine.judge import rule_from_plan
from kbench.engine.series import DEFAULT_DRIFT_P99_PCT, DEFAULT_DRIFT_RATE_PCT
from kbench.experiments import registry
from kbench.experiments.spec import DEFAULT_SATURATION_BOUND_MS
from kbench.kafka.address import check_bootstrap
from kbench.kafka.clients import GO_CLIENTS, cell_refusal, check_properties, client_problem, family
from kbench.kafka.drivers import DEFAULT_HEADER_SAMPLE, KEY_POLICIES, client_level_range, client_version
from kbench.kafka.metrics import parse_urls
from kbench.kafka.procstat import STEAL_LIMIT_PCT
from kbench.model import codecs, limits, textfile
from kbench.model.codecs import CodecSpec
from kbench.model.corpus import BUILTIN as BUILTIN_CORPORA
from kbench.model.corpus import DEFAULT_SIZE as DEFAULT_CORPUS_SIZE
from kbench.model.corpus import FORMATS as CORPUS_FORMATS
from kbench.model.paths import not_a_regular_file
from kbench.model.units import parse_size

__all__ = [
    "AUTO_PREFIX",
    "DEFAULT_SATURATION_BOUND_MS",
    "Cell",
    "CorpusDef",
    "Plan",
    "PlanError",
    "Sweep",
    "TransportDef",
    "MANAGED_CLIENT_KEYS",
    "builtin_plans",
    "check_catch_up_pool",
    "check_client",
    "expand",
    "is_derived_rate",
    "load",
    "parse",
    "rate_fraction",
]

TRANSPORT_KINDS = ("local", "bootstrap", "testbed", "sim", "dry")
#: ``rate = "auto:F"``: F × the minimum saturated rate of the run (a sweep of fractions finds the knee).
AUTO_PREFIX = "auto:"
#: The largest ``saturation_bound_ms`` a plan may set (the default is the experiments' own).
MAX_SATURATION_BOUND_MS = 60_000.0
#: The largest ``drift_rate_pct`` / ``drift_p99_pct`` a plan may set.
MAX_DRIFT_PCT = 1000.0
ACKS = ("0", "1", "all", "-1")
TOPIC_COMPRESSION = (*codecs.TOPIC_COMPRESSION, "none")
#: The key policy: the plan may write ``roundrobin`` (the older spelling) for ``round-robin``.

TOP_KEYS = {
    "name": "a short name for the plan",
    "description": "one line describing the plan",
    "repetitions": "measured repetitions per cell (>= 1; the method asks for >= 3)",
    "warmup": "true to run one discarded warm-up per cell",
    "duration_s": "seconds of each measured repetition",
    "warmup_s": "seconds of the discarded warm-up run",
    "steady_skip_s": "seconds at the start of each repetition left out of the CPU window and of the latency histograms (the steady window; the series keeps every second)",
    "seed": "integer seed of the cell order (random when absent; always recorded)",
    "auto_rate_fraction": 'fraction of the minimum saturated rate used for rate = "auto"',
    "transport": "table: kind, brokers, bootstrap, replication_factor, min_insync_replicas, broker_pids, broker_metrics",
    "client": "table of librdkafka properties passed verbatim to producer and consumer",
    "corpora": "table of named corpora",
    "sweep": "array of [[sweep]] tables",
    "corpus_size": 'bytes of each built-in corpus (or a size string, "4MiB")',
    "max_steal_pct": "CPU steal % above which a repetition is INVALID (default 1, as seed 000)",
    "retries": "extra attempts per cell for INVALID or REJECTED repetitions (default: repetitions)",
    "saturation_bound_ms": "A: a repetition whose send delay p99, queue wait beyond linger.ms or consumer lag exceeds this is SATURATED (default 20)",
    "drift_rate_pct": "time series: a repetition whose per-second rate drifts by more than this % is flagged DRIFT (default 10)",
    "drift_p99_pct": "time series: a repetition whose per-second p99 drifts by more than this % is flagged DRIFT (default 50)",
    "auto_rate_basis": '"producer" (default: rate = "auto" from the saturated cells) or "pipeline" (from the knee probed with consumers running)',
    "knee_probe_s": 'seconds of each knee probe repetition (auto_rate_basis = "pipeline"; default 3)',
    "alpha": "verdicts: the false-verdict rate of the exact test, Holm-corrected per experiment and metric (default 0.05)",
    "min_effect": "verdicts: table of the smallest shift a verdict names (latency_ms, latency_pct, throughput_pct, cpu_pct, ratio_pct)",
    **premises.KEYS,
}
#: What ``rate = "auto"`` is a fraction of (docs/methodology.md): the producer-only saturated
#: cells, or the pipeline's knee probed as A runs it (kbench.engine.knee).
AUTO_RATE_BASES = ("producer", "pipeline")
TRANSPORT_KEYS = {
    "kind": "local, bootstrap, testbed, sim or dry",
    "brokers": "number of local brokers (1 or 3)",
    "broker_nic_mbit": "testbed: each broker host's NIC rate in Mbit/s, each direction (absent: unshaped)",
    "client_nic_mbit": "testbed: the producer's and the consumer's host NIC rate in Mbit/s (absent: unshaped)",
    "delay_ms": "testbed: one-way delay on every host's NIC (needs the kernel's netem qdisc)",
    "bootstrap": "host:port[,host:port] of an existing cluster",
    "replication_factor": "replication factor of each cell's topic",
    "min_insync_replicas": "min.insync.replicas of each cell's topic",
    "broker_pids": "local pids of the brokers of a bootstrap cluster (for broker CPU)",
    "workers": "Dask scheduler address (tcp://host:8786): run each cell's drivers on Dask workers",
    "producers": "producer drivers per cell on Dask workers (the rate is split among them)",
    "consumers": "consumer drivers per cell (each reads every record; with consumer_group they share the partitions, locally too)",
    "drivers_per_worker": "drivers placed on one Dask worker process (default 1)",
    "broker_metrics": "Prometheus endpoints of the brokers (URL or host:port, one per broker): broker CPU, version, bytes",
    "broker_version": "the brokers' Kafka version, when neither the cluster nor its metrics report it",
    "header_sample": "one record in this many carries the kb latency header (default 1000)",
    "consumer_group": "true: the cell's consumers join one consumer group and share the partitions (default false: each reads every record)",
}
CORPUS_KEYS = {
    "source": "json, logs, random, or file",
    "path": 'path of a corpus file (with source = "file")',
    "format": "lines or lenprefixed",
    "size": 'bytes of a built-in corpus (or a size string, "4MiB")',
    "seed": "seed of a built-in corpus",
}
SWEEP_KEYS = {
    "name": "a short name of the sweep (used in cell ids)",
    "experiments": "list of experiment ids this sweep feeds (A-F)",
    "codec": "codec[:level] or a list of them",
    "corpus": "corpus name (json, logs, random, a [corpora] name, or a file path) or a list",
    "batch_size": 'librdkafka batch.size: bytes or a size string ("64KiB", docs/cli.md), or a list',
    "linger_ms": "linger.ms, or a list",
    "partitions": "topic partitions, or a list",
    "acks": "acks: 0, 1 or all, or a list",
    "rate": 'messages/s (a number), "saturated", "auto", or "auto:F" (F × the minimum saturated rate), or a list',
    "topic_compression": "topic compression.type (producer, none, gzip, snappy, lz4, zstd), or a list",
    "topic_config": "table of extra topic configs",
    "key_policy": "none, round-robin or random",
    "client": "the Kafka client driving the cell: librdkafka or java, or a list",
    "consumers": "catch-up: members of the consumer group that drains the backlog, or a list (default 1)",
    "backlog_bytes": "catch-up: payload bytes of the backlog produced before the drain (> 0 makes the cell a catch-up run)",
    "fetch_max_bytes": "catch-up: the consumer's fetch.max.bytes, or a list (default 52428800, Kafka's)",
    "max_partition_fetch_bytes": "catch-up: the consumer's max.partition.fetch.bytes, or a list (default 1048576)",
    "fetch_min_bytes": "catch-up: the consumer's fetch.min.bytes, or a list (default 1)",
    "control": control.KEY_HELP,
}


#: The drivers with a consumer-group mode (docs/drivers.md: the job's ``group``).
GROUP_CLIENTS = ("librdkafka", "java")


class PlanError(ValueError):
    """A plan is invalid; the message is one line naming the key and the fix."""


@dataclass(frozen=True)
class TransportDef:
    kind: str = "local"
    brokers: int = 1
    bootstrap: str | None = None
    replication_factor: int = 1
    min_insync_replicas: int | None = None
    broker_pids: tuple[int, ...] = ()
    workers: str | None = None  # Dask scheduler address (docs/distributed.md)
    producers: int = 1
    consumers: int = 1
    drivers_per_worker: int = 1
    broker_metrics: tuple[str, ...] = ()
    broker_version: str | None = None
    header_sample: int = DEFAULT_HEADER_SAMPLE  # one record in this many carries the kb header
    consumer_group: bool = False  # the cell's consumers share the partitions as one consumer group
    #: testbed (docs/testbed.md): NIC rates (Mbit/s, None: unshaped) and a one-way delay per host
    broker_nic_mbit: float | None = None
    client_nic_mbit: float | None = None
    delay_ms: float | None = None


@dataclass(frozen=True)
class CorpusDef:
    name: str
    source: str  # a built-in generator name, or "file"
    path: str | None = None
    format: str = "lines"
    size: int = DEFAULT_CORPUS_SIZE
    seed: int = 1


@dataclass(frozen=True)
class Sweep:
    name: str
    experiments: tuple[str, ...]
    codec: tuple[CodecSpec, ...]
    corpus: tuple[str, ...]
    batch_size: tuple[int, ...]
    linger_ms: tuple[float, ...]
    partitions: tuple[int, ...]
    acks: tuple[str, ...]
    rate: tuple[float | str, ...]
    topic_compression: tuple[str, ...]
    topic_config: Mapping[str, str] = field(default_factory=dict)
    key_policy: str = "none"
    client: tuple[str, ...] = ("librdkafka",)
    consumers: tuple[int, ...] = (1,)
    backlog_bytes: int = 0
    fetch_max_bytes: tuple[int, ...] = (52428800,)
    max_partition_fetch_bytes: tuple[int, ...] = (1048576,)
    fetch_min_bytes: tuple[int, ...] = (1,)
    control: str = ""  # the A/A control's baseline (kbench.engine.control): "" none, "first" or a cell id


@dataclass(frozen=True)
class Plan:
    name: str
    description: str
    repetitions: int
    warmup: bool
    duration_s: float
    warmup_s: float
    steady_skip_s: float
    seed: int | None
    auto_rate_fraction: float
    transport: TransportDef
    client: Mapping[str, str]
    corpora: Mapping[str, CorpusDef]
    sweeps: tuple[Sweep, ...]
    source: str = ""  # where it came from: builtin:<name> or a path
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)
    max_steal_pct: float = STEAL_LIMIT_PCT  # a run with more CPU steal is INVALID (seed 000: 1 %)
    retries: int = 0  # extra attempts per cell for INVALID or REJECTED repetitions
    saturation_bound_ms: float = DEFAULT_SATURATION_BOUND_MS  # A: the unsaturated check's bound
    drift_rate_pct: float = DEFAULT_DRIFT_RATE_PCT  # the time series' drift bounds (kbench.engine.series)
    drift_p99_pct: float = DEFAULT_DRIFT_P99_PCT
    auto_rate_basis: str = "producer"  # what rate = "auto" is a fraction of (AUTO_RATE_BASES)
    knee_probe_s: float = 3.0  # seconds of each knee probe (auto_rate_basis = "pipeline")
    premises: premises.Premises = field(default_factory=premises.Premises)  # knee factor, min window, warm-up

    @property
    def experiments(self) -> list[str]:
        return sorted({e for s in self.sweeps for e in s.experiments})

    def fingerprint(self) -> str:
        """sha256 of the plan's canonical JSON with secrets redacted (what ``--resume`` checks)."""
        from kbench.engine.redact import redact

        return hashlib.sha256(json.dumps(redact(self.raw), sort_keys=True, default=str).encode()).hexdigest()


# ---------------------------------------------------------------------------- loading


def builtin_plans() -> dict[str, str]:
    """Built-in plan names -> their description."""
    out: dict[str, str] = {}
    for entry in sorted(resources.files("kbench").joinpath("plans").iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".toml"):
            data = tomllib.loads(entry.read_text())
            out[entry.name[:-5]] = str(data.get("description", ""))
    return out


def load(spec: str | Path, base_dir: Path | None = None) -> Plan:
    """A built-in plan by name, or a TOML file; validated. Raises PlanError."""
    text: str
    p = Path(spec)
    if isinstance(spec, str) and "/" not in spec and not spec.endswith(".toml"):
        res = resources.files("kbench").joinpath("plans", f"{spec}.toml")
        if not res.is_file():
            raise PlanError(
                f"plan '{spec}' is neither a built-in plan nor a file; use one of {', '.join(builtin_plans())} or a .toml path"
            )
        text, source, base = res.read_text(), f"builtin:{spec}", Path.cwd()
    else:
        why = not_a_regular_file(p)
        if why == "does not exist":
            raise PlanError(
                f"plan file not found: {p}; give an existing .toml file or one of {', '.join(builtin_plans())}"
            )
        if why is not None:
            raise PlanError(f"plan {p} {why}; give a .toml file")
        text = textfile.read_text(p, "plan")  # bounded; one line for a binary or huge file
        source, base = str(p.resolve()), p.resolve().parent
    return parse(textfile.loads_toml(text, source), source=source, base_dir=base_dir or base)


def _unknown(where: str, key: str, known: Mapping[str, str]) -> PlanError:
    close = difflib.get_close_matches(key, list(known), n=1)
    hint = f"did you mean '{close[0]}'?" if close else f"known keys: {', '.join(known)}"
    return PlanError(f"{where}{key}: unknown key; {hint}")


def _check_keys(where: str, table: Mapping[str, Any], known: Mapping[str, str]) -> None:
    for k in table:
        if k not in known:
            raise _unknown(where, k, known)


def _as_list(v: Any) -> list[Any]:
    return list(v) if isinstance(v, list) else [v]


def _number(
    where: str, v: Any, *, positive: bool = True, integer: bool = False, allow_zero: bool = False
) -> float | int:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise PlanError(f"{where}: {v!r} is not a number; write a {'whole ' if integer else ''}number")
    if isinstance(v, float) and not math.isfinite(v):
        raise PlanError(f"{where}: {v} is not a finite number; give a finite value")
    if integer and isinstance(v, float) and not v.is_integer():
        raise PlanError(f"{where}: {v!r} must be a whole number")
    if positive and (v < 0 or (v == 0 and not allow_zero)):
        bound = ">= 0" if allow_zero else "> 0"
        raise PlanError(f"{where}: {v!r} must be {bound}; give a {'non-negative' if allow_zero else 'positive'} value")
    return int(v) if integer else float(v)


def _bounded(where: str, v: Any, kind: str) -> Any:
    """``v`` within ``limits.BOUNDS[kind]`` (finite, in range, whole where it must be)."""
    try:
        return limits.check(where, v, kind)
    except limits.LimitError as e:
        raise PlanError(str(e)) from None


def rate_fraction(rate: float | str, default: float) -> float | None:
    """The fraction of the minimum saturated rate a cell's ``rate`` asks for: ``default`` (the
    plan's ``auto_rate_fraction``) for ``"auto"``, F for ``"auto:F"``, None for anything else."""
    if rate == "auto":
        return default
    if isinstance(rate, str) and rate.startswith(AUTO_PREFIX):
        return float(rate[len(AUTO_PREFIX) :])
    return None


def is_derived_rate(rate: float | str) -> bool:
    """Whether ``rate`` is derived from the run's saturated cells (``auto`` or ``auto:F``)."""
    return rate_fraction(rate, 1.0) is not None


def _auto_fraction(where: str, v: str) -> str:
    """``auto:F`` with F in (0, 1], in its canonical spelling (``auto:0.20`` -> ``auto:0.2``)."""
    text = v[len(AUTO_PREFIX) :]
    try:
        f = float(text)
    except ValueError:
        f = float("nan")
    if not math.isfinite(f) or not 0 < f <= 1:
        raise PlanError(
            f'{where}: {v!r} is not a fraction of saturation; write "auto:F" with F in (0, 1], e.g. "auto:0.2"'
        )
    return f"{AUTO_PREFIX}{f:g}"


def _rate(where: str, v: Any) -> float | str:
    if isinstance(v, str):
        if v in ("saturated", "auto"):
            return v
        if v.startswith(AUTO_PREFIX):
            return _auto_fraction(where, v)
        raise PlanError(
            f'{where}: {v!r} is not a rate; write messages/s as a positive number, "saturated", "auto" or "auto:F"'
        )
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
        raise PlanError(
            f'{where}: {v!r} is not a valid rate; write messages/s as a positive number, "saturated" or "auto"'
        )
    return float(_bounded(where, v, "rate"))


def _axis(where: str, values: list[Any]) -> list[Any]:
    """A sweep axis: at least one value, none twice (two identical cells measure nothing new)."""
    if not values:
        raise PlanError(f"{where}: empty list; give at least one value")
    seen: set[str] = set()
    for v in values:
        key = repr(v)
        if key in seen:
            raise PlanError(f"{where}: {v!r} is listed twice (two identical cells); list each value once")
        seen.add(key)
    return values


#: Client properties kbench sets per cell (librdkafka's and Java's names, and the Go clients' of
#: kbench.kafka.clients.producer_props); a plan's [client] and ``-X`` may not set them.
MANAGED_CLIENT_KEYS = frozenset(
    {
        "compression.type",
        "compression.codec",
        "compression.level",
        "batch.size",
        "linger.ms",
        "acks",
        "bootstrap.servers",
        # kafka-go (Writer fields)
        *("Compression", "CompressionLevel", "BatchBytes", "BatchSize", "BatchTimeout", "RequiredAcks"),
        # sarama (Config paths)
        *("Producer.Compression", "Producer.CompressionLevel", "Producer.Flush.Bytes"),
        *("Producer.Flush.Frequency", "Producer.RequiredAcks"),
    }
)


def check_client(where: str, props: Mapping[str, Any]) -> None:
    """Refuse client properties kbench sets per cell (``where``: "client" or "-X")."""
    for k, v in props.items():
        if isinstance(v, (list, dict)):
            raise PlanError(
                f"{where}.{k}: a {type(v).__name__} is not a client property value; give a string or number"
            )
        if k in MANAGED_CLIENT_KEYS:
            sep = " " if where == "-X" else "."
            raise PlanError(f"{where}{sep}{k}: kbench sets this per cell; put it in a [[sweep]] axis instead")


def _check_name(name: object) -> str:
    """A plan name becomes a directory under runs/: one path component, no traversal."""
    if (
        not isinstance(name, str)
        or not name
        or name in (".", "..")
        or "/" in name
        or "\\" in name
        or "\0" in name
        or len(name.encode()) > 100
        or not name.isprintable()
    ):
        raise PlanError(
            f"name: {name!r} is not a usable run-directory name; use letters, digits, '-', '_' or '.' (no '/', at most 100 bytes)"
        )
    return name


def check_budget(plan: Plan) -> None:
    """Refuse a plan whose planned time exceeds limits.MAX_PLAN_S, or whose fixed-rate cells
    would send less than one message per repetition (the cell count is checked before, in parse)."""
    cells = expand(plan)
    for c in cells:
        if isinstance(c.rate, float) and c.rate * plan.duration_s < 1:
            raise PlanError(
                f"sweep.rate: {c.rate:g} msgs/s x duration_s {plan.duration_s:g} s = {c.rate * plan.duration_s:.3g} "
                f"messages per repetition (cell {c.cell_id}); at least 1 is needed: raise the rate or the duration"
            )
    per_cell = plan.repetitions * plan.duration_s + (plan.warmup_s if plan.warmup else 0.0)
    total = len(cells) * per_cell
    if total > limits.MAX_PLAN_S:
        raise PlanError(
            f"plan: {len(cells)} cells x {plan.repetitions} repetitions x {plan.duration_s:g} s (+ warm-ups) = "
            f"{total:.3g} s planned, above the limit of {limits.MAX_PLAN_S} s (7 days); "
            "lower repetitions, duration_s or the sweeps"
        )


def _corpus_defs(data: Mapping[str, Any], base_dir: Path, corpus_size: int) -> dict[str, CorpusDef]:
    out: dict[str, CorpusDef] = {}
    for name, tbl in data.items():
        where = f"corpora.{name}."
        if not isinstance(tbl, dict):
            raise PlanError(f'corpora.{name}: must be a table like {{ source = "json" }}')
        _check_keys(where, tbl, CORPUS_KEYS)
        source = str(tbl.get("source", "file" if "path" in tbl else name))
        if source != "file" and source not in BUILTIN_CORPORA:
            raise PlanError(
                f"{where}source: unknown corpus source '{source}'; use file or one of {', '.join(BUILTIN_CORPORA)}"
            )
        path = None
        if source == "file":
            if "path" not in tbl:
                raise PlanError(f'{where}path: missing; a file corpus needs path = "..."')
            fp = Path(str(tbl["path"]))
            fp = fp if fp.is_absolute() else base_dir / fp
            why = not_a_regular_file(fp)
            if why is not None:
                what = "corpus file not found" if why == "does not exist" else f"corpus {why}"
                raise PlanError(f"{where}path: {what}: {fp}; give an existing regular file")
            path = str(fp)
        fmt = str(tbl.get("format", "lines"))
        if fmt not in CORPUS_FORMATS:
            raise PlanError(f"{where}format: unknown format '{fmt}'; use lines or lenprefixed")
        size = _corpus_size(where + "size", tbl.get("size", corpus_size))
        seed = int(_bounded(where + "seed", tbl.get("seed", 1), "seed"))
        out[name] = CorpusDef(name=name, source=source, path=path, format=fmt, size=size, seed=seed)
    return out


def _size(where: str, v: Any) -> Any:
    """A size written as a string ("16KiB", "1MiB", "16k") in bytes, by the one rule of
    kbench.model.units (docs/cli.md); a number stays as it is (bytes) for the range checks."""
    if not isinstance(v, str):
        return v
    try:
        return parse_size(v, where)
    except ValueError as e:
        raise PlanError(str(e)) from None


def _corpus_size(where: str, v: Any) -> int:
    v = _size(where, v)
    try:
        return limits.check_corpus_size(where, v)
    except limits.LimitError as e:
        raise PlanError(str(e)) from None


def _resolve_corpus(where: str, name: str, corpora: dict[str, CorpusDef], base_dir: Path, corpus_size: int) -> str:
    if name in corpora:
        return name
    if name in BUILTIN_CORPORA:
        corpora[name] = CorpusDef(name=name, source=name, size=corpus_size)
        return name
    fp = Path(name)
    fp = fp if fp.is_absolute() else base_dir / fp
    why = not_a_regular_file(fp)
    if why is not None:
        what = "corpus file not found" if why == "does not exist" else f"corpus {why}"
        raise PlanError(
            f"{where}: {what}: {fp}; give an existing file, a [corpora] name, or one of {', '.join(BUILTIN_CORPORA)}"
        )
    corpora[name] = CorpusDef(name=name, source="file", path=str(fp))
    return name


def _sweep(i: int, tbl: Mapping[str, Any], corpora: dict[str, CorpusDef], base_dir: Path, corpus_size: int) -> Sweep:
    w = f"sweep[{i}]."
    if not isinstance(tbl, dict):
        raise PlanError(f"sweep[{i}]: must be a [[sweep]] table")
    _check_keys(w, tbl, SWEEP_KEYS)
    name = tbl.get("name", f"s{i}")
    if (why := sweep_name_problem(name)) is not None:
        raise PlanError(f"{w}name: {why}")
    exps = [str(e).upper() for e in _as_list(tbl.get("experiments", []))]
    if not exps:
        raise PlanError(f'{w}experiments: missing; list what the sweep feeds, e.g. experiments = ["A", "C"]')
    for e in exps:
        if e not in registry.run_experiments():
            raise PlanError(
                f"{w}experiments: unknown experiment '{e}'; use some of {', '.join(registry.run_experiments())}"
            )
    codecs_: list[CodecSpec] = []
    for c in _axis(f"{w}codec", _as_list(tbl.get("codec", "none"))):
        try:
            codecs_.append(codecs.parse_spec(str(c)))
        except codecs.CodecError as err:
            raise PlanError(f"{w}codec: {err}") from None
    _axis(f"{w}codec", codecs_)  # "zstd" and "zstd:3" may differ in text only
    corp = [
        _resolve_corpus(f"{w}corpus", str(c), corpora, base_dir, corpus_size)
        for c in _axis(f"{w}corpus", _as_list(tbl.get("corpus", "json")))
    ]
    bs = [
        int(_bounded(f"{w}batch_size", _size(f"{w}batch_size", v), "batch_size"))
        for v in _as_list(tbl.get("batch_size", 16384))
    ]
    lg = [float(_bounded(f"{w}linger_ms", v, "linger_ms")) for v in _as_list(tbl.get("linger_ms", 5))]
    parts = [int(_bounded(f"{w}partitions", v, "partitions")) for v in _as_list(tbl.get("partitions", 1))]
    for axis, vals in (("batch_size", bs), ("linger_ms", lg), ("partitions", parts)):
        _axis(f"{w}{axis}", vals)
    acks = _axis(f"{w}acks", [str(a) for a in _as_list(tbl.get("acks", "all"))])
    for a in acks:
        if a not in ACKS:
            raise PlanError(f"{w}acks: '{a}' is not valid; use 0, 1 or all")
    rates = _axis(f"{w}rate", [_rate(f"{w}rate", r) for r in _as_list(tbl.get("rate", "auto"))])
    tc = _axis(f"{w}topic_compression", [str(t) for t in _as_list(tbl.get("topic_compression", "producer"))])
    for t in tc:
        if t not in TOPIC_COMPRESSION:
            raise PlanError(
                f"{w}topic_compression: '{t}' is not a Kafka compression.type; use one of {', '.join(TOPIC_COMPRESSION)}"
            )
    topic_config = tbl.get("topic_config", {})
    if not isinstance(topic_config, dict):
        raise PlanError(f'{w}topic_config: must be a table of config = "value"')
    if "compression.type" in topic_config:
        raise PlanError(f"{w}topic_config.compression.type: set it with topic_compression instead")
    clients = [str(c) for c in _as_list(tbl.get("client", "librdkafka"))]
    if not clients:
        raise PlanError(f'{w}client: empty; give librdkafka, java or a list like ["librdkafka", "java"]')
    for c in clients:
        if (why := client_problem(c)) is not None:
            raise PlanError(f"{w}client: {why}")
    kp = str(tbl.get("key_policy", "none"))
    kp = KEY_POLICY_SPELLINGS.get(kp, kp)
    if kp not in KEY_POLICIES:
        raise PlanError(f"{w}key_policy: '{kp}' is unknown; use {', '.join(KEY_POLICIES)}")
    # The experiments' rules (DESIGN §2).
    for e in sorted(registry.saturated().intersection(exps)):
        if any(r != "saturated" for r in rates):
            raise PlanError(
                f'{w}rate: experiment {e} measures a saturated producer; set rate = "saturated" or move {e} to its own sweep'
            )
    fixed = registry.fixed_rate().intersection(exps)
    if fixed and any(r == "saturated" for r in rates):
        raise PlanError(f'{w}rate: experiments {", ".join(sorted(fixed))} need a fixed rate; give messages/s or "auto"')
    axes: dict[str, list[Any]] = {
        "codec": codecs_,
        "corpus": corp,
        "batch_size": bs,
        "linger_ms": lg,
        "partitions": parts,
    }
    axes.update(acks=acks, rate=rates, topic_compression=tc, client=clients)
    catch = {
        k: _axis(f"{w}{k}", [int(_number(f"{w}{k}", v, integer=True)) for v in _as_list(tbl.get(k, d))])
        for k, d in (
            ("consumers", 1),
            ("fetch_max_bytes", 52428800),
            ("max_partition_fetch_bytes", 1048576),
            ("fetch_min_bytes", 1),
        )
    }
    if any(v < 1000 for v in catch["fetch_max_bytes"]):
        raise PlanError(f"{w}fetch_max_bytes: must be >= 1000 (librdkafka's smallest message.max.bytes)")
    backlog = int(_bounded(f"{w}backlog_bytes", tbl.get("backlog_bytes", 0), "backlog_bytes"))
    if not backlog and any(k in tbl for k in catch):
        raise PlanError(f"{w}backlog_bytes: consumers and fetch settings are catch-up axes; give backlog_bytes > 0")
    if backlog and not {family(c) for c in clients} <= set(GROUP_CLIENTS):
        raise PlanError(
            f"{w}client: a catch-up drain (backlog_bytes) needs consumer groups, which only the "
            f"{' and '.join(GROUP_CLIENTS)} drivers have; drop the others"
        )
    axes.update(catch, backlog_bytes=[backlog])
    for e in exps:
        check = registry.get(e).sweep_check
        problem = check(axes) if check is not None else ""
        if problem:
            raise PlanError(f"{w}{problem}")
    return Sweep(
        name=name,
        experiments=tuple(exps),
        codec=tuple(codecs_),
        corpus=tuple(corp),
        batch_size=tuple(bs),
        linger_ms=tuple(lg),
        partitions=tuple(parts),
        acks=tuple("all" if a == "-1" else a for a in acks),
        rate=tuple(rates),
        topic_compression=tuple(tc),
        topic_config={str(k): str(v) for k, v in topic_config.items()},
        key_policy=kp,
        client=tuple(clients),
        consumers=tuple(catch["consumers"]),
        backlog_bytes=backlog,
        fetch_max_bytes=tuple(catch["fetch_max_bytes"]),
        max_partition_fetch_bytes=tuple(catch["max_partition_fetch_bytes"]),
        fetch_min_bytes=tuple(catch["fetch_min_bytes"]),
        control=_control(f"{w}control", tbl.get("control", False)),
    )


def _control(where: str, v: Any) -> str:
    try:
        return control.parse(where, v)
    except control.ControlError as e:
        raise PlanError(str(e)) from None


def _check_go_cells(i: int, s: Sweep) -> None:
    """A cell a Go client cannot express in its own settings (kbench.kafka.clients.cell_refusal)
    is refused now, with the reason: never a setting silently dropped at run time."""
    for client in (c for c in s.client if c in GO_CLIENTS):
        for spec in s.codec:
            for bs in s.batch_size:
                for lg in s.linger_ms:
                    for acks in s.acks:
                        why = cell_refusal(client, spec.codec, spec.level, bs, lg, acks)
                        if why is not None:
                            raise PlanError(
                                f"sweep[{i}] ({s.name}): codec {spec}, batch_size {bs}, linger_ms {lg:g}, "
                                f"acks {acks}: {why}"
                            )


def _check_client_levels(i: int, s: Sweep) -> None:
    """A level the linked librdkafka refuses fails at run time: refuse it now, naming the range
    (the Java client's per-codec ranges are its own to enforce)."""
    if "librdkafka" not in {family(c) for c in s.client}:
        return
    for spec in s.codec:
        text = str(spec)
        if spec.level is None:
            continue
        lo, hi = client_level_range(spec.codec)
        if not lo <= spec.level <= hi:
            raise PlanError(
                f"sweep[{i}].codec: {text} is refused by the client ({client_version()} accepts "
                f"compression.level {lo}..{hi}); use {spec.codec}:{max(lo, 1)}..{spec.codec}:{hi} on a Kafka "
                f'transport, client = "java" for higher levels, or kind = "sim"'
            )


def parse(data: Mapping[str, Any], source: str = "<plan>", base_dir: Path | None = None) -> Plan:
    """Validate a plan's TOML data and build a :class:`Plan`. Raises PlanError."""
    base = base_dir or Path.cwd()
    _check_keys("", data, TOP_KEYS)
    reps = int(_bounded("repetitions", data.get("repetitions", 3), "repetitions"))
    duration = float(_bounded("duration_s", data.get("duration_s", 10), "duration_s"))
    warmup_s = float(_bounded("warmup_s", data.get("warmup_s", min(duration, 3.0)), "warmup_s"))
    skip = float(_bounded("steady_skip_s", data.get("steady_skip_s", 0.0), "steady_skip_s"))
    if skip >= duration:
        raise PlanError(f"steady_skip_s: {skip} must be below duration_s ({duration})")
    warmup = data.get("warmup", True)
    if not isinstance(warmup, bool):
        raise PlanError("warmup: must be true or false")
    seed = data.get("seed")
    if seed is not None:
        seed = int(_bounded("seed", seed, "seed"))
    frac = float(_bounded("auto_rate_fraction", data.get("auto_rate_fraction", 0.5), "auto_rate_fraction"))
    corpus_size = _corpus_size("corpus_size", data.get("corpus_size", DEFAULT_CORPUS_SIZE))
    max_steal = float(_number("max_steal_pct", data.get("max_steal_pct", STEAL_LIMIT_PCT)))
    if max_steal > 100:
        raise PlanError(f"max_steal_pct: {max_steal} must be in (0, 100]; the method's default is 1")
    retries = int(_bounded("retries", data.get("retries", reps), "retries"))
    sat_bound = float(_number("saturation_bound_ms", data.get("saturation_bound_ms", DEFAULT_SATURATION_BOUND_MS)))
    if sat_bound > MAX_SATURATION_BOUND_MS:
        raise PlanError(
            f"saturation_bound_ms: {sat_bound:g} must be at most {MAX_SATURATION_BOUND_MS:g} ms (a latency bound above "
            f"a minute checks nothing); the default is {DEFAULT_SATURATION_BOUND_MS:g}"
        )
    try:
        rule_from_plan(data)  # the verdict rule's keys (kbench.engine.judge), read again by every verdict
    except ValueError as e:
        raise PlanError(f"{e}; see docs/plan-format.md") from None
    drift = {}
    for key, default in (("drift_rate_pct", DEFAULT_DRIFT_RATE_PCT), ("drift_p99_pct", DEFAULT_DRIFT_P99_PCT)):
        drift[key] = float(_number(key, data.get(key, default)))
        if drift[key] > MAX_DRIFT_PCT:
            raise PlanError(
                f"{key}: {drift[key]:g} must be at most {MAX_DRIFT_PCT:g} % (a bound above flags nothing); the default is {default:g}"
            )

    basis = data.get("auto_rate_basis", "producer")
    if basis not in AUTO_RATE_BASES:
        raise PlanError(
            f"auto_rate_basis: {basis!r} is not one of {', '.join(AUTO_RATE_BASES)}; the default is producer"
        )
    probe_s = float(_bounded("knee_probe_s", data.get("knee_probe_s", 3.0), "warmup_s"))  # a probe is a run too
    try:
        prem = premises.parse(data, duration, skip)
    except premises.PremiseError as e:
        raise PlanError(str(e)) from None

    t = data.get("transport", {})
    if not isinstance(t, dict):
        raise PlanError('transport: must be a table, e.g. [transport] kind = "local"')
    _check_keys("transport.", t, TRANSPORT_KEYS)
    kind = str(t.get("kind", "bootstrap" if "bootstrap" in t else "local"))
    if kind not in TRANSPORT_KINDS:
        raise PlanError(f"transport.kind: unknown transport '{kind}'; use one of {', '.join(TRANSPORT_KINDS)}")
    if kind == "bootstrap":
        check_bootstrap("transport.bootstrap", t.get("bootstrap"))
    brokers = int(_bounded("transport.brokers", t.get("brokers", 1), "brokers"))
    rf = int(_bounded("transport.replication_factor", t.get("replication_factor", 1), "replication_factor"))
    if kind in ("local", "testbed") and rf > brokers:
        raise PlanError(
            f"transport.replication_factor: {rf} exceeds transport.brokers ({brokers}); lower it or add brokers"
        )
    misr = t.get("min_insync_replicas")
    if misr is not None:
        misr = int(_bounded("transport.min_insync_replicas", misr, "min_insync_replicas"))
        if misr > rf:
            raise PlanError(
                f"transport.min_insync_replicas: {misr} exceeds replication_factor ({rf}); no write could succeed, lower it"
            )
    pids = tuple(int(_bounded("transport.broker_pids", p, "pid")) for p in _as_list(t.get("broker_pids", [])))
    endpoints = tuple(str(u) for u in _as_list(t.get("broker_metrics", [])))
    parse_urls(endpoints)  # a URL that is not http(s) with a host and a port: refused at load
    bver = t.get("broker_version")
    workers = t.get("workers")
    if workers is not None and (not isinstance(workers, str) or not workers):
        raise PlanError('transport.workers: give the Dask scheduler address, e.g. workers = "tcp://10.0.0.5:8786"')
    dist = {
        k: int(_bounded(f"transport.{k}", t.get(k, 1), "drivers"))
        for k in ("producers", "consumers", "drivers_per_worker")
    }
    if workers is not None and kind not in ("local", "bootstrap"):
        raise PlanError(f"transport.workers: Dask workers drive real Kafka; use kind local or bootstrap, not {kind}")
    hs = int(_bounded("transport.header_sample", t.get("header_sample", DEFAULT_HEADER_SAMPLE), "header_sample"))
    shaping: dict[str, float | None] = {}
    for k in ("broker_nic_mbit", "client_nic_mbit", "delay_ms"):
        v = t.get(k)
        if v is not None and kind != "testbed":
            raise PlanError(
                f'transport.{k}: shapes an emulated host\'s NIC; it needs kind = "testbed" (docs/testbed.md)'
            )
        shaping[k] = None if v is None else float(_number(f"transport.{k}", v, allow_zero=(k == "delay_ms")))
    if kind == "testbed" and workers is not None:
        raise PlanError(
            "transport.workers: the testbed runs every role on an emulated host of this machine; drop workers"
        )
    group = t.get("consumer_group", False)
    if not isinstance(group, bool):
        raise PlanError("transport.consumer_group: must be true or false")
    if dist["consumers"] > 1 and workers is None and not group:
        raise PlanError(
            "transport.consumers: several consumers on this machine share a topic as a group; set consumer_group = true "
            "or give workers"
        )
    transport = TransportDef(
        kind,
        brokers,
        t.get("bootstrap"),
        rf,
        misr,
        pids,
        workers,
        **dist,
        broker_metrics=endpoints,
        broker_version=None if bver is None else str(bver),
        header_sample=hs,
        consumer_group=group,
        broker_nic_mbit=shaping["broker_nic_mbit"],
        client_nic_mbit=shaping["client_nic_mbit"],
        delay_ms=shaping["delay_ms"],
    )

    client = data.get("client", {})
    if not isinstance(client, dict):
        raise PlanError('client: must be a table of librdkafka properties, e.g. [client] "security.protocol" = "SSL"')
    check_client("client", client)

    cdata = data.get("corpora", {})
    if not isinstance(cdata, dict):
        raise PlanError("corpora: must be a table of named corpora")
    corpora = _corpus_defs(cdata, base, corpus_size)
    sweeps_raw = data.get("sweep")
    if not sweeps_raw:
        raise PlanError("sweep: missing; add at least one [[sweep]] table with experiments = [...]")
    if not isinstance(sweeps_raw, list):
        raise PlanError("sweep: write it as [[sweep]] (an array of tables)")
    sweeps = tuple(_sweep(i, s, corpora, base, corpus_size) for i, s in enumerate(sweeps_raw))
    check_catch_up_pool(sweeps, workers)
    for i, s in enumerate(sweeps):
        if group and not {family(c) for c in s.client} <= set(GROUP_CLIENTS):
            raise PlanError(
                f"sweep[{i}].client: transport.consumer_group needs consumer groups, which only the "
                f"{' and '.join(GROUP_CLIENTS)} drivers have; drop the others"
            )
    if kind != "sim":  # the sim transport models batches, no client; dry runs the client's settings
        for i, s in enumerate(sweeps):
            _check_client_levels(i, s)
            _check_go_cells(i, s)
    if kind == "sim":
        for i, s in enumerate(sweeps):
            go = [c for c in s.client if c in GO_CLIENTS]
            if go:
                raise PlanError(
                    f"sweep[{i}].client: {', '.join(go)} has no batching model in the simulator (it models "
                    'librdkafka and java); run it on a Kafka transport (kind = "local") or drop it'
                )
    try:  # [client] names checked against the client of every cell (librdkafka knows its own)
        check_properties("client", client, {c for s in sweeps for c in s.client})
    except ValueError as e:
        raise PlanError(str(e)) from None
    names = [s.name for s in sweeps]
    if len(set(names)) != len(names):
        raise PlanError(f"sweep.name: names must be unique, got {', '.join(names)}")
    if any(is_derived_rate(r) for s in sweeps for r in s.rate) and not any("saturated" in s.rate for s in sweeps):
        raise PlanError(
            'sweep.rate: "auto" (or "auto:F") derives the rate from saturated cells, but no sweep has rate = "saturated"; '
            "add one or give messages/s"
        )
    plan = Plan(
        name=_check_name(data.get("name", Path(source).stem)),
        description=str(data.get("description", "")),
        repetitions=reps,
        warmup=warmup,
        duration_s=duration,
        warmup_s=warmup_s,
        steady_skip_s=skip,
        seed=seed,
        auto_rate_fraction=frac,
        transport=transport,
        client={str(k): str(v) for k, v in client.items()},
        corpora=corpora,
        sweeps=sweeps,
        source=source,
        raw=dict(data),
        max_steal_pct=max_steal,
        retries=retries,
        saturation_bound_ms=sat_bound,
        drift_rate_pct=drift["drift_rate_pct"],
        drift_p99_pct=drift["drift_p99_pct"],
        auto_rate_basis=str(basis),
        knee_probe_s=probe_s,
        premises=prem,
    )
    if (n := cell_count(plan.sweeps)) > MAX_CELLS:  # counted before anything expands them
        raise PlanError(f"plan: {n} cells, above the limit of {MAX_CELLS} cells; split it or shorten its sweeps")
    try:
        control.check(plan.sweeps, expand(plan))
    except control.ControlError as e:
        raise PlanError(str(e)) from None
    check_budget(plan)
    return plan


def check_catch_up_pool(sweeps: Sequence[Sweep], workers: str | None) -> None:
    """A catch-up drain (G's backlog_bytes) runs on this machine's driver pool: DaskPool runs timed
    repetitions only, so a plan (or ``--workers``) putting one on Dask workers is refused."""
    for i, s in enumerate(sweeps):
        if workers is not None and s.backlog_bytes > 0:
            raise PlanError(
                f"sweep[{i}].backlog_bytes: a catch-up drain runs on this machine's driver pool, not on Dask "
                "workers; drop transport.workers (--workers) or run this sweep in a plan of its own"
            )


def expand(plan: Plan) -> list[Cell]:
    """Every cell of every sweep, in a deterministic order (ids are stable for a plan)."""
    cells: list[Cell] = []
    for s in plan.sweeps:
        combos = itertools.product(
            s.codec, s.corpus, s.batch_size, s.linger_ms, s.partitions, s.acks, s.rate, s.topic_compression, s.client
        )
        catch = list(itertools.product(s.consumers, s.fetch_max_bytes, s.max_partition_fetch_bytes, s.fetch_min_bytes))
        for j, ((c, corp, bs, lg, p, a, r, tc, cl), (k, fmx, mpf, fmn)) in enumerate(itertools.product(combos, catch)):
            cells.append(
                Cell(
                    cell_id=f"{s.name}-{j:03d}",
                    sweep=s.name,
                    experiments=s.experiments,
                    codec=str(c),
                    spec=c,
                    corpus=corp,
                    batch_size=bs,
                    linger_ms=lg,
                    partitions=p,
                    acks=a,
                    rate=r,
                    topic_compression=tc,
                    topic_config=s.topic_config,
                    key_policy=s.key_policy,
                    client=cl,
                    consumers=k,
                    backlog_bytes=s.backlog_bytes,
                    fetch_max_bytes=fmx,
                    max_partition_fetch_bytes=mpf,
                    fetch_min_bytes=fmn,
                )
            )
    return control.add(plan.sweeps, cells)
