"""``kbench corpus sample``: a bounded sample of a topic's real records as a corpus file.

The file is 4-byte big-endian length-prefixed records (``format = "lenprefixed"``), so binary
values survive byte for byte; its sha256 is the corpus fingerprint kbench records.  It works as
a plan corpus (``[corpora.mine] source = "file", path = ..., format = "lenprefixed"``), with
``kbench codecs bench --corpus FILE --corpus-format lenprefixed`` and
``kbench sim --corpus FILE --corpus-format lenprefixed``.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from kbench import KafkaError
from kbench.commands.args import SIZE_HELP, add_client_props, add_json, add_output, emit_json, output_file, ready, size
from kbench.engine.redact import Scrubber
from kbench.kafka import clients
from kbench.kafka import sample as sample_mod
from kbench.model import corpus as corpus_mod
from kbench.model.paths import check_output_file

#: The corpus file ``-o DIR`` holds (its keys, with --keys: ``corpus.bin.keys``).
CORPUS_FILE = "corpus.bin"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("corpus", help="corpora: sample a topic's records into a corpus file", description=__doc__)
    csub = p.add_subparsers(dest="corpus_cmd", metavar="{sample}")
    csub.required = True
    s = csub.add_parser("sample", help="read up to N records of a topic into a length-prefixed corpus file")
    s.add_argument("--bootstrap", required=True, help="host:port[,...] of the cluster")
    s.add_argument("--topic", required=True, help="the topic to sample (read from the beginning of each partition)")
    s.add_argument("--count", type=int, required=True, help="records to read at most")
    add_output(s, f"{CORPUS_FILE} (length-prefixed records)", required=True)
    s.add_argument(
        "--keys", action="store_true", help=f"also write the keys, to DIR/{CORPUS_FILE}.keys (length-prefixed)"
    )
    add_json(s, "the sample's figures and files")
    s.add_argument(
        "--max-bytes",
        default=str(sample_mod.DEFAULT_MAX_BYTES),
        help=f"keys + values kept at most (default {sample_mod.DEFAULT_MAX_BYTES}; {SIZE_HELP})",
    )
    s.add_argument("--timeout", type=float, default=60.0, help="seconds before giving up on reaching --count")
    add_client_props(s, "librdkafka client property, e.g. security settings")
    s.set_defaults(func=run_sample)


def _pct(sorted_vals: list[int], q: float) -> int:
    return sorted_vals[min(len(sorted_vals) - 1, int(q / 100 * len(sorted_vals)))]


def run_sample(args: argparse.Namespace) -> int:
    args.max_bytes = size("--max-bytes", args.max_bytes)
    if args.max_bytes < 1:
        raise ValueError(f"--max-bytes: {args.max_bytes} is out of range; give at least 1 byte")
    props = dict(args.props)
    clients.check_properties("-X", props, {"librdkafka"})  # before connecting or writing
    props["bootstrap.servers"] = args.bootstrap
    scrub = Scrubber.of(props)
    target = output_file(args, CORPUS_FILE)
    assert target is not None  # -o is required
    out = target[1]
    if args.keys and out.parent.is_dir():  # a new -o DIR is made by ready(): nothing there to check yet
        check_output_file("-o", out.with_name(out.name + ".keys"))
    try:
        s = sample_mod.sample(props, args.topic, args.count, max_bytes=args.max_bytes, timeout=args.timeout)
    except KafkaError as e:
        print(f"kbench: error: {scrub(str(e))}", file=sys.stderr)
        return 1
    if not s.records:
        print(f"kbench: error: topic {args.topic} holds no records to sample; nothing written", file=sys.stderr)
        return 1
    values = s.values
    corpus_mod.write_lenprefixed(values, ready(out))
    c = corpus_mod.Corpus(name=out.name, records=tuple(values), source=f"topic:{args.topic}")
    sizes = sorted(len(v) for v in values)
    keys_path = out.with_name(out.name + ".keys") if args.keys else None
    if keys_path is not None:
        corpus_mod.write_lenprefixed(s.keys, keys_path)
    nulls = sum(1 for r in s.records if r.key is None)
    if args.json:
        emit_json(
            {
                "corpus": str(out),
                "keys": None if keys_path is None else str(keys_path),
                "records": len(values),
                "available": s.available,
                "partitions": s.partitions,
                "truncated": s.truncated,
                "timed_out": s.timed_out,
                "null_values": s.null_values,
                "null_keys": nulls,
                "value_bytes": {
                    "total": sum(sizes),
                    "min": sizes[0],
                    "p50": _pct(sizes, 50),
                    "p90": _pct(sizes, 90),
                    "p99": _pct(sizes, 99),
                    "max": sizes[-1],
                    "mean": statistics.fmean(sizes),
                },
                "entropy": c.entropy,
                "sha256": c.sha256,
            }
        )
        return 0
    print(f"sampled {len(values)} of {s.available} records from {args.topic} ({s.partitions} partitions) into {out}")
    if s.truncated:
        print(f"  stopped at --max-bytes {args.max_bytes}")
    if s.timed_out:
        print(f"  stopped at --timeout {args.timeout:g} s before reaching --count or the end of every partition")
    if s.null_values:
        print(f"  {s.null_values} null values (tombstones) written as empty records")
    print(
        f"  value bytes: total {sum(sizes)}, min {sizes[0]}, p50 {_pct(sizes, 50)}, p90 {_pct(sizes, 90)}, "
        f"p99 {_pct(sizes, 99)}, max {sizes[-1]}, mean {statistics.fmean(sizes):.1f}"
    )
    near = " (near random: compression will gain little)" if c.near_random else ""
    print(f"  entropy {c.entropy:.3f} bits/byte{near}")
    print(f"  sha256 {c.sha256} (of the file: the corpus fingerprint)")
    if keys_path is not None:
        print(f"  keys in {keys_path}{f' ({nulls} null keys written as empty)' if nulls else ''}")
    print(
        f'  use it: [corpora.mine] source = "file", path = "{out}", format = "lenprefixed"; '
        f"or --corpus {out} --corpus-format lenprefixed"
    )
    return 0
