"""``kbench produce``: run a producer (fixed-rate or saturated), optionally with a consumer.

``--client librdkafka`` (the default) runs the C loops in this process; ``--client java``,
``kafka-go`` and ``sarama`` run driver processes over the driver protocol (docs/drivers.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbench.commands.args import (
    add_client_props,
    add_cluster_target,
    add_corpus,
    add_json,
    add_output,
    corpus_size,
    key_value,
    output_file,
    publish,
)
from kbench.kafka import admin, clients
from kbench.kafka.address import check_bootstrap
from kbench.kafka.drivers import (
    DEFAULT_HEADER_SAMPLE,
    KafkaError,
    ProducerResult,
    ProducerSpec,
    new_run_id,
    produce,
    produce_and_consume,
    redact,
)
from kbench.kafka.sendwindow import STEADY_SKIP_S, send_window
from kbench.model import corpus, limits
from kbench.model.corpus_cache import load_cached
from kbench.model.paths import default_cluster_dir
from kbench.model.stats import SATURATED_FLAG, histogram_us

if TYPE_CHECKING:
    from kbench.engine.transports.measure import DriverPool

#: The results file ``-o DIR`` holds.
RESULT_FILE = "produce.json"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "produce", help="produce a corpus at a fixed rate or saturated; optionally consume it back", description=__doc__
    )
    add_cluster_target(p)
    p.add_argument(
        "--client",
        type=_client,
        default="librdkafka",
        help="the Kafka client: librdkafka (C loops in this process), librdkafka@VERSION (the C driver on that "
        "version's library: kbench --version lists them), java (the Java driver), kafka-go or sarama (the Go driver)",
    )
    p.add_argument("--topic", required=True, help="the topic to produce to (and consume from with --consume)")
    p.add_argument("--create", action="store_true", help="create the topic first")
    p.add_argument("--partitions", type=int, default=3, help="partitions of a topic made by --create (default 3)")
    p.add_argument(
        "--replication-factor", type=int, default=1, help="replication factor of a topic made by --create (default 1)"
    )
    p.add_argument(
        "--topic-config",
        type=key_value("--topic-config", "retention.ms=60000"),
        action="append",
        default=[],
        metavar="K=V",
        help="topic config of a topic made by --create (e.g. compression.type=producer); repeat",
    )
    p.add_argument(
        "--mode",
        choices=("fixed-rate", "saturated"),
        default="fixed-rate",
        help="fixed-rate: send at --rate (latency is service time); saturated: as fast as the client can (default fixed-rate)",
    )
    p.add_argument("--rate", type=float, default=None, help="messages/s (fixed-rate: required)")
    p.add_argument("--count", type=int, default=None, help="messages to send")
    p.add_argument("--duration", type=float, default=None, help="seconds to send for (without --count)")
    p.add_argument("--codec", default=None, help="shortcut for -X compression.type=CODEC (the Go clients' own names)")
    add_client_props(p, "client property in --client's own names (docs/drivers.md section 2.1), passed verbatim")
    p.add_argument(
        "--header-sample",
        type=int,
        default=DEFAULT_HEADER_SAMPLE,
        metavar="N",
        help=f"one message in N carries the kb latency header (e2e latency sample; default {DEFAULT_HEADER_SAMPLE})",
    )
    p.add_argument(
        "--keys",
        choices=("none", "round-robin", "random"),
        default="none",
        help="message keys: none (null keys, default), round-robin or random over --nkeys values",
    )
    p.add_argument("--nkeys", type=int, default=0, help="distinct keys for --keys round-robin/random")
    add_corpus(p)
    p.add_argument(
        "--stats",
        type=Path,
        default=None,
        help="save librdkafka statistics JSON lines here (set -X statistics.interval.ms=N)",
    )
    p.add_argument("--consume", action="store_true", help="consume the messages back (e2e latency, lost, duplicates)")
    p.add_argument(
        "--connect-timeout", type=float, default=10.0, help="seconds to wait for the cluster to answer (default 10)"
    )
    add_output(p, f"{RESULT_FILE} (the results, the same document as --json)")
    add_json(p, "the results")
    p.set_defaults(func=run)


def _pcts(h: Any) -> dict[str, float | None]:
    """A histogram's µs figures (kbench.model.stats.histogram_us); empty without samples."""
    d = histogram_us(h)
    return {k: v for k, v in d.items() if k != "out_of_range"} if d and d["count"] else {}


