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
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from kbench.kafka.clients import CLIENTS, level_error
from kbench.model import codecs
from kbench.model.corpus import BUILTIN as BUILTIN_CORPORA

__all__ = [
    "Cell",
    "CorpusDef",
    "EXPERIMENTS",
    "Plan",
    "PlanError",
    "Sweep",
    "TransportDef",
    "builtin_plans",
    "expand",
    "load",
    "parse",
]

#: The experiments a sweep can feed (DESIGN §2).
EXPERIMENTS: dict[str, str] = {
    "A": "latency cost of a codec at a common fixed rate",
    "B": "throughput cost (saturated producer)",
    "C": "compression ratio vs corpus (stored bytes)",
    "D": "who pays the CPU (per role, fixed rate)",
    "E": "batch-size effect (batch.size x linger.ms x partitions)",
    "F": "broker recompression (topic compression.type vs producer codec)",
}
FIXED_RATE_EXPERIMENTS = frozenset("ADE")
TRANSPORT_KINDS = ("local", "bootstrap", "sim", "dry")
ACKS = ("0", "1", "all", "-1")
TOPIC_COMPRESSION = ("producer", "uncompressed", "none", "gzip", "snappy", "lz4", "zstd")

TOP_KEYS = {
    "name": "a short name for the plan",
    "description": "one line describing the plan",
    "repetitions": "measured repetitions per cell (>= 1; the method asks for >= 3)",
    "warmup": "true to run one discarded warm-up per cell",
    "duration_s": "seconds of each measured repetition",
    "warmup_s": "seconds of the discarded warm-up run",
    "steady_skip_s": "seconds at the start of each repetition left out of the CPU window",
    "seed": "integer seed of the cell order (random when absent; always recorded)",
    "auto_rate_fraction": 'fraction of the minimum saturated rate used for rate = "auto"',
    "transport": "table: kind, brokers, bootstrap, replication_factor, broker_pids",
    "client": "table of librdkafka properties passed verbatim to producer and consumer",
    "corpora": "table of named corpora",
    "sweep": "array of [[sweep]] tables",
    "corpus_size": "bytes of each built-in corpus",
}
TRANSPORT_KEYS = {
    "kind": "local, bootstrap, sim or dry",
    "brokers": "number of local brokers (1 or 3)",
    "bootstrap": "host:port[,host:port] of an existing cluster",
    "replication_factor": "replication factor of each cell's topic",
    "min_insync_replicas": "min.insync.replicas of each cell's topic",
    "broker_pids": "local pids of the brokers of a bootstrap cluster (for broker CPU)",
}
CORPUS_KEYS = {
    "source": "json, logs, random, or file",
    "path": 'path of a corpus file (with source = "file")',
    "format": "lines or lenprefixed",
    "size": "bytes of a built-in corpus",
    "seed": "seed of a built-in corpus",
}
SWEEP_KEYS = {
    "name": "a short name of the sweep (used in cell ids)",
    "experiments": "list of experiment ids this sweep feeds (A-F)",
    "codec": "codec[:level] or a list of them",
    "corpus": "corpus name (json, logs, random, a [corpora] name, or a file path) or a list",
    "batch_size": "librdkafka batch.size in bytes, or a list",
    "linger_ms": "linger.ms, or a list",
    "partitions": "topic partitions, or a list",
    "acks": "acks: 0, 1 or all, or a list",
    "rate": 'messages/s (a number), "saturated", or "auto", or a list',
    "topic_compression": "topic compression.type (producer, none, gzip, snappy, lz4, zstd), or a list",
    "topic_config": "table of extra topic configs",
    "key_policy": "none, roundrobin or random",
    "client": "the Kafka client driving the cell: librdkafka or java, or a list",
}


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


@dataclass(frozen=True)
class CorpusDef:
    name: str
    source: str  # a built-in generator name, or "file"
    path: str | None = None
    format: str = "lines"
    size: int = 4 << 20
    seed: int = 1


