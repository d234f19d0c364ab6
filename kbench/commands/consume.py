"""``kbench consume``: read a topic with kbench's C consumer and say how fast and at what CPU.

The consumer twin of ``kbench produce``: from a position (``--from beginning``, ``end``, an offset
or ``@MS``, a timestamp), assigning every partition (as ``kcat -C`` does) or in a consumer group
(``--group ID``), for ``--count`` records or ``--duration`` seconds.  The group join and the wait
for the first record are phases of their own; records/s and MB/s are over the first record .. the
last, CPU per record over the steady window (the loop thread and librdkafka's threads apart)."""

from __future__ import annotations

import argparse
import json
import resource
import sys
from dataclasses import dataclass
from typing import Any

from kbench.commands.args import (
    add_client_props,
    add_cluster_target,
    add_json,
    add_output,
    output_file,
    publish,
)
from kbench.kafka.cluster_state import ClusterError, default_dir, read_state
from kbench.kafka.drivers import KafkaError, new_consumer, redact, run_consumer
from kbench.kafka.rdstats import fetch_stats
from kbench.kafka.readwindow import read_window
from kbench.model import limits

#: The results file ``-o DIR`` holds.
RESULT_FILE = "consume.json"

#: How ``--from`` is written.
FROM_RULE = (
    "write beginning, end, an offset (e.g. 1000) or @MS, a timestamp in ms since the epoch (e.g. @1733230000000)"
)


@dataclass(frozen=True)
class Position:
    """Where the read starts: ``start`` is the C consumer's (end, beginning, offset, timestamp)."""

    start: str
    value: int = 0


def position(text: str) -> Position:
    """``--from``'s value (argparse type)."""
    t = text.strip()
    if t in ("beginning", "end"):
        return Position(t)
    kind, digits = ("timestamp", t[1:]) if t.startswith("@") else ("offset", t)
    if not digits.isdigit():
        raise argparse.ArgumentTypeError(f"--from '{text}': {FROM_RULE}")
    return Position(kind, int(digits))


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "consume", help="read a topic with kbench's consumer: records/s, MB/s, CPU per record", description=__doc__
    )
    add_cluster_target(p)
    p.add_argument("--topic", required=True, help="the topic to read")
    p.add_argument(
        "--from",
        dest="position",
        type=position,
        default=Position("beginning"),
        metavar="POSITION",
        help="where every partition starts: beginning, end, an offset N, or @MS (the first record at or after "
        "that timestamp, ms since the epoch); with --group, beginning or end: where the group has no committed "
        "offset (default beginning)",
    )
    p.add_argument(
        "--group",
        default=None,
        metavar="ID",
        help="join consumer group ID (subscribe; the join is reported as a phase) instead of assigning every "
        "partition; the group also stops once it has read every record stored when it joined (default: assign)",
    )
    p.add_argument("--count", type=int, default=None, help="stop after this many records")
    p.add_argument("--duration", type=float, default=None, help="stop after this many seconds of consuming")
    p.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="with --count alone: give up after this many seconds (exit 1 if fewer records were read; default 60)",
    )
    add_client_props(p, "librdkafka consumer property, passed verbatim (e.g. -X fetch.max.bytes=262144)")
    p.add_argument(
        "--stats-interval",
        type=int,
        default=1000,
        metavar="MS",
        help="librdkafka statistics every MS ms, for the fetch figures (0: none; default 1000)",
    )
    p.add_argument(
        "--connect-timeout", type=float, default=10.0, help="seconds to wait for the cluster to answer (default 10)"
    )
    add_output(p, f"{RESULT_FILE} (the results, the same document as --json)")
    add_json(p, "the results")
    p.set_defaults(func=run)


