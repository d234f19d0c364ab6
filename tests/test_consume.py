"""``kbench consume``: its arguments (refused before connecting, one line each), and against a
one-broker cluster that it reads exactly what was produced, from every kind of position, assigned
or in a group, with the join as a phase and the rates over the reading window."""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import json
import os
import subprocess
import sys
import time
from typing import Any

import pytest
from kbenv import KBENCH_PATH

from kbench._native import Histogram
from kbench.cli import main
from kbench.commands.consume import Position, position
from kbench.kafka import admin
from kbench.kafka.cluster import LocalCluster
from kbench.kafka.drivers import ConsumerResult, ProducerSpec, produce
from kbench.kafka.readwindow import read_window

N = 3000


def test_positions_parse() -> None:
    assert position("beginning") == Position("beginning")
    assert position("end") == Position("end")
    assert position("1000") == Position("offset", 1000)
    assert position("@1733230000000") == Position("timestamp", 1733230000000)
    for bad in ("", "-1", "@", "@-5", "1e3", "start", "12abc"):
        with pytest.raises(argparse.ArgumentTypeError, match="write beginning, end, an offset"):
            position(bad)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        ([], "--count or --duration: give how many records"),
        (["--count", "0"], "--count: 0 is out of range"),
        (["--duration", "-1"], "--duration: -1 is out of range"),
        (["--count", "5", "--group", "g", "--from", "10"], "--from: a group starts where it committed"),
        (["--count", "5", "--group", " "], "--group: give the group's id"),
        (["--count", "5", "--stats-interval", "-1"], "--stats-interval: -1 is out of range"),
        (["--count", "5", "--from", "x"], "--from 'x': write beginning, end"),
    ],
)
def test_bad_arguments_are_refused_before_connecting(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # an unreachable bootstrap: a refusal must come before any connection attempt
    try:
        rc = main(["consume", "--bootstrap", "127.0.0.1:1", "--topic", "t", *argv])
    except SystemExit as e:  # argparse's own refusals
        rc = e.code
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("kbench: error: ") and says in err and "\n" not in err, err


def _result(**kw: Any) -> ConsumerResult:
    base: dict[str, Any] = dict(
        records=0, bytes=0, unique=0, duplicates=0, out_of_range=0, foreign=0, no_header=0, start_ns=0,
        first_ns=0, last_ns=0, end_ns=0, partitions=1, timed_out=False, stopped=False, errors={}, e2e=Histogram(),
    )  # fmt: skip
    base.update(kw)
    return ConsumerResult(**base)


def test_read_window_leaves_the_join_and_the_first_fetch_out_of_the_rates() -> None:
    # subscribe at 1 s, assigned at 2.6 s (the join), first record at 3 s, last at 5 s: 2 s of reading
    r = _result(
        records=1001, bytes=1001 * 500, start_ns=10**9, assigned_ns=26 * 10**8, first_ns=3 * 10**9, last_ns=5 * 10**9,
        win_records=800, win_ns=16 * 10**8, win_proc_cpu_ns=800_000, win_loop_cpu_ns=200_000,
    )  # fmt: skip
    w = read_window(r)
    assert w.join_s == pytest.approx(1.6) and w.first_record_s == pytest.approx(2.0)
    assert w.read_s == pytest.approx(2.0)
    assert w.records_per_s == pytest.approx(500.0)  # 1000 records after the first over 2 s
    assert w.mb_per_s == pytest.approx(1000 * 500 / 2 / 1e6)
    assert w.loop_us_per_record == pytest.approx(0.25) and w.client_us_per_record == pytest.approx(0.75)
    one = read_window(_result(records=1, bytes=10, first_ns=5, last_ns=5))
    assert one.records_per_s is None and one.mb_per_s is None and one.loop_us_per_record is None
    assert read_window(_result()).join_s is None  # never assigned


class MockCluster:
    """librdkafka's in-process mock cluster (test.mock.num.brokers: no Kafka, no JVM; loopback only),
    through ctypes on the library the extension links; alive while this object is."""

    def __init__(self, topics: dict[str, int]) -> None:
        lib = ctypes.CDLL(ctypes.util.find_library("rdkafka") or "librdkafka.so.1")
        lib.rd_kafka_conf_new.restype = ctypes.c_void_p
        lib.rd_kafka_conf_set.argtypes = [
            ctypes.c_void_p,
            ctypes.c_char_p,
            ctypes.c_char_p,
            ctypes.c_char_p,
            ctypes.c_size_t,
        ]
        lib.rd_kafka_new.restype = ctypes.c_void_p
        lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
        lib.rd_kafka_handle_mock_cluster.restype = ctypes.c_void_p
        lib.rd_kafka_handle_mock_cluster.argtypes = [ctypes.c_void_p]
        lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
        lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
        lib.rd_kafka_mock_topic_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
        lib.rd_kafka_destroy.argtypes = [ctypes.c_void_p]
        err = ctypes.create_string_buffer(512)
        conf = lib.rd_kafka_conf_new()
        for k, v in ((b"test.mock.num.brokers", b"1"), (b"log_level", b"0")):
            assert lib.rd_kafka_conf_set(conf, k, v, err, len(err)) == 0, err.value
        self._lib = lib
        self._rk = lib.rd_kafka_new(1, conf, err, len(err))  # a consumer handle: it serves the mock
        assert self._rk, err.value
        mc = lib.rd_kafka_handle_mock_cluster(self._rk)
        self.bootstrap_servers = lib.rd_kafka_mock_cluster_bootstraps(mc).decode()
        for name, parts in topics.items():
            assert lib.rd_kafka_mock_topic_create(mc, name.encode(), parts, 1) == 0

    def close(self) -> None:
        self._lib.rd_kafka_destroy(self._rk)


def test_consume_reads_exactly_what_was_produced_from_librdkafkas_mock_cluster(
    json_records: tuple[bytes, ...],
) -> None:
    """The batch loop, the start positions and the join phase without a broker: the records of a
    3-partition and a 1-partition topic produced into the mock cluster, read back exactly
    (N small enough that the mock keeps every record)."""
    mock = MockCluster({"m3": 3, "m1": 1})
    try:
        n = 4000
        produced = {}
        for topic in ("m3", "m1"):
            spec = ProducerSpec(
                topic=topic,
                props={"bootstrap.servers": mock.bootstrap_servers, "linger.ms": "5"},
                mode="saturated",
                count=n,
            )
            p = produce(spec, json_records)
            assert (p.delivered, p.failed) == (n, 0)
            produced[topic] = p.bytes
        # every record, the sampled ones too; librdkafka keeps at most about 100 records and one
        # 64 KiB fetch per partition queued (all 4,000 at once were sometimes one batch: no window)
        small = (
            "-X",
            "queued.min.messages=100",
            "-X",
            "max.partition.fetch.bytes=65536",
        )
        rc, r, err = _consume(mock, "--topic", "m3", "--count", str(n), *small)
        assert rc == 0, err
        assert (r["records"], r["bytes"], r["partitions"], r["join_s"]) == (n, produced["m3"], 3, 0)
        assert r["records_per_s"] > 0 and r["loop_us_per_record"] is not None
        rc, r, err = _consume(mock, "--topic", "m3", "--group", "mock-g", "--count", str(n), "--timeout", "30")
        assert rc == 0, err
        assert (r["records"], r["bytes"], r["mode"]) == (n, produced["m3"], "group") and r["join_s"] > 0
        rc, r, err = _consume(mock, "--topic", "m1", "--from", "1000", "--count", str(n - 1000))
        assert (rc, r["records"]) == (0, n - 1000), err
        rc, r, err = _consume(mock, "--topic", "m1", "--from", "end", "--duration", "0.5")
        assert (rc, r["records"]) == (0, 0)
        rc, _, err = _consume(mock, "--topic", "m1", "--from", str(n + 1), "--count", "1")
        assert rc == 1 and f"offset {n + 1} is outside m1 [0]'s records 0..{n}" in err, err
    finally:
        mock.close()


def _consume(cluster: LocalCluster | MockCluster, *argv: str) -> tuple[int, dict[str, Any], str]:
    env = {**os.environ, "PYTHONPATH": KBENCH_PATH}
    p = subprocess.run(
        [sys.executable, "-m", "kbench", "consume", "--bootstrap", cluster.bootstrap_servers, "--json", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return p.returncode, json.loads(p.stdout) if p.stdout.strip() else {}, p.stderr


@pytest.mark.kafka
def test_consume_reads_exactly_what_was_produced(kafka1: LocalCluster, json_records: tuple[bytes, ...]) -> None:
    props = kafka1.client_props()
    for topic, parts in (("consume3", 3), ("consume1", 1)):
        admin.create_topic(props, topic, parts)
    t0_ms = int(time.time() * 1000)
    produced = {}
    for topic in ("consume3", "consume1"):
        p = produce(
            ProducerSpec(topic=topic, props=kafka1.client_props(**{"linger.ms": "5"}), mode="saturated", count=N),
            json_records,
        )
        assert (p.delivered, p.failed) == (N, 0)
        produced[topic] = p.bytes
    t1_ms = int(time.time() * 1000) + 60_000

    # assigned from the beginning, every partition: exactly the records and bytes produced
    rc, r, err = _consume(kafka1, "--topic", "consume3", "--from", "beginning", "--count", str(N))
    assert rc == 0, err
    assert (r["records"], r["bytes"], r["partitions"], r["mode"]) == (N, produced["consume3"], 3, "assign")
    assert r["join_s"] == 0 and r["records_per_s"] > 0 and r["read_s"] > 0
    # --count beyond what is stored: the time limit ends it, exit 1, the records read are all there are
    rc, r, err = _consume(kafka1, "--topic", "consume3", "--count", str(N + 1), "--timeout", "3")
    assert rc == 1 and r["records"] == N and "read 3000 of --count 3001" in err
    # statistics come every --stats-interval (1 s): this 3 s read has them, with every record fetched
    assert r["fetch"] is not None and r["fetch"]["records_fetched"] == N and r["fetch"]["fetch_requests"] >= 1
    # from the end: nothing new was produced
    rc, r, _ = _consume(kafka1, "--topic", "consume3", "--from", "end", "--duration", "1")
    assert (rc, r["records"], r["timed_out"]) == (0, 0, True)
    # an offset (one partition): the records from it on; one past the end is refused by name
    rc, r, err = _consume(kafka1, "--topic", "consume1", "--from", "1000", "--duration", "3")
    assert rc == 0 and r["records"] == N - 1000, err
    rc, r, err = _consume(kafka1, "--topic", "consume1", "--from", str(N + 1), "--duration", "1")
    assert rc == 1 and f"offset {N + 1} is outside consume1 [0]'s records 0..{N}" in err
    # a timestamp: before the records were produced, all of them; after, none (the end)
    rc, r, _ = _consume(kafka1, "--topic", "consume1", "--from", f"@{t0_ms - 1000}", "--duration", "3")
    assert (rc, r["records"]) == (0, N)
    rc, r, _ = _consume(kafka1, "--topic", "consume1", "--from", f"@{t1_ms}", "--duration", "1")
    assert (rc, r["records"]) == (0, 0)
    # a group from the beginning: every record once, the join reported apart from the reading
    rc, r, err = _consume(kafka1, "--topic", "consume3", "--group", "consume-g", "--count", str(N), "--timeout", "60")
    assert rc == 0, err
    assert (r["records"], r["bytes"], r["mode"]) == (N, produced["consume3"], "group")
    assert r["join_s"] > 0 and r["first_record_s"] >= r["join_s"]


@pytest.mark.kafka
def test_consume_counts_the_zstd_batches_librdkafka_decompresses_again(
    kafka1: LocalCluster, json_records: tuple[bytes, ...]
) -> None:
    """librdkafka sizes a zstd batch's output buffer from the frame's content size; the frames this
    librdkafka writes (with libzstd's streaming API) carry none, so every JSON batch (about 5:1) is
    first decompressed into twice its compressed size, fails, and is decompressed again: the
    statistics' zbuf_grow, printed by kbench consume.  lz4 frames are decompressed once."""
    props = kafka1.client_props()
    for codec in ("zstd", "lz4"):
        topic = f"regrow-{codec}"
        admin.create_topic(props, topic, 1)
        spec = ProducerSpec(
            topic=topic,
            props=kafka1.client_props(**{"linger.ms": "5", "compression.type": codec}),
            mode="saturated",
            count=N,
        )
        assert produce(spec, json_records).delivered == N
        rc, r, err = _consume(kafka1, "--topic", topic, "--from", "beginning", "--duration", "3")
        assert rc == 0 and r["records"] == N, err
        regrows = r["fetch"]["decompress_regrows"]
        if codec == "zstd":
            assert regrows >= 1, r["fetch"]
        else:
            assert regrows == 0, r["fetch"]