@dataclass(frozen=True)
class Sweep:
    name: str
    experiments: tuple[str, ...]
    codec: tuple[str, ...]
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


@dataclass(frozen=True)
class Cell:
    """One point of a sweep's matrix: everything a transport needs to run it."""

    cell_id: str
    sweep: str
    experiments: tuple[str, ...]
    codec: str
    corpus: str
    batch_size: int
    linger_ms: float
    partitions: int
    acks: str
    rate: float | str  # msgs/s, "saturated" or "auto"
    topic_compression: str
    topic_config: Mapping[str, str] = field(default_factory=dict)
    key_policy: str = "none"
    client: str = "librdkafka"  # the driver: librdkafka or java (kbench.kafka.clients)

    @property
    def saturated(self) -> bool:
        return self.rate == "saturated"

    def params(self) -> dict[str, Any]:
        """The cell's parameters as flat CSV-ready values."""
        return {
            "cell_id": self.cell_id,
            "sweep": self.sweep,
            "client": self.client,
            "codec": self.codec,
            "corpus": self.corpus,
            "batch_size": self.batch_size,
            "linger_ms": self.linger_ms,
            "partitions": self.partitions,
            "acks": self.acks,
            "topic_compression": self.topic_compression,
        }


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
        if not p.is_file():
            raise PlanError(
                f"plan file not found: {p}; give an existing .toml file or one of {', '.join(builtin_plans())}"
            )
        text, source, base = p.read_text(), str(p.resolve()), p.resolve().parent
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise PlanError(f"{source}: not valid TOML ({e}); fix the syntax") from None
    return parse(data, source=source, base_dir=base_dir or base)


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
    if integer and not float(v).is_integer():
        raise PlanError(f"{where}: {v!r} must be a whole number")
    if positive and (v < 0 or (v == 0 and not allow_zero)):
        bound = ">= 0" if allow_zero else "> 0"
        raise PlanError(f"{where}: {v!r} must be {bound}; give a {'non-negative' if allow_zero else 'positive'} value")
    return int(v) if integer else float(v)


def _rate(where: str, v: Any) -> float | str:
    if isinstance(v, str):
        if v in ("saturated", "auto"):
            return v
        raise PlanError(f'{where}: {v!r} is not a rate; write messages/s as a positive number, "saturated" or "auto"')
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
        raise PlanError(
            f'{where}: {v!r} is not a valid rate; write messages/s as a positive number, "saturated" or "auto"'
        )
    return float(v)


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
            if not fp.is_file():
                raise PlanError(f"{where}path: corpus file not found: {fp}; give an existing file")
            path = str(fp)
        fmt = str(tbl.get("format", "lines"))
        if fmt not in ("lines", "lenprefixed"):
            raise PlanError(f"{where}format: unknown format '{fmt}'; use lines or lenprefixed")
        size = int(_number(where + "size", tbl.get("size", corpus_size), integer=True))
        seed = int(_number(where + "seed", tbl.get("seed", 1), integer=True, allow_zero=True))
        out[name] = CorpusDef(name=name, source=source, path=path, format=fmt, size=size, seed=seed)
    return out


def _resolve_corpus(where: str, name: str, corpora: dict[str, CorpusDef], base_dir: Path, corpus_size: int) -> str:
    if name in corpora:
        return name
    if name in BUILTIN_CORPORA:
        corpora[name] = CorpusDef(name=name, source=name, size=corpus_size)
        return name
    fp = Path(name)
    fp = fp if fp.is_absolute() else base_dir / fp
    if not fp.is_file():
        raise PlanError(
            f"{where}: corpus file not found: {fp}; give an existing file, a [corpora] name, or one of {', '.join(BUILTIN_CORPORA)}"
        )
    corpora[name] = CorpusDef(name=name, source="file", path=str(fp))
    return name