def _check(args: argparse.Namespace) -> tuple[int, float]:
    """The record limit and the time limit, checked before connecting."""
    if args.count is None and args.duration is None:
        raise ValueError("--count or --duration: give how many records (--count N) or for how long (--duration S)")
    if args.group is not None and args.position.start not in ("beginning", "end"):
        raise ValueError("--from: a group starts where it committed; give --from beginning or end with --group")
    if args.group is not None and not args.group.strip():
        raise ValueError("--group: give the group's id (e.g. --group kbench-read)")
    count = int(limits.check("--count", args.count, "count")) if args.count is not None else 0
    if args.duration is not None:
        limit = float(limits.check("--duration", args.duration, "duration_s"))
    else:
        limit = float(limits.check("--timeout", args.timeout, "timeout_s"))
    limits.check("--connect-timeout", args.connect_timeout, "timeout_s")
    if not 0 <= args.stats_interval <= 86_400_000:
        raise ValueError(f"--stats-interval: {args.stats_interval} is out of range; give 0 to 86400000 ms")
    args.result_file = output_file(args, RESULT_FILE)
    return count, limit


def run(args: argparse.Namespace) -> int:
    count, limit = _check(args)
    try:
        bs = args.bootstrap or read_state(args.cluster_dir or default_dir()).bootstrap_servers
    except ClusterError as e:
        print(f"kbench: error: {e}; or give --bootstrap", file=sys.stderr)
        return 2
    props = {"bootstrap.servers": bs}
    if args.stats_interval:
        props["statistics.interval.ms"] = str(args.stats_interval)
    if args.group is not None:
        props["group.id"] = args.group
    props.update(dict(args.props))
    pos: Position = args.position
    try:
        c = new_consumer(
            props,
            args.topic,
            run_id=0,  # every record counts, whoever wrote it
            expected=0,
            timeout=limit,
            max_records=count,
            connect_timeout=args.connect_timeout,
            group=args.group is not None,
            from_beginning=pos.start == "beginning",
            start=pos.start if args.group is None else "end",
            start_value=pos.value,
            cpu_window=True,
        )
        r = run_consumer(c)
    except KafkaError as e:
        print(f"kbench: error: {e}", file=sys.stderr)
        return 1
    ru = resource.getrusage(resource.RUSAGE_SELF)
    w = read_window(r)
    stats = json.loads(r.stats) if r.stats else None
    out: dict[str, Any] = {
        "topic": args.topic,
        "props": redact(props),
        "mode": "group" if args.group is not None else "assign",
        "from": pos.start if pos.start in ("beginning", "end") else f"{pos.start} {pos.value}",
        "records": r.records,
        "bytes": r.bytes,
        "partitions": r.partitions,
        **w.as_dict(),
        "process_cpu_s": ru.ru_utime + ru.ru_stime,
        "timed_out": r.timed_out,
        "stopped": r.stopped,
        "errors": r.errors,
        "rebalances": r.rebalances,
        "fetch": fetch_stats(stats, args.topic) if stats else None,
    }
    publish(out, args.result_file, args.json, _print)
    if r.stopped:
        print("kbench: interrupted: the figures above are partial", file=sys.stderr)
        return 130
    if count and r.records < count:
        print(f"kbench: read {r.records} of --count {count} records before the time limit", file=sys.stderr)
        return 1
    return 0


def _fmt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def _print(out: dict[str, Any]) -> None:
    print(f"{out['mode']} from {out['from']}: {out['records']:,} records, {out['bytes']:,} value bytes")
    print(
        f"phases: join {_fmt(out['join_s'], '.3f')} s, to the first record {_fmt(out['first_record_s'], '.3f')} s, "
        f"reading {out['read_s']:.3f} s"
    )
    print(
        f"rate: {_fmt(out['records_per_s'], ',.0f')} records/s, {_fmt(out['mb_per_s'], ',.1f')} MB/s (first .. last record)"
    )
    print(
        f"CPU per record: loop {_fmt(out['loop_us_per_record'], '.3f')} µs, librdkafka {_fmt(out['client_us_per_record'], '.3f')} µs "
        f"(steady window {out['cpu_window_s']:.3f} s); process CPU {out['process_cpu_s']:.2f} s with start-up"
    )
    f = out["fetch"]
    if f:
        print(
            f"fetch: {f['fetch_requests']:,} requests, {f['bytes_per_fetch']:,.0f} bytes and "
            f"{f['records_per_fetch']:,.0f} records per fetch, rtt p50 {_fmt(f['rtt_p50_us'], ',.0f')} µs"
        )
        if f["decompress_regrows"]:
            print(
                f"decompression: {f['decompress_regrows']:,} batches decompressed again into a larger buffer "
                "(zstd frames written without their content size)"
            )
