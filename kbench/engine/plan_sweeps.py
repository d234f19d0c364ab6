"""A plan's ``[corpora]`` and ``[[sweep]]`` tables validated into :class:`CorpusDef` and
:class:`Sweep` (every axis, the axes an experiment brings through the registry, the client's level range and
the Go clients' limits)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kbench.engine.cell import KEY_POLICY_SPELLINGS, sweep_name_problem
from kbench.engine.plan_schema import (
    ACKS,
    CORPUS_KEYS,
    SWEEP_KEYS,
    TOPIC_COMPRESSION,
    CorpusDef,
    PlanError,
    Sweep,
)
from kbench.engine.plan_values import (
    as_list,
    axis_values,
    bounded,
    check_keys,
    control_mark,
    parse_corpus_size,
    rate_value,
    size_value,
)
from kbench.experiments import registry
from kbench.kafka.clients import GO_CLIENTS, cell_refusal, client_problem, family
from kbench.kafka.drivers import KEY_POLICIES, client_level_range, client_version
from kbench.model import codecs
from kbench.model.codecs import CodecSpec
from kbench.model.corpus import BUILTIN as BUILTIN_CORPORA
from kbench.model.corpus import FORMATS as CORPUS_FORMATS
from kbench.model.paths import not_a_regular_file

__all__ = [
    "check_client_levels",
    "check_go_cells",
    "corpus_defs",
    "parse_sweep",
    "resolve_corpus",
]


def corpus_defs(data: Mapping[str, Any], base_dir: Path, corpus_size: int) -> dict[str, CorpusDef]:
    out: dict[str, CorpusDef] = {}
    for name, tbl in data.items():
        where = f"corpora.{name}."
        if not isinstance(tbl, dict):
            raise PlanError(f'corpora.{name}: must be a table like {{ source = "json" }}')
        check_keys(where, tbl, CORPUS_KEYS)
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
        size = parse_corpus_size(where + "size", tbl.get("size", corpus_size))
        seed = int(bounded(where + "seed", tbl.get("seed", 1), "seed"))
        out[name] = CorpusDef(name=name, source=source, path=path, format=fmt, size=size, seed=seed)
    return out


def resolve_corpus(where: str, name: str, corpora: dict[str, CorpusDef], base_dir: Path, corpus_size: int) -> str:
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


def parse_sweep(
    i: int, tbl: Mapping[str, Any], corpora: dict[str, CorpusDef], base_dir: Path, corpus_size: int
) -> Sweep:
    w = f"sweep[{i}]."
    if not isinstance(tbl, dict):
        raise PlanError(f"sweep[{i}]: must be a [[sweep]] table")
    check_keys(w, tbl, {**SWEEP_KEYS, **registry.sweep_keys()})  # with the experiments' own keys
    name = tbl.get("name", f"s{i}")
    if (why := sweep_name_problem(name)) is not None:
        raise PlanError(f"{w}name: {why}")
    exps = [str(e).upper() for e in as_list(tbl.get("experiments", []))]
    if not exps:
        raise PlanError(f'{w}experiments: missing; list what the sweep feeds, e.g. experiments = ["A", "C"]')
    for e in exps:
        if e not in registry.run_experiments():
            raise PlanError(
                f"{w}experiments: unknown experiment '{e}'; use some of {', '.join(registry.run_experiments())}"
            )
    codecs_: list[CodecSpec] = []
    for c in axis_values(f"{w}codec", as_list(tbl.get("codec", "none"))):
        try:
            codecs_.append(codecs.parse_spec(str(c)))
        except codecs.CodecError as err:
            raise PlanError(f"{w}codec: {err}") from None
    axis_values(f"{w}codec", codecs_)  # "zstd" and "zstd:3" may differ in text only
    corp = [
        resolve_corpus(f"{w}corpus", str(c), corpora, base_dir, corpus_size)
        for c in axis_values(f"{w}corpus", as_list(tbl.get("corpus", "json")))
    ]
    bs = [
        int(bounded(f"{w}batch_size", size_value(f"{w}batch_size", v), "batch_size"))
        for v in as_list(tbl.get("batch_size", 16384))
    ]
    lg = [float(bounded(f"{w}linger_ms", v, "linger_ms")) for v in as_list(tbl.get("linger_ms", 5))]
    parts = [int(bounded(f"{w}partitions", v, "partitions")) for v in as_list(tbl.get("partitions", 1))]
    for axis, vals in (("batch_size", bs), ("linger_ms", lg), ("partitions", parts)):
        axis_values(f"{w}{axis}", vals)
    acks = axis_values(f"{w}acks", [str(a) for a in as_list(tbl.get("acks", "all"))])
    for a in acks:
        if a not in ACKS:
            raise PlanError(f"{w}acks: '{a}' is not valid; use 0, 1 or all")
    rates = axis_values(f"{w}rate", [rate_value(f"{w}rate", r) for r in as_list(tbl.get("rate", "auto"))])
    tc = axis_values(f"{w}topic_compression", [str(t) for t in as_list(tbl.get("topic_compression", "producer"))])
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
    clients = [str(c) for c in as_list(tbl.get("client", "librdkafka"))]
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
    brought = registry.sweep_axes(w, tbl, clients)  # the experiments' own axes (e.g. G's catch-up)
    axes.update({k: list(v) for k, v in brought.items()})
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
        control=control_mark(f"{w}control", tbl.get("control", False)),
        extras=brought,
    )


def check_go_cells(i: int, s: Sweep) -> None:
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


def check_client_levels(i: int, s: Sweep) -> None:
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
