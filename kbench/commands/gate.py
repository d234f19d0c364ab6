"""``kbench gate``: run the environment gate's checks and print them (exit 3 if one blocks)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kbench.commands.args import add_client_props, add_json, add_list, emit_json
from kbench.engine import gate as gate_mod
from kbench.engine import plan as plan_mod
from kbench.engine.machine import java_version, librdkafka_version
from kbench.engine.redact import Scrubber
from kbench.engine.transports import make
from kbench.engine.transports.base import TransportError
from kbench.kafka import clients, metrics, procstat
from kbench.kafka.address import check_bootstrap
from kbench.model import limits


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gate", help="check the environment before collecting", description=__doc__)
    p.add_argument("--bootstrap", help="host:port of a cluster to check (broker versions, compression.type)")
    add_list(p, "--broker-metrics", metavar="URL", help="Prometheus endpoints of the brokers of --bootstrap")
    p.add_argument("--broker-version", metavar="X.Y.Z", help="the brokers' Kafka version when nothing reports it")
    add_client_props(
        p,
        "a client property for the connection to --bootstrap, over the --plan's [client] "
        "(security.protocol, sasl.*, ssl.*: a secured cluster)",
    )
    p.add_argument("--plan", help="a plan whose topic compression and corpora to check")
    p.add_argument("--dir", default=".", help="where results will be written (free disk is checked there)")
    p.add_argument("--sample-s", type=float, default=1.0, help="seconds over which steal and swap are sampled")
    add_json(p, "the checks and the outcome")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    limits.check("--sample-s", args.sample_s, "gate_sample_s")
    if args.bootstrap is not None:
        check_bootstrap("--bootstrap", args.bootstrap)
    metrics.parse_urls(args.broker_metrics or ())  # before anything connects
    props = dict(args.props)
    plan_mod.check_client("-X", props)  # the same rules as a plan's [client] and run's -X
    clients.check_properties("-X", props, {"librdkafka"})  # a ValueError: one line, exit 2 (cli)
    kind = "bootstrap" if args.bootstrap else "local"
    ctx = gate_mod.GateContext(transport_kind=kind, disk_paths=[Path(args.dir)], sample_s=args.sample_s)
    ctx.steal_source = procstat.injected_steal()  # tests only: a steal figure instead of /proc/stat
    client: dict[str, str] = dict(props)
    raw: object = {}
    if args.plan:
        from kbench.engine.runner import load_corpora

        p = plan_mod.load(args.plan)
        client = {**p.client, **props}
        raw = p.raw
        ctx.planned_topic_compression = sorted({t for s in p.sweeps for t in s.topic_compression})
        ctx.corpus_entropies = {n: c.entropy for n, c in load_corpora(p).items()}
        ctx.steal_limit_pct = p.max_steal_pct
    if args.bootstrap:
        defn = plan_mod.TransportDef(
            kind="bootstrap",
            bootstrap=args.bootstrap,
            broker_metrics=tuple(args.broker_metrics or ()),
            broker_version=args.broker_version,
        )
        t = make(defn, client)
        try:
            info = t.open()
        except TransportError as e:  # a library's message may quote a secret
            print(f"kbench: error: {Scrubber.of(raw, props)(str(e))}", file=sys.stderr)
            return 1
        try:
            ctx.broker_versions = [b.version for b in info.brokers]
            ctx.broker_default_compression = [b.default_compression for b in info.brokers]
            if args.plan:
                for k, v in gate_mod.topology_fields(p, info).items():
                    setattr(ctx, k, v)
            else:
                ctx.broker_version_sources = [b.version_source for b in info.brokers]
                ctx.broker_cpu_sources = ["metrics" if b.metrics_url else "" for b in info.brokers]
        finally:
            t.close()
    ctx.librdkafka_version = librdkafka_version()
    ctx.java_version = java_version()
    report = gate_mod.run_gate(ctx)
    if args.json:
        emit_json({**report.as_dict(), "blocked": report.blocked, "exit_status": 3 if report.blocked else 0})
    else:
        print(report.table())
    if report.blocked:
        print(
            "gate: BLOCKED ("
            + ", ".join(r.name for r in report.blocking_failures)
            + "); kbench run refuses to collect unless --force",
            file=sys.stderr,
        )
        return 3
    print(
        "gate: passed" + (" with warnings" if any(r.outcome != "pass" for r in report.results) else ""),
        file=sys.stderr if args.json else sys.stdout,
    )
    return 0
