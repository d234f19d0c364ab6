"""``kbench cluster up|status|down``: a local Apache Kafka (KRaft) cluster on 127.0.0.1."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kbench.commands.args import SIZE_HELP, add_json, emit_json, key_value, size
from kbench.kafka import admin
from kbench.kafka.cluster import LocalCluster
from kbench.kafka.cluster_state import DEFAULT_PORT_BASE, ClusterError, default_dir, down, read_state, status
from kbench.kafka.kafka_dist import KafkaDistError
from kbench.model import limits

_KV = key_value("--broker-config", "num.io.threads=4")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cluster", help="start, inspect or stop a local Kafka cluster", description=__doc__)
    csub = p.add_subparsers(dest="cluster_command", metavar="ACTION")
    csub.required = True

    up = csub.add_parser(
        "up",
        help="format storage, start the brokers and wait until all are registered",
        description="Start a fresh local KRaft cluster (any stopped cluster's data in --dir is "
        "removed first) and print its bootstrap servers, pids and directories.",
    )
    up.add_argument("--brokers", type=int, choices=(1, 3), default=1, help="number of nodes (broker+controller each)")
    up.add_argument("--dir", type=Path, default=None, help=f"cluster directory (default {default_dir()})")
    up.add_argument(
        "--broker-config",
        type=_KV,
        action="append",
        default=[],
        metavar="K=V",
        help="extra broker setting, repeatable (defaults pin compression.type=producer)",
    )
    up.add_argument(
        "--heap", default="384MiB", help=f"broker JVM heap, at least 16MiB, whole MiB (default 384MiB; {SIZE_HELP})"
    )
    up.add_argument(
        "--port-base",
        type=int,
        default=DEFAULT_PORT_BASE,
        help=f"node i listens on BASE+i-1 and its controller on BASE+100+i-1 (default {DEFAULT_PORT_BASE}; 0 = free ports)",
    )
    up.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for readiness")
    up.add_argument(
        "--no-metrics",
        action="store_true",
        help="start brokers without the Prometheus JMX exporter (default: on BASE+200+i-1, docs/remote.md)",
    )
    add_json(up, "the cluster's state (as cluster.json holds it)")
    up.set_defaults(func=_up)

    st = csub.add_parser("status", help="show the cluster's brokers, pids and whether they are alive")
    st.add_argument("--dir", type=Path, default=None, help=f"cluster directory (default {default_dir()})")
    add_json(st, "the cluster's state, each broker's liveness and the registered brokers")
    st.set_defaults(func=_status)

    dn = csub.add_parser("down", help="stop the processes 'up' started (and only those)")
    dn.add_argument("--dir", type=Path, default=None, help=f"cluster directory (default {default_dir()})")
    dn.add_argument("--timeout", type=float, default=15.0, help="seconds before SIGKILL")
    add_json(dn, "the pids stopped")
    dn.set_defaults(func=_down)


def _heap(text: str) -> str:
    """The JVM's spelling (-Xmx384m, m = MiB) of a --heap size written by the one size rule."""
    n = size("--heap", text)
    if n < 16 << 20 or n % (1 << 20):
        raise ValueError(f"--heap: {n} bytes; give a whole number of MiB, at least 16MiB (e.g. 384MiB or 1GiB)")
    return f"{n >> 20}m"


def _dir(args: argparse.Namespace) -> Path:
    return args.dir if args.dir is not None else default_dir()


def _print_state(d: Path, alive: dict[int, bool] | None = None) -> None:
    st = read_state(d)
    print(f"cluster {st.cluster_id} (Kafka {st.kafka_version}) in {st.dir}")
    print(f"bootstrap.servers={st.bootstrap_servers}")
    for b in st.brokers:
        extra = "" if alive is None else ("  alive" if alive[b.node_id] else "  DEAD")
        print(
            f"  node {b.node_id}: pid {b.pid} port {b.port} controller {b.controller_port} data {b.data_dir} logs {b.log_dir}{extra}"
        )
    if st.metrics_urls:
        print(f"broker metrics: {','.join(st.metrics_urls)}")


def _up(args: argparse.Namespace) -> int:
    limits.check("--timeout", args.timeout, "timeout_s")
    d = _dir(args)
    try:
        c = LocalCluster(
            brokers=args.brokers,
            directory=d,
            broker_config=dict(args.broker_config),
            heap=_heap(args.heap),
            port_base=args.port_base,
            start_timeout=args.timeout,
            die_with_parent=False,
            metrics=not args.no_metrics,
        )
        c.start()
    except (ClusterError, KafkaDistError) as e:
        print(f"kbench: error: {e}", file=sys.stderr)
        return 1
    if args.json:
        emit_json(_state_doc(d))
        return 0
    _print_state(d)
    print(f"state: {d / 'cluster.json'}; stop with: kbench cluster down --dir {d}")
    return 0


def _state_doc(d: Path, alive: dict[int, bool] | None = None) -> dict[str, object]:
    doc: dict[str, object] = json.loads(read_state(d).to_json())
    if alive is not None:
        doc["alive"] = {str(k): v for k, v in alive.items()}
    return doc


def _status(args: argparse.Namespace) -> int:
    d = _dir(args)
    try:
        alive = status(d)
        if args.json:
            doc = _state_doc(d, alive)
        else:
            _print_state(d, alive)
        if not all(alive.values()):
            if args.json:
                emit_json(doc)
            return 1
        md = admin.metadata({"bootstrap.servers": read_state(d).bootstrap_servers}, timeout=5.0)
        if args.json:
            emit_json({**doc, "registered_brokers": sorted(b[0] for b in md["brokers"]), "topics": len(md["topics"])})
        else:
            print(f"registered brokers: {sorted(b[0] for b in md['brokers'])}; topics: {len(md['topics'])}")
    except (ClusterError, admin.KafkaError) as e:
        print(f"kbench: error: {e}", file=sys.stderr)
        return 1
    return 0


def _down(args: argparse.Namespace) -> int:
    limits.check("--timeout", args.timeout, "timeout_s")
    d = _dir(args)
    try:
        pids = down(d, timeout=args.timeout)
    except ClusterError as e:
        print(f"kbench: error: {e}", file=sys.stderr)
        return 1
    if args.json:
        emit_json({"stopped_pids": pids})
        return 0
    print(f"stopped pids {pids}" if pids else "no running broker of this cluster was left; state removed")
    return 0