def _sweep(i: int, tbl: Mapping[str, Any], corpora: dict[str, CorpusDef], base_dir: Path, corpus_size: int) -> Sweep:
    w = f"sweep[{i}]."
    if not isinstance(tbl, dict):
        raise PlanError(f"sweep[{i}]: must be a [[sweep]] table")
    _check_keys(w, tbl, SWEEP_KEYS)
    name = str(tbl.get("name", f"s{i}"))
    if not name.replace("-", "").replace("_", "").isalnum():
        raise PlanError(f"{w}name: '{name}' must be letters, digits, - or _")
    exps = [str(e).upper() for e in _as_list(tbl.get("experiments", []))]
    if not exps:
        raise PlanError(f'{w}experiments: missing; list what the sweep feeds, e.g. experiments = ["A", "C"]')
    for e in exps:
        if e not in EXPERIMENTS:
            raise PlanError(f"{w}experiments: unknown experiment '{e}'; use some of {', '.join(EXPERIMENTS)}")
    codecs_: list[str] = []
    for c in _as_list(tbl.get("codec", "none")):
        try:
            codecs_.append(str(codecs.parse_spec(str(c))))
        except codecs.CodecError as e:
            raise PlanError(f"{w}codec: {e}") from None
    corp = [
        _resolve_corpus(f"{w}corpus", str(c), corpora, base_dir, corpus_size)
        for c in _as_list(tbl.get("corpus", "json"))
    ]
    bs = [int(_number(f"{w}batch_size", v, integer=True)) for v in _as_list(tbl.get("batch_size", 16384))]
    lg = [float(_number(f"{w}linger_ms", v, allow_zero=True)) for v in _as_list(tbl.get("linger_ms", 5))]
    parts = [int(_number(f"{w}partitions", v, integer=True)) for v in _as_list(tbl.get("partitions", 1))]
    acks = [str(a) for a in _as_list(tbl.get("acks", "all"))]
    for a in acks:
        if a not in ACKS:
            raise PlanError(f"{w}acks: '{a}' is not valid; use 0, 1 or all")
    rates = [_rate(f"{w}rate", r) for r in _as_list(tbl.get("rate", "auto"))]
    tc = [str(t) for t in _as_list(tbl.get("topic_compression", "producer"))]
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
        if c not in CLIENTS:
            raise PlanError(f"{w}client: unknown client '{c}'; use one of {', '.join(CLIENTS)}")
        for spec in codecs_:
            parsed = codecs.parse_spec(spec)
            why = level_error(c, parsed.codec, parsed.level)
            if why:
                raise PlanError(f"{w}codec: {why}")
    kp = str(tbl.get("key_policy", "none"))
    if kp not in ("none", "roundrobin", "random"):
        raise PlanError(f"{w}key_policy: '{kp}' is unknown; use none, roundrobin or random")
    # The experiments' rules (DESIGN §2).
    if "B" in exps and any(r != "saturated" for r in rates):
        raise PlanError(
            f'{w}rate: experiment B measures a saturated producer; set rate = "saturated" or move B to its own sweep'
        )
    fixed = FIXED_RATE_EXPERIMENTS.intersection(exps)
    if fixed and any(r == "saturated" for r in rates):
        raise PlanError(f'{w}rate: experiments {", ".join(sorted(fixed))} need a fixed rate; give messages/s or "auto"')
    if "F" in exps and len(set(tc)) < 2:
        raise PlanError(
            f'{w}topic_compression: experiment F compares topic compression.type values; list at least two, e.g. ["producer", "lz4"]'
        )
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
        topic_compression=tuple("uncompressed" if t == "none" else t for t in tc),
        topic_config={str(k): str(v) for k, v in topic_config.items()},
        key_policy=kp,
        client=tuple(clients),
    )


