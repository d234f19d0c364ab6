"""The fixed-rate producer paces by sleeping between ticks (never spinning) and keeps the rate.

Against a local 1-node cluster: at 10,000 msg/s with codec none the producer process (the
runner's driver process, librdkafka's threads included) and, in-process, the producer's own loop
thread each use at most 10 % of one CPU (read from /proc by the loop itself, over a steady
window), its CPU splits into the load generator's threads and librdkafka's ``rdk:*`` threads
that sum to the process total; at 150,000 msg/s of log lines (this 2-vCPU machine held 250,000
with the loop thread at 18 % of a CPU, benchmarks/README.md) the achieved rate is within 0.02 %
of the target.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kbench.engine.transports.local_pool import spawn
from kbench.kafka import admin
from kbench.kafka.cluster import LocalCluster
from kbench.kafka.drivers import ProducerSpec, produce
from kbench.model import corpus

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def log_records() -> tuple[bytes, ...]:
    return corpus.generate("logs", 1 << 20, seed=3).records


def _fixed(cluster: LocalCluster, topic: str, rate: float, seconds: float, records: tuple[bytes, ...]):
    admin.create_topic(cluster.client_props(), topic, partitions=1)
    spec = ProducerSpec(
        topic=topic,
        props=cluster.client_props(**{"compression.type": "none", "linger.ms": "5", "acks": "1"}),
        mode="fixed-rate",
        rate=rate,
        duration=seconds,
        cpu_skip=1.0,
    )
    r = produce(spec, records)
    assert r.failed == 0 and r.undelivered == 0 and r.delivered == r.sent, r.delivery_errors
    assert r.cpu is not None, "the CPU window was taken"
    return r


def test_10k_msgs_loop_thread_uses_at_most_10pct_of_a_cpu(kafka1: LocalCluster, log_records) -> None:
    r = _fixed(kafka1, "pace-10k", 10_000, 6.0, log_records)
    c = r.cpu
    assert c is not None
    wall = c["wall_s"]
    assert 4.0 < wall < 7.0, c
    # it slept between ticks: the scheduled wakes are at least one tick apart from t0 and each
    # sends the message due then, so wakes <= ceil(span / tick) + 1 over t0 -> last send (here
    # ~12k for 60k messages; a loop that woke once per message would count ~60k)
    assert r.tick_ns > 0 and r.last_send_ns > r.t0_ns, r
    bound = math.ceil((r.last_send_ns - r.t0_ns) / r.tick_ns) + 1
    assert 0 < r.wakes <= bound < r.sent / 2, (r.wakes, bound, r.sent)
    loop = c["loop_usr_s"] + c["loop_sys_s"]
    assert loop / wall <= 0.10, f"loop thread used {100 * loop / wall:.1f} % of one CPU at 10k msg/s"
    # the split: the load generator's threads and librdkafka's, both busy, summing to the total
    gen = c["loadgen_usr_s"] + c["loadgen_sys_s"]
    lib = c["client_usr_s"] + c["client_sys_s"]
    total = c["usr_s"] + c["sys_s"]
    assert gen > 0 and lib > 0 and c["client_threads"] >= 2, c
    # /proc counts 10 ms ticks per thread: 3 ticks, compared in whole ticks (0.17 + 0.12 - 0.32 is
    # 0.030000000000000360 in floating point, one CI run's failure)
    assert round(abs(gen + lib - total) * 100) <= 3, c
    assert loop <= gen + 0.01


def test_10k_msgs_producer_process_uses_at_most_10pct_of_a_cpu(
    kafka1: LocalCluster, log_records, tmp_path: Path
) -> None:
    """The whole driver process the runner starts (``python -m kbench.kafka.worker``): its CPU over
    the steady window, from /proc/self/stat, every thread included."""
    admin.create_topic(kafka1.client_props(), "pace-10k-proc", partitions=1)
    corpus_file = corpus.write_lenprefixed(log_records, tmp_path / "records.bin")
    rate, count = 10_000.0, 70_000
    job = {
        "props": kafka1.client_props(**{"compression.type": "none", "linger.ms": "5", "acks": "1"}),
        "topic": "pace-10k-proc",
        "run_id": 7,
        "corpus_file": str(corpus_file),
        "mode": "fixed-rate",
        "rate": rate,
        "count": count,
        "skip_s": 2.0,
    }
    proc = spawn("producer", job, tmp_path / "producer.err")
    proc.expect("STARTED", 60)
    res = proc.result(120)
    assert res["delivered"] == count and res["failed"] == 0
    cpu = res["cpu"]
    assert 4.0 < cpu["wall_s"] < 6.5, cpu
    used = (cpu["usr_s"] + cpu["sys_s"]) / cpu["wall_s"]
    assert used <= 0.10, f"the producer process used {100 * used:.1f} % of one CPU at 10k msg/s"
    assert cpu["loadgen_s"] > 0 and cpu["client_s"] > 0, cpu


def test_highest_held_rate_is_kept_within_0_02_pct(kafka1: LocalCluster, log_records) -> None:
    rate, seconds = 150_000.0, 15.0
    try:
        r = _fixed(kafka1, "pace-150k", rate, seconds, log_records)
    finally:
        admin.delete_topic(kafka1.client_props(), "pace-150k")  # 300 MB of segments
    dev = r.rate_deviation
    assert dev is not None and abs(dev) <= 0.0002, f"achieved {r.achieved_rate:.2f} msg/s vs {rate:.0f}"
    assert r.sent == int(rate * seconds)  # every message of the schedule, none dropped
    assert r.queue_full == 0
    # a wake sends the burst due by then: at 150k msg/s and 2 ms ticks, ~300 messages per wake
    assert r.wakes < r.sent / 10