def _summary(r: ProducerResult) -> dict[str, Any]:
    return {
        "mode": r.mode,
        **r.counts(),
        "target_rate": r.rate or None,
        "rate_deviation": r.rate_deviation,
        "delivery_errors": r.delivery_errors,
        "latency_comparable": r.latency_comparable,
        "service": _pcts(r.service),
        "delay": _pcts(r.delay),
        "corrected": _pcts(r.corrected),
        "stopped": r.stopped,
        "steady": w.as_dict() if (w := send_window(r)) is not None else None,
    }


def _client(text: str) -> str:
    """``--client``: a client kbench can run (kbench.kafka.clients.client_problem)."""
    why = clients.client_problem(text)
    if why is not None:
        raise argparse.ArgumentTypeError(why)
    return text


def _hist_pcts(h: dict[str, Any] | None) -> dict[str, float | None]:
    if not h or not h.get("count"):
        return {}
    names = {"p50_us": "p50_us", "p95_us": "p95_us", "p99_us": "p99_us", "p999_us": "p99.9_us", "max_us": "max_us"}
    return {**{out: h[k] for k, out in names.items()}, "count": h["count"]}


def _span_s(args: argparse.Namespace) -> float:
    """The run's span as the pool's request carries it (the drivers' timeouts: a consumer's
    span + 60 s, the producer's span + 120 s): --count / --rate at a fixed rate with a count, else
    --duration.  A saturated run of a count has no span: 0 when a consumer waits (its 60 s), else
    the longest duration kbench takes (the producer ends by its count)."""
    if args.mode == "fixed-rate" and args.count:
        return float(args.count / args.rate)
    if args.duration or args.consume:
        return float(args.duration)
    return limits.BOUNDS["duration_s"].high


