"""``kbench sim``: the simulated transport (producer, broker, consumer threads) over a corpus.

Every combination of the list options (--codec, --batch-size, --linger-ms) is one run; one line
per run is printed (--json: one JSON document) and, with -o DIR (DIR/sim.csv) or --csv FILE, one
CSV row per run is written atomically.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from pathlib import Path

from kbench.commands.args import (
    SIZE_HELP,
    add_corpus,
    add_csv,
    add_json,
    add_list,
    add_output,
    corpus_size,
    emit_json,
    output_file,
    ready,
    sizes,
)
from kbench.model import corpus as corpus_mod
from kbench.model import limits
from kbench.model import simulator as sim
from kbench.model.codecs import CodecSpec, batch_codec, parse_spec
from kbench.model.paths import run_directory_of

NAME = "sim"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        NAME,
        help="simulate producer batching, broker validation/recompression and consumption",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_corpus(p)
    add_list(p, "--codec", help="producer codec[:level] (default none)")
    add_list(p, "--batch-size", help=f"batch.size (default 16KiB; {SIZE_HELP})")
    add_list(p, "--linger-ms", help="linger.ms (default 5)")
    p.add_argument("--partitions", type=int, default=1, help="partitions of the topic (default 1)")
    p.add_argument(
        "--rate", type=float, default=10_000.0, help="records per second on the simulated clock (default 10000)"
    )
    p.add_argument("--arrival", choices=("fixed", "poisson"), default="fixed", help="arrival process (default fixed)")
    p.add_argument("--client", choices=("java", "librdkafka"), default="java", help="batching rules (default java)")
    p.add_argument(
        "--partitioner",
        choices=("default", "round-robin"),
        default="default",
        help="default: murmur2 for keys, sticky for null keys; or round-robin",
    )
    p.add_argument("--keys", type=int, default=0, help="0: null keys (default); N: keys drawn from N distinct values")
    p.add_argument(
        "--topic-compression",
        default=None,
        help="topic compression.type: producer (default), uncompressed, or a codec[:level]; "
        "another codec than the producer's makes the broker recompress",
    )
    p.add_argument("--seed", type=int, default=1, help="seed of the corpus, arrivals, keys and sticky choices")
    p.add_argument(
        "--segments",
        type=Path,
        default=None,
        help="keep the segment files under this directory (default: a temporary one, removed)",
    )
    p.add_argument("--out", dest="segments", type=Path, help=argparse.SUPPRESS)  # older spelling of --segments
    add_output(p, "sim.csv (one row per run)")
    add_csv(p, "one row per run")
    add_json(p, "one object per run (its CSV row) and the corpus")
    p.set_defaults(func=main)


def _check_bounds(args: argparse.Namespace) -> None:
    """Every count, size, rate and duration flag within kbench.model.limits, before any work."""
    limits.check("--partitions", args.partitions, "partitions")
    limits.check("--rate", args.rate, "rate")
    limits.check("--keys", args.keys, "keys")
    limits.check("--seed", args.seed, "seed")
    corpus_size(args)
    if args.segments is not None and args.segments.exists() and not args.segments.is_dir():
        raise ValueError(f"--segments {args.segments}: exists and is not a directory; give a directory")
    if args.segments is not None and args.segments.is_dir():
        run = run_directory_of(args.segments / "x")
        old = next(iter(args.segments.glob("kbench-sim-*")), None) or next(
            iter(args.segments.glob("run*/kbench-sim-*")), None
        )
        if run is not None and old is not None:  # the paths.py rule: a run directory's files are never replaced
            raise ValueError(
                f"--segments {args.segments}: inside the run directory {run}, and {old.name} there would be "
                "replaced; give a new directory"
            )


def _ms(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"--linger-ms: '{text}' is not a number of milliseconds; give e.g. --linger-ms 5,20") from None


def _configs(args: argparse.Namespace) -> list[sim.SimConfig]:
    _check_bounds(args)
    codecs = [parse_spec(c) for c in (args.codec or ["none"])]
    lingers = [float(limits.check("--linger-ms", _ms(t), "linger_ms")) for t in (args.linger_ms or ["5"])]
    batch_sizes = [
        int(limits.check("--batch-size", b, "batch_size")) for b in sizes("--batch-size", args.batch_size, [16384])
    ]
    topic, tlevel = None, None
    if args.topic_compression and args.topic_compression != "producer":
        name, sep, level = args.topic_compression.partition(":")
        ts = parse_spec(batch_codec(name) + sep + level)
        topic, tlevel = ts.codec, ts.level
    out = []
    for spec, bs, linger in itertools.product(codecs, batch_sizes, lingers):
        cfg = sim.SimConfig(
            codec=spec.codec,
            level=spec.level,
            topic_compression=topic,
            topic_level=tlevel,
            client=args.client,
            batch_size=bs,
            linger_ms=linger,
            partitions=args.partitions,
            rate=args.rate,
            arrival=args.arrival,
            partitioner=args.partitioner,
            keys=args.keys,
            seed=args.seed,
        )
        cfg.validate()
        out.append(cfg)
    return out


def _line(r: sim.SimResult) -> str:
    c = r.config
    codec = str(CodecSpec(c.codec, c.level))
    stored = ",".join(f"{k}" for k in sorted(r.stored_codecs))
    row = r.row()
    return (
        f"{codec:<8} {c.topic_compression or 'producer':<9} {c.batch_size:>8} {c.linger_ms:>6g} {stored:<6} {len(r.batches):>6} "
        f"{row['records_per_batch_p50']:>7.0f} {row['stored_batch_bytes_p50']:>9.0f} {r.stored_ratio:>6.2f} "
        f"{r.cpu_s_per_gb('producer'):>8.2f} {r.cpu_s_per_gb('broker'):>8.2f} {r.cpu_s_per_gb('consumer'):>8.2f} "
        f"{r.close_reasons.get('full', 0):>5}/{r.close_reasons.get('linger', 0)}/{r.close_reasons.get('flush', 0)} "
        f"{'OK' if r.mismatches == 0 else f'MISMATCH {r.mismatches}'}"
    )


def main(args: argparse.Namespace) -> int:
    configs = _configs(args)
    out = output_file(args, "sim.csv", "--csv")
    corp = corpus_mod.load(args.corpus, size=corpus_size(args), seed=args.seed, fmt=args.corpus_format)
    say = print if not args.json else (lambda *a, **k: None)
    near = " (near random: a control, not real-shaped data)" if corp.near_random else ""
    say(
        f"corpus {corp.name}: {len(corp.records)} records, {corp.size} bytes, entropy {corp.entropy:.3f} bits/byte{near}, "
        f"sha256 {corp.sha256[:16]}"
    )
    lingers = sorted({c.linger_ms for c in configs})
    say(
        f"client {args.client}, linger.ms {','.join(f'{x:g}' for x in lingers)}, partitions {args.partitions}, "
        f"rate {args.rate:g}/s ({args.arrival}), keys {args.keys or 'null'}; ratio = uncompressed batch bytes / "
        f"stored bytes; CPU in CPU-s per GB of payload"
    )
    say(
        f"{'codec':<8} {'topic':<9} {'batch.sz':>8} {'linger':>6} {'stored':<6} {'batches':>6} {'rec/b50':>7} "
        f"{'bytes/b50':>9} {'ratio':>6} {'prod':>8} {'broker':>8} {'cons':>8} full/linger/flush"
    )
    results = []
    failed = False
    for i, cfg in enumerate(configs):
        if args.segments is not None:
            d = args.segments / f"run{i:03d}" if len(configs) > 1 else args.segments
            r = sim.run(corp, cfg, d)
        else:
            with tempfile.TemporaryDirectory(prefix="kbench-sim-") as tmp:
                r = sim.run(corp, cfg, tmp)
        results.append(r)
        failed |= r.mismatches > 0
        say(_line(r), flush=True)
    status = sys.stderr if args.json else sys.stdout
    if out is not None:
        sim.write_csv(results, ready(out[1]))
        print(f"wrote {out[1]}", file=status)
    if args.segments is not None:
        print(f"segments under {args.segments}", file=status)
    if args.json:
        emit_json(
            {
                "corpus": {
                    "name": corp.name,
                    "records": len(corp.records),
                    "bytes": corp.size,
                    "entropy": corp.entropy,
                    "sha256": corp.sha256,
                },
                "runs": [{**r.row(), "ok": r.mismatches == 0} for r in results],
                "csv": None if out is None else str(out[1]),
            }
        )
    return 1 if failed else 0
