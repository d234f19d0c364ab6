"""A plan's TOML data parsed and validated into a :class:`Plan`: its top-level settings, the
transport, the client properties, then its corpora and sweeps (kbench.engine.plan_sweeps)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kbench.engine import control, premises
from kbench.engine.cell import MAX_CELLS, cell_count
from kbench.engine.judge import rule_from_plan
from kbench.engine.plan_expand import (
    check_budget,
    check_local_only,
    expand,
)
from kbench.engine.plan_schema import (
    AUTO_RATE_BASES,
    GROUP_CLIENTS,
    MAX_DRIFT_PCT,
    MAX_SATURATION_BOUND_MS,
    TOP_KEYS,
    TRANSPORT_KEYS,
    TRANSPORT_KINDS,
    Plan,
    PlanError,
    TransportDef,
)
from kbench.engine.plan_sweeps import (
    check_client_levels,
    check_go_cells,
    corpus_defs,
    parse_sweep,
)
from kbench.engine.plan_values import (
    as_list,
    bounded,
    check_client,
    check_keys,
    check_name,
    is_derived_rate,
    number_value,
    parse_corpus_size,
)
from kbench.engine.series import DEFAULT_DRIFT_P99_PCT, DEFAULT_DRIFT_RATE_PCT
from kbench.experiments.spec import DEFAULT_SATURATION_BOUND_MS
from kbench.kafka.address import check_bootstrap
from kbench.kafka.clients import GO_CLIENTS, check_properties, family
from kbench.kafka.drivers import DEFAULT_HEADER_SAMPLE
from kbench.kafka.metrics import parse_urls
from kbench.kafka.procstat import STEAL_LIMIT_PCT
from kbench.model.corpus import DEFAULT_SIZE as DEFAULT_CORPUS_SIZE

__all__ = [
    "parse",
]


def parse(data: Mapping[str, Any], source: str = "<plan>", base_dir: Path | None = None) -> Plan:
    """Validate a plan's TOML data and build a :class:`Plan`. Raises PlanError."""
    base = base_dir or Path.cwd()
    check_keys("", data, TOP_KEYS)
    reps = int(bounded("repetitions", data.get("repetitions", 3), "repetitions"))
    duration = float(bounded("duration_s", data.get("duration_s", 10), "duration_s"))
    warmup_s = float(bounded("warmup_s", data.get("warmup_s", min(duration, 3.0)), "warmup_s"))
    skip = float(bounded("steady_skip_s", data.get("steady_skip_s", 0.0), "steady_skip_s"))
    if skip >= duration:
        raise PlanError(f"steady_skip_s: {skip} must be below duration_s ({duration})")
    warmup = data.get("warmup", True)
    if not isinstance(warmup, bool):
        raise PlanError("warmup: must be true or false")
    seed = data.get("seed")
    if seed is not None:
        seed = int(bounded("seed", seed, "seed"))
    frac = float(bounded("auto_rate_fraction", data.get("auto_rate_fraction", 0.5), "auto_rate_fraction"))
    corpus_size = parse_corpus_size("corpus_size", data.get("corpus_size", DEFAULT_CORPUS_SIZE))
    max_steal = float(number_value("max_steal_pct", data.get("max_steal_pct", STEAL_LIMIT_PCT)))
    if max_steal > 100:
        raise PlanError(f"max_steal_pct: {max_steal} must be in (0, 100]; the method's default is 1")
    retries = int(bounded("retries", data.get("retries", reps), "retries"))
    sat_bound = float(number_value("saturation_bound_ms", data.get("saturation_bound_ms", DEFAULT_SATURATION_BOUND_MS)))
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
        drift[key] = float(number_value(key, data.get(key, default)))
        if drift[key] > MAX_DRIFT_PCT:
            raise PlanError(
                f"{key}: {drift[key]:g} must be at most {MAX_DRIFT_PCT:g} % (a bound above flags nothing); the default is {default:g}"
            )

    basis = data.get("auto_rate_basis", "producer")
    if basis not in AUTO_RATE_BASES:
        raise PlanError(
            f"auto_rate_basis: {basis!r} is not one of {', '.join(AUTO_RATE_BASES)}; the default is producer"
        )
    probe_s = float(bounded("knee_probe_s", data.get("knee_probe_s", 3.0), "warmup_s"))  # a probe is a run too
    try:
        prem = premises.parse(data, duration, skip)
    except premises.PremiseError as e:
        raise PlanError(str(e)) from None

    t = data.get("transport", {})
    if not isinstance(t, dict):
        raise PlanError('transport: must be a table, e.g. [transport] kind = "local"')
    check_keys("transport.", t, TRANSPORT_KEYS)
    kind = str(t.get("kind", "bootstrap" if "bootstrap" in t else "local"))
    if kind not in TRANSPORT_KINDS:
        raise PlanError(f"transport.kind: unknown transport '{kind}'; use one of {', '.join(TRANSPORT_KINDS)}")
    if kind == "bootstrap":
        check_bootstrap("transport.bootstrap", t.get("bootstrap"))
    brokers = int(bounded("transport.brokers", t.get("brokers", 1), "brokers"))
    rf = int(bounded("transport.replication_factor", t.get("replication_factor", 1), "replication_factor"))
    if kind in ("local", "testbed") and rf > brokers:
        raise PlanError(
            f"transport.replication_factor: {rf} exceeds transport.brokers ({brokers}); lower it or add brokers"
        )
    misr = t.get("min_insync_replicas")
    if misr is not None:
        misr = int(bounded("transport.min_insync_replicas", misr, "min_insync_replicas"))
        if misr > rf:
            raise PlanError(
                f"transport.min_insync_replicas: {misr} exceeds replication_factor ({rf}); no write could succeed, lower it"
            )
    pids = tuple(int(bounded("transport.broker_pids", p, "pid")) for p in as_list(t.get("broker_pids", [])))
    endpoints = tuple(str(u) for u in as_list(t.get("broker_metrics", [])))
    try:
        parse_urls(endpoints)  # a URL that is not http(s) with a host and a port: refused at load
    except ValueError as e:
        raise PlanError(f"transport.broker_metrics: {e}") from None
    bver = t.get("broker_version")
    workers = t.get("workers")
    if workers is not None and (not isinstance(workers, str) or not workers):
        raise PlanError('transport.workers: give the Dask scheduler address, e.g. workers = "tcp://10.0.0.5:8786"')
    dist = {
        k: int(bounded(f"transport.{k}", t.get(k, 1), "drivers"))
        for k in ("producers", "consumers", "drivers_per_worker")
    }
    if workers is not None and kind not in ("local", "bootstrap"):
        raise PlanError(f"transport.workers: Dask workers drive real Kafka; use kind local or bootstrap, not {kind}")
    hs = int(bounded("transport.header_sample", t.get("header_sample", DEFAULT_HEADER_SAMPLE), "header_sample"))
    shaping: dict[str, float | None] = {}
    for k in ("broker_nic_mbit", "client_nic_mbit", "delay_ms"):
        v = t.get(k)
        if v is not None and kind != "testbed":
            raise PlanError(
                f'transport.{k}: shapes an emulated host\'s NIC; it needs kind = "testbed" (docs/testbed.md)'
            )
        shaping[k] = None if v is None else float(number_value(f"transport.{k}", v, allow_zero=(k == "delay_ms")))
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
    corpora = corpus_defs(cdata, base, corpus_size)
    sweeps_raw = data.get("sweep")
    if not sweeps_raw:
        raise PlanError("sweep: missing; add at least one [[sweep]] table with experiments = [...]")
    if not isinstance(sweeps_raw, list):
        raise PlanError("sweep: write it as [[sweep]] (an array of tables)")
    sweeps = tuple(parse_sweep(i, s, corpora, base, corpus_size) for i, s in enumerate(sweeps_raw))
    check_local_only(sweeps, workers)
    for i, s in enumerate(sweeps):
        if group and not {family(c) for c in s.client} <= set(GROUP_CLIENTS):
            raise PlanError(
                f"sweep[{i}].client: transport.consumer_group needs consumer groups, which only the "
                f"{' and '.join(GROUP_CLIENTS)} drivers have; drop the others"
            )
    if kind != "sim":  # the sim transport models batches, no client; dry runs the client's settings
        for i, s in enumerate(sweeps):
            check_client_levels(i, s)
            check_go_cells(i, s)
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
        name=check_name(data.get("name", Path(source).stem)),
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