def _run_driver(
    args: argparse.Namespace, props: dict[str, str], corp: corpus.Corpus, tmp: Path
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Producer (and consumer) as driver processes of --client, run by the local pool (the
    ``DriverPool`` every experiment's repetition runs through); their summaries.  The engine's
    modules are imported here, so that a librdkafka run starts without them (its start-up,
    benchmarks/README.md)."""
    from kbench.engine.cell import Cell
    from kbench.engine.transports.base import RunRequest, TransportError
    from kbench.engine.transports.local_pool import LocalPool
    from kbench.engine.transports.measure import Jobs, Window
    from kbench.kafka import procstat

    if args.consume and not args.count:
        raise KafkaError(
            f"--consume with --client {args.client} needs --count (the consumer checks every sequence number)"
        )
    fixed = args.mode == "fixed-rate"
    base = {
        "props": props,
        "topic": args.topic,
        "run_id": new_run_id(),
        "connect_timeout": args.connect_timeout,
        "header_sample": args.header_sample,
    }
    producer = {**base, "mode": args.mode, "count": args.count, "duration": args.duration}
    producer.update(keys=args.keys, nkeys=args.nkeys)
    consumer = {**base, "expected": args.count} if args.consume else None
    # the pool reads a cell's client (and, for librdkafka's statistics, its codec); the producer's
    # settings are in its props, verbatim
    cell = Cell(
        cell_id="produce",
        sweep="produce",
        experiments=(),
        codec="none",
        corpus=str(corp.source),
        batch_size=0,
        linger_ms=0.0,
        partitions=args.partitions,
        acks="",
        rate=args.rate if fixed else "saturated",
        topic_compression="producer",
        client=args.client,
    )
    req = RunRequest(cell, args.topic, corp, args.rate if fixed else None, _span_s(args), steady_skip_s=0.0)
    brokers = Window(lambda: procstat.snapshot([]), procstat.system_cpu)  # no broker pids: the window is the drivers'
    pool: DriverPool = LocalPool(tmp, args.header_sample)
    try:
        ran = pool.run(req, Jobs(producer, consumer, args.count), brokers)
    except TransportError as e:  # a driver failed, timed out or could not start (its message)
        raise KafkaError(str(e)) from None
    pres, cres = ran.producer, ran.consumer
    summary = {
        "mode": args.mode,
        **{k: pres[k] for k in ("sent", "delivered", "failed", "undelivered", "bytes", "achieved_rate")},
        "delivered_rate": pres["delivered_rate"],
        "target_rate": args.rate if fixed else None,
        "rate_deviation": (pres["achieved_rate"] - args.rate) / args.rate if fixed else None,
        "delivery_errors": pres["delivery_errors"],
        "latency_comparable": fixed,
        "service": _hist_pcts(pres.get("service")),
        "delay": _hist_pcts(pres.get("delay")),
        "corrected": _hist_pcts(pres.get("corrected")),
        "stopped": False,
        "client": pres.get("client"),
        "cpu": pres.get("cpu"),
        "client_stats": pres.get("client_stats"),
    }
    out = None
    if cres is not None:
        out = {k: cres[k] for k in ("records", "bytes", "unique", "lost", "duplicates", "timed_out")}
        out["e2e"] = _hist_pcts(cres.get("e2e"))
    return summary, out


def _check_bounds(args: argparse.Namespace) -> None:
    """Counts, sizes, rates and durations within kbench.model.limits, before connecting."""
    if args.count is not None:  # given, even as 0: checked as given
        limits.check("--count", args.count, "count")
    if args.mode == "fixed-rate" and args.rate is None:
        raise ValueError("--rate: fixed-rate mode needs a target; give --rate MSGS_PER_S, or --mode saturated")
    if args.rate is not None:
        limits.check("--rate", args.rate, "rate")
    if args.duration is not None:
        limits.check("--duration", args.duration, "duration_s")
    elif args.count is None:
        raise ValueError("--count or --duration: give how many messages (--count N) or for how long (--duration S)")
    # the producer takes 0 for "not given"
    args.rate, args.count, args.duration = args.rate or 0.0, args.count or 0, args.duration or 0.0
    limits.check("--partitions", args.partitions, "partitions")
    limits.check("--replication-factor", args.replication_factor, "replication_factor")
    limits.check("--nkeys", args.nkeys, "keys")
    limits.check("--connect-timeout", args.connect_timeout, "timeout_s")
    args.corpus_size = corpus_size(args)
    args.result_file = output_file(args, RESULT_FILE)


def run(args: argparse.Namespace) -> int:
    _check_bounds(args)
    if args.bootstrap is not None:
        bs = check_bootstrap("--bootstrap", args.bootstrap)
    else:
        from kbench.kafka.cluster_state import ClusterError, read_state  # only without --bootstrap

        try:
            bs = read_state(args.cluster_dir or default_cluster_dir()).bootstrap_servers
        except ClusterError as e:
            print(f"kbench: error: {e}; or give --bootstrap", file=sys.stderr)
            return 2
    clients.check_properties("-X", dict(args.props), {args.client})  # before connecting or writing
    props = {"bootstrap.servers": bs}
    if args.codec:
        props[clients.codec_property(args.client)] = args.codec
    props.update(dict(args.props))
    if args.client != "librdkafka" and args.stats:
        print(
            f"kbench: error: --stats saves librdkafka statistics; the {args.client} client's metrics are in -o DIR ({RESULT_FILE})",
            file=sys.stderr,
        )
        return 2
    spec = ProducerSpec(
        topic=args.topic,
        props=props,
        mode=args.mode,
        rate=args.rate,
        count=args.count,
        duration=args.duration,
        keys=args.keys,
        nkeys=args.nkeys,
        stats_path=args.stats,
        connect_timeout=args.connect_timeout,
        header_sample=args.header_sample,
        cpu_skip=STEADY_SKIP_S,
    )
    corp = load_cached(args.corpus, size=args.corpus_size, seed=1, fmt=args.corpus_format)
    try:
        if args.create:
            admin.create_topic(
                {"bootstrap.servers": bs},
                args.topic,
                args.partitions,
                args.replication_factor,
                configs=dict(args.topic_config),
            )
        res: ProducerResult | None = None
        cons = None
        driver: tuple[dict[str, Any], dict[str, Any] | None] | None = None
        if args.client != "librdkafka":
            import tempfile

            with tempfile.TemporaryDirectory(prefix="kbench-produce-") as tmp:
                driver = _run_driver(args, props, corp, Path(tmp))
        elif args.consume:
            pair = produce_and_consume(spec, corp.records)
            res, cons = pair.producer, pair.consumer
        else:
            res, cons = produce(spec, corp.records), None
    except (KafkaError, OSError) as e:
        print(f"kbench: error: {e}", file=sys.stderr)
        return 1
    out: dict[str, Any] = {
        "client": args.client,
        "props": redact(props),
        "topic": args.topic,
        "corpus": corp.source,
        "corpus_sha256": corp.sha256,
        "producer": _summary(res) if res is not None else driver[0] if driver else {},
    }
    if driver is not None and driver[1] is not None:
        out["consumer"] = driver[1]
    if cons is not None:
        out["consumer"] = {
            "records": cons.records,
            "bytes": cons.bytes,
            "unique": cons.unique,
            "lost": cons.lost,
            "duplicates": cons.duplicates,
            "timed_out": cons.timed_out,
            "e2e": _pcts(cons.e2e),
        }
    s = out["producer"]
    publish(out, args.result_file, args.json, _print)
    if s["stopped"]:
        print("kbench: interrupted: the figures above are partial", file=sys.stderr)
        return 130
    c = out.get("consumer")
    ok = s["failed"] == 0 and s["undelivered"] == 0 and (c is None or (c["lost"] == 0 and c["duplicates"] == 0))
    return 0 if ok else 1


def _print(out: dict[str, Any]) -> None:
    s = out["producer"]
    print(
        f"{s['mode']}: sent {s['sent']}, delivered {s['delivered']}, failed {s['failed']} {s['delivery_errors'] or ''}"
    )
    dev = f" (target {s['target_rate']:,.0f}, deviation {100 * s['rate_deviation']:+.4f} %)" if s["target_rate"] else ""
    print(f"rate: {s['achieved_rate']:,.0f} msg/s sent{dev}; {s['delivered_rate']:,.0f} msg/s delivered")
    w = s.get("steady")
    if w:
        print(
            f"steady window ({STEADY_SKIP_S:g} s after the first send .. the end of the flush, {w['window_s']:.2f} s): "
            f"{w['delivered_per_s']:,.0f} msg/s delivered, {w['cpu_us_per_msg']:.3f} µs CPU per message "
            f"(loop {w['loop_us_per_msg']:.3f}, librdkafka {w['client_us_per_msg']:.3f}), {w['cpu_pct']:.1f} % of a core"
        )
    for name in ("service", "delay", "corrected"):
        if s[name]:
            print(f"{name:9} " + "  ".join(f"{k}={v:,.1f}" for k, v in s[name].items() if k != "count"))
    if not s["latency_comparable"]:
        print(f"{SATURATED_FLAG}: saturated latencies are queueing, not service")
    if "consumer" in out:
        c = out["consumer"]
        print(f"consumer: {c['records']} records, lost {c['lost']}, duplicates {c['duplicates']}")
        print("e2e       " + "  ".join(f"{k}={v:,.1f}" for k, v in c["e2e"].items() if k != "count"))
