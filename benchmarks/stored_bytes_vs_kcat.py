"""Stored bytes per record: kbench's producer against kcat (the same librdkafka, no header).

The same records (a built-in corpus, one record per line), the same settings (batch.size,
linger.ms, acks=1, codec) and one-partition topics on one local 1-node cluster (started here);
each tool produces every record once, as fast as it can, and the stored bytes are read from the
partition's segment files (kbench.model.segment).  kbench runs twice: with its default header
sampling (one record in ``DEFAULT_HEADER_SAMPLE`` carries the 24-byte ``kb`` header) and with
the header on every record (what kbench did before sampling).  Repetitions alternate the
tools; the figure is the median stored bytes per record.

    flock /tmp/kbench-kafka.lock python benchmarks/stored_bytes_vs_kcat.py --reps 3 --out runs/stored.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kbench import _native  # noqa: E402
from kbench.kafka import admin  # noqa: E402
from kbench.kafka.cluster import LocalCluster  # noqa: E402
from kbench.kafka.drivers import DEFAULT_HEADER_SAMPLE, ProducerSpec, produce  # noqa: E402
from kbench.model import corpus, segment  # noqa: E402

CODECS = ("none", "lz4", "zstd")
CORPORA = ("json", "logs")


def settings(codec: str, batch_size: int, linger_ms: int) -> dict[str, str]:
    return {
        "compression.codec": codec,
        "batch.size": str(batch_size),
        "linger.ms": str(linger_ms),
        "acks": "1",
        "enable.idempotence": "false",
    }


def stored(log_dir: Path, topic: str) -> tuple[int, int]:
    """(stored bytes, records) of partition 0 of topic, from its segment files."""
    s = segment.summarize(segment.scan_paths([log_dir / f"{topic}-0"], decompress=False, verify_crc=True))
    return s.stored_bytes, s.records


def run_kbench(bs: str, topic: str, records: list[bytes], props: dict[str, str], sample: int) -> None:
    spec = ProducerSpec(
        topic=topic,
        props={"bootstrap.servers": bs, **props},
        mode="saturated",
        count=len(records),
        header_sample=sample,
        flush_timeout=120,
    )
    r = produce(spec, records)
    if r.delivered != len(records):
        raise RuntimeError(f"kbench delivered {r.delivered}/{len(records)}: {r.delivery_errors}")


def run_kcat(bs: str, topic: str, payload: Path, props: dict[str, str]) -> None:
    args = [
        "kcat",
        "-P",
        "-l",
        "-b",
        bs,
        "-t",
        topic,
        "-p",
        "0",
        *sum((["-X", f"{k}={v}"] for k, v in props.items()), []),
    ]
    subprocess.run([*args, str(payload)], check=True, timeout=600)


def markdown(result: dict) -> str:
    """The README table from a results JSON (no figure typed by hand)."""
    table = result["table"]
    cols = [k for k in table[0] if k not in ("corpus", "codec") and not k.endswith(" vs kcat %")]
    avg = result["avg_record_bytes"]
    lines = [
        f"librdkafka {result['librdkafka']}, batch.size={result['batch.size']}, linger.ms={result['linger.ms']}, "
        f"acks=1, one partition; median of {result['reps']} alternating repetitions.",
        "",
        "| corpus | codec | "
        + " | ".join(f"{t} B/record" for t in cols)
        + " | "
        + " | ".join(f"{t} vs kcat" for t in cols[1:])
        + " |",
        "|---" * (2 + 2 * len(cols) - 1) + "|",
    ]
    for r in table:
        lines.append(
            f"| {r['corpus']} ({avg[r['corpus']]:.0f} B/record) | {r['codec']} | "
            + " | ".join(f"{float(r[t]):.2f}" for t in cols)
            + " | "
            + " | ".join(f"{float(r[t + ' vs kcat %']):+.2f} %" for t in cols[1:])
            + " |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus-bytes", type=int, default=4 << 20)
    ap.add_argument("--batch-size", type=int, default=16384)
    ap.add_argument("--linger-ms", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--render", type=Path, help="print the README table of a results JSON and exit")
    args = ap.parse_args()
    if args.render:
        print(markdown(json.loads(args.render.read_text())))
        return 0
    if not shutil.which("kcat"):
        print("kcat not found; install it (scripts/setup.sh)", file=sys.stderr)
        return 2
    tools = {
        "kcat": None,
        f"kbench (1 in {DEFAULT_HEADER_SAMPLE})": DEFAULT_HEADER_SAMPLE,
        "kbench (every record)": 1,
    }
    tmp = Path(tempfile.mkdtemp(prefix="kbench-stored-"))
    runs: list[dict[str, object]] = []
    with LocalCluster(brokers=1, directory=tmp / "cluster") as c:
        bs = c.client_props()["bootstrap.servers"]
        log_dir = Path(c.log_dirs[0])
        n = 0
        for name in CORPORA:
            recs = list(corpus.generate(name, args.corpus_bytes, seed=1).records)
            assert not any(b"\n" in r for r in recs), "records must be single lines for kcat"
            payload = tmp / f"{name}.txt"
            payload.write_bytes(b"".join(r + b"\n" for r in recs))
            for codec in CODECS:
                props = settings(codec, args.batch_size, args.linger_ms)
                for rep in range(args.reps):
                    order = list(tools.items())
                    if rep % 2:
                        order.reverse()
                    for tool, sample in order:
                        n += 1
                        topic = f"stored-{int(time.time())}-{n}"
                        admin.create_topic({"bootstrap.servers": bs}, topic, partitions=1)
                        if sample is None:
                            run_kcat(bs, topic, payload, props)
                        else:
                            run_kbench(bs, topic, recs, props, sample)
                        sb, nrec = stored(log_dir, topic)
                        if nrec != len(recs):
                            raise RuntimeError(f"{tool}: {nrec} records stored, {len(recs)} produced")
                        runs.append(
                            {"corpus": name, "codec": codec, "rep": rep, "tool": tool, "stored": sb, "records": nrec}
                        )
                        admin.delete_topic({"bootstrap.servers": bs}, topic)
    table = []
    for name in CORPORA:
        for codec in CODECS:
            mine = [r for r in runs if r["corpus"] == name and r["codec"] == codec]
            per = {
                t: statistics.median(float(r["stored"]) / float(r["records"]) for r in mine if r["tool"] == t)
                for t in tools
            }
            row = {"corpus": name, "codec": codec, **{t: per[t] for t in tools}}
            for t in tools:
                if t != "kcat":
                    row[f"{t} vs kcat %"] = 100.0 * (per[t] / per["kcat"] - 1.0)
            table.append(row)
    avg = {
        n_: statistics.mean(len(r) for r in corpus.generate(n_, args.corpus_bytes, seed=1).records) for n_ in CORPORA
    }
    result = {
        "librdkafka": _native.rdkafka_version,
        "batch.size": args.batch_size,
        "linger.ms": args.linger_ms,
        "reps": args.reps,
        "avg_record_bytes": avg,
        "table": table,
        "runs": runs,
    }
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
