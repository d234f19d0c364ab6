#!/usr/bin/env python3
"""Batch boundaries: kbench's Java batching model against Kafka's own Java producer.

Starts a 1-node local cluster, sends the same JSON records with ``ProducerPerformance``
(saturated, one partition, linger.ms=1000 so only batch.size closes batches) for each codec and
batch.size, reads the broker's segment, then runs ``kbench.model.simulator`` (client java, same record
values in the stored order, saturated rate) and prints records per batch of both and the stored
bytes.  ``--out R.json`` keeps the results, ``--render R.json`` prints the Markdown table.
Usage: python benchmarks/batching_model_vs_java.py [--out R.json] | --render R.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from kbench.kafka import admin, kafka_dist
from kbench.kafka.cluster import LocalCluster
from kbench.model import batch, corpus, segment
from kbench.model import simulator as sim

N = 3000


def render(r: dict) -> str:
    out = [
        f"Run {r['date']}, {r['records']} records per run, Kafka {r['kafka']}. Command: `python {r['command']}`",
        "",
        "| codec | batch.size | Java batches (records: first 3 … last 3) | model batches | stored bytes Java | model | diff |",
        "|---|---:|---|---|---:|---:|---:|",
    ]
    for x in r["runs"]:
        j, m = x["java"], x["model"]
        out.append(
            f"| {x['codec']} | {x['batch_size']} | {len(j)} ({', '.join(map(str, j[:3]))} … "
            f"{', '.join(map(str, j[-3:]))}) | {len(m)} ({', '.join(map(str, m[:3]))} … {', '.join(map(str, m[-3:]))}) "
            f"| {x['java_bytes']} | {x['model_bytes']} | {100 * (x['model_bytes'] - x['java_bytes']) / x['java_bytes']:+.2f} % |"
        )
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--render", type=Path, default=None)
    args = ap.parse_args()
    if args.render:
        print(render(json.loads(args.render.read_text())))
        return 0
    result: dict = {
        "date": datetime.date.today().isoformat(),
        "records": N,
        "kafka": kafka_dist.KAFKA_VERSION,
        "command": " ".join(sys.argv),
        "runs": [],
    }
    recs = corpus.generate("json", 256 * 1024, seed=7).records
    with LocalCluster(brokers=1) as c, tempfile.TemporaryDirectory() as tmp:
        payload = Path(tmp) / "records.txt"
        payload.write_bytes(b"\n".join(recs) + b"\n")
        for codec in ("none", "lz4", "zstd", "gzip"):
            for bs in (16384, 65536):
                topic = f"model-{codec}-{bs}"
                admin.create_topic(c.client_props(), topic, partitions=1, replication_factor=1)
                subprocess.run(
                    kafka_dist.java_command(
                        "org.apache.kafka.tools.ProducerPerformance",
                        [
                            "--topic",
                            topic,
                            "--num-records",
                            str(N),
                            "--payload-file",
                            str(payload),
                            "--throughput",
                            "-1",
                            "--producer-props",
                            f"bootstrap.servers={c.bootstrap_servers}",
                            f"compression.type={codec}",
                            "linger.ms=1000",
                            f"batch.size={bs}",
                            "acks=1",
                        ],
                    ),
                    check=True,
                    capture_output=True,
                )
                f = Path(c.log_dirs[0]) / f"{topic}-0" / "00000000000000000000.log"
                data = f.read_bytes()
                groups = [
                    batch.decode(data[r.position : r.position + r.stored_bytes]).records for r in segment.scan_file(f)
                ]
                values = tuple(r.value for g in groups for r in g)
                res = sim.run(
                    corpus.Corpus("stored", values),
                    sim.SimConfig(codec=codec, batch_size=bs, linger_ms=1000, rate=1e9, start_ts_ms=0),
                    Path(tmp) / topic,
                )
                real = [len(g) for g in groups]
                model = [b.records for b in res.batches]
                print(
                    f"{codec:<5} batch.size {bs:>6}: java {len(real):>3} batches, first {real[:8]}, last {real[-3:]}; "
                    f"model {len(model):>3}, first {model[:8]}, last {model[-3:]}; stored java {len(data)} "
                    f"model {res.stored_bytes} ({100 * (res.stored_bytes - len(data)) / len(data):+.2f} %)",
                    flush=True,
                )
                result["runs"].append(
                    {
                        "codec": codec,
                        "batch_size": bs,
                        "java": real,
                        "model": model,
                        "java_bytes": len(data),
                        "model_bytes": res.stored_bytes,
                    }
                )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