def parse(data: Mapping[str, Any], source: str = "<plan>", base_dir: Path | None = None) -> Plan:
    """Validate a plan's TOML data and build a :class:`Plan`. Raises PlanError."""
    base = base_dir or Path.cwd()
    _check_keys("", data, TOP_KEYS)
    reps = int(_number("repetitions", data.get("repetitions", 3), integer=True))
    duration = float(_number("duration_s", data.get("duration_s", 10)))
    warmup_s = float(_number("warmup_s", data.get("warmup_s", min(duration, 3.0))))
    skip = float(_number("steady_skip_s", data.get("steady_skip_s", 0.0), allow_zero=True))
    if skip >= duration:
        raise PlanError(f"steady_skip_s: {skip} must be below duration_s ({duration})")
    warmup = data.get("warmup", True)
    if not isinstance(warmup, bool):
        raise PlanError("warmup: must be true or false")
    seed = data.get("seed")
    if seed is not None:
        seed = int(_number("seed", seed, integer=True, allow_zero=True))
    frac = float(_number("auto_rate_fraction", data.get("auto_rate_fraction", 0.5)))
    if frac > 1:
        raise PlanError(f"auto_rate_fraction: {frac} must be in (0, 1]; e.g. 0.5 for half of saturation")
    corpus_size = int(_number("corpus_size", data.get("corpus_size", 4 << 20), integer=True))

    t = data.get("transport", {})
    if not isinstance(t, dict):
        raise PlanError('transport: must be a table, e.g. [transport] kind = "local"')
    _check_keys("transport.", t, TRANSPORT_KEYS)
    kind = str(t.get("kind", "bootstrap" if "bootstrap" in t else "local"))
    if kind not in TRANSPORT_KINDS:
        raise PlanError(f"transport.kind: unknown transport '{kind}'; use one of {', '.join(TRANSPORT_KINDS)}")
    if kind == "bootstrap" and not t.get("bootstrap"):
        raise PlanError('transport.bootstrap: missing; give bootstrap = "host:port" or use kind = "local"')
    brokers = int(_number("transport.brokers", t.get("brokers", 1), integer=True))
    rf = int(_number("transport.replication_factor", t.get("replication_factor", 1), integer=True))
    if kind == "local" and rf > brokers:
        raise PlanError(
            f"transport.replication_factor: {rf} exceeds transport.brokers ({brokers}); lower it or add brokers"
        )
    misr = t.get("min_insync_replicas")
    if misr is not None:
        misr = int(_number("transport.min_insync_replicas", misr, integer=True))
    pids = tuple(int(_number("transport.broker_pids", p, integer=True)) for p in _as_list(t.get("broker_pids", [])))
    transport = TransportDef(kind, brokers, t.get("bootstrap"), rf, misr, pids)

    client = data.get("client", {})
    if not isinstance(client, dict):
        raise PlanError('client: must be a table of librdkafka properties, e.g. [client] "security.protocol" = "SSL"')
    managed = {
        "compression.type",
        "compression.codec",
        "compression.level",
        "batch.size",
        "linger.ms",
        "acks",
        "bootstrap.servers",
    }
    for k in client:
        if k in managed:
            raise PlanError(f"client.{k}: kbench sets this per cell; put it in a [[sweep]] axis instead")

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
    names = [s.name for s in sweeps]
    if len(set(names)) != len(names):
        raise PlanError(f"sweep.name: names must be unique, got {', '.join(names)}")
    if any("auto" in s.rate for s in sweeps) and not any("saturated" in s.rate for s in sweeps):
        raise PlanError(
            'sweep.rate: "auto" derives the rate from saturated cells, but no sweep has rate = "saturated"; add one or give messages/s'
        )
    return Plan(
        name=str(data.get("name", Path(source).stem)),
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
    )


def expand(plan: Plan) -> list[Cell]:
    """Every cell of every sweep, in a deterministic order (ids are stable for a plan)."""
    cells: list[Cell] = []
    for s in plan.sweeps:
        combos = itertools.product(
            s.codec, s.corpus, s.batch_size, s.linger_ms, s.partitions, s.acks, s.rate, s.topic_compression, s.client
        )
        for j, (c, corp, bs, lg, p, a, r, tc, cl) in enumerate(combos):
            cells.append(
                Cell(
                    cell_id=f"{s.name}-{j:03d}",
                    sweep=s.name,
                    experiments=s.experiments,
                    codec=c,
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
                )
            )
    return cells
