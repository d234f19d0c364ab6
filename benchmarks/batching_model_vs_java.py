#!/usr/bin/env python3
"""Batch boundaries: kbench's Java batching model against Kafka's own Java producer.

Starts a 1-node local cluster, sends the same JSON records with ``ProducerPerformance``
(saturated, one partition, linger.ms=1000 so only batch.size closes batches) for each codec and
batch.size, reads the broker's segment, then runs ``kbench.sim`` (client java, same record
values in the stored order, saturated rate) and prints records per batch of both and the stored
bytes.  Usage: python benchmarks/batching_model_vs_java.py
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from kbench import admin, batch, corpus, kafka_dist, segment, sim
from kbench.cluster import LocalCluster

N = 3000


def main() -> int:
    recs = corpus.generate("json", 256 * 1024, seed=7).records
    with LocalCluster(brokers=1) as c, tempfile.TemporaryDirectory() as tmp:
        payload = Path(tmp) / "records.txt"
        payload.write_bytes(b"\n".join(recs) + b"\n")
        for codec in ("none", "lz4", "zstd", "gzip"):
            for bs in (16384, 65536):
                topic = f"model-{codec}-{bs}"
                admin.create_topic(c.client_props(), topic, partitions=1, replication_factor=1)
                subprocess.run(kafka_dist.java_command("org.apache.kafka.tools.ProducerPerformance", [
                    "--topic", topic, "--num-records", str(N), "--payload-file", str(payload), "--throughput", "-1",
                    "--producer-props", f"bootstrap.servers={c.bootstrap_servers}", f"compression.type={codec}",
                    "linger.ms=1000", f"batch.size={bs}", "acks=1"]), check=True, capture_output=True)
                f = Path(c.log_dirs[0]) / f"{topic}-0" / "00000000000000000000.log"
                data = f.read_bytes()
                groups = [batch.decode(data[r.position:r.position + r.stored_bytes]).records for r in segment.scan_file(f)]
                values = tuple(r.value for g in groups for r in g)
                res = sim.run(corpus.Corpus("stored", values),
                              sim.SimConfig(codec=codec, batch_size=bs, linger_ms=1000, rate=1e9, start_ts_ms=0),
                              Path(tmp) / topic)
                real = [len(g) for g in groups]
                model = [b.records for b in res.batches]
                print(f"{codec:<5} batch.size {bs:>6}: java {len(real):>3} batches, first {real[:8]}, last {real[-3:]}; "
                      f"model {len(model):>3}, first {model[:8]}, last {model[-3:]}; stored java {len(data)} "
                      f"model {res.stored_bytes} ({100 * (res.stored_bytes - len(data)) / len(data):+.2f} %)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
