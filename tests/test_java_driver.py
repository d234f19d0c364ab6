"""The Java driver (kbench/kafka/java) over the driver protocol (docs/drivers.md)."""

from __future__ import annotations

import base64
import csv
import json
import os
import random
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from engine_fakes import plan_toml, sweep
from kbenv import KBENCH_PATH

from kbench import _native
from kbench.engine.transports.local_pool import spawn
from kbench.kafka import admin, clients, java_driver, procstat
from kbench.kafka.drivers import DEFAULT_TICK_S
from kbench.model.corpus import write_lenprefixed

PCTS = (("p50_us", 50.0), ("p95_us", 95.0), ("p99_us", 99.0), ("p999_us", 99.9))


def _java_job(job: Mapping[str, Any]) -> dict[str, Any]:
    """Run one Java driver process to completion; its RESULT object."""
    p = subprocess.run(
        java_driver.command(), input=json.dumps({"protocol": 1, **job}) + "\n", capture_output=True, text=True
    )
    lines = p.stdout.splitlines()
    assert lines and lines[-1].startswith("RESULT "), (p.stdout, p.stderr[-2000:])
    return dict(json.loads(lines[-1][7:]))


@pytest.mark.kafka
def test_histogram_encoding_equals_the_c_histogram() -> None:
    rng = random.Random(5)
    values = [rng.randrange(0, 1 << 36) for _ in range(3000)] + [-5, 0, 1, 2047, 2048, 4095, (1 << 36) - 1, 1 << 36]
    res = _java_job({"role": "histogram", "values": values})
    h = res["histogram"]
    ours = _native.Histogram()
    for v in values:
        ours.record(v)
    enc = base64.b64decode(h["encoded"])
    assert enc == ours.encode()  # byte for byte: the same buckets, totals, min, max and sum
    back = _native.Histogram.decode(enc)
    assert back.count == h["count"] == ours.count
    assert h["out_of_range"] == back.underflow + back.overflow == 2  # -5 and 2^36
    for name, p in PCTS:
        assert back.percentile(p) / 1000.0 == h[name]
    assert back.max / 1000.0 == h["max_us"]


@pytest.mark.kafka
def test_bad_job_is_one_error_line() -> None:
    p = subprocess.run(
        java_driver.command(), input='{"protocol": 1, "role": "sideways"}\n', capture_output=True, text=True
    )
    assert p.returncode == 1
    assert p.stdout.startswith("ERROR ") and "unknown role 'sideways'" in json.loads(p.stdout[6:])


@pytest.mark.kafka
def test_build_cache_is_keyed_by_sources_and_version() -> None:
    assert java_driver.source_hash("4.1.2") == java_driver.source_hash("4.1.2")
    assert java_driver.source_hash("4.1.2") != java_driver.source_hash("4.0.0")
    d = java_driver.build()
    assert d.cache_dir.name == f"java-driver-4.1.2-{java_driver.source_hash()[:12]}"
    assert d.jar.is_file() and "kafka-clients-4.1.2.jar" in d.classpath


def test_cell_properties_in_each_clients_names() -> None:
    base = {"bootstrap.servers": "b:9092"}
    j = clients.producer_props("java", base, "zstd", 19, 65536, 5.0, "all")
    assert j == {**base, "compression.type": "zstd", "compression.zstd.level": "19", "batch.size": "65536"} | {
        "linger.ms": "5",
        "acks": "all",
    }
    r = clients.producer_props("librdkafka", base, "lz4", 9, 16384, 0.5, "1")
    assert r["compression.level"] == "9" and r["linger.ms"] == "0.5" and r["statistics.interval.ms"] == "1000"


# ---------------------------------------------------------------------------- on Kafka


def _corpus_file(tmp: Path, records: tuple[bytes, ...]) -> Path:
    return write_lenprefixed(records, tmp / "corpus.bin")


def _pair(
    kafka: Any,
    tmp: Path,
    topic: str,
    producer_job: dict[str, Any],
    consumer_client: str = "java",
    producer_client: str = "java",
    header_sample: int = 1,
) -> tuple[dict[str, Any], dict[str, Any]]:
    bs = kafka.bootstrap_servers
    admin.create_topic({"bootstrap.servers": bs}, topic, 2, 1)
    run_id = random.getrandbits(62) + 1
    count = int(producer_job["count"])
    cons = spawn(
        "consumer",
        {"props": {"bootstrap.servers": bs}, "topic": topic, "run_id": run_id, "expected": count, "timeout": 60.0}
        | {"header_sample": header_sample},
        tmp / f"{topic}.c.err",
        consumer_client,
    )
    cons.expect("READY", 60)
    prod = spawn(
        "producer",
        {
            "topic": topic,
            "run_id": run_id,
            "corpus_format": "lenprefixed",
            "header_sample": header_sample,
            **producer_job,
        },
        tmp / f"{topic}.p.err",
        producer_client,
    )
    prod.expect("STARTED", 60)
    return prod.result(120), cons.result(120)


@pytest.mark.kafka
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_java_produces_and_consumes_every_record_once(
    kafka1: Any, tmp_path: Path, json_records: tuple[bytes, ...], codec: str
) -> None:
    n = 3000
    props = {"bootstrap.servers": kafka1.bootstrap_servers, "compression.type": codec, "linger.ms": "5"}
    pres, cres = _pair(
        kafka1,
        tmp_path,
        f"java-{codec}",
        {
            "props": props,
            "corpus_file": str(_corpus_file(tmp_path, json_records)),
            "mode": "saturated",
            "count": n,
            "keys": "round-robin",
            "nkeys": 16,
        },
    )
    assert (pres["sent"], pres["delivered"], pres["failed"], pres["undelivered"]) == (n, n, 0, 0)
    assert pres["delivery_errors"] == {}
    assert (cres["unique"], cres["lost"], cres["duplicates"], cres["records"]) == (n, 0, 0, n)
    assert cres["e2e"]["count"] == n and cres["partitions"] == 2
    assert pres["client"]["name"] == "java" and pres["client"]["version"] == "4.1.2"
    assert "-XX:+UseG1GC" in pres["client"]["runtime_flags"]
    assert pres["client_stats"]["wire_bytes"] > 0
    if codec != "none":
        assert pres["client_stats"]["raw"]["compression-rate-avg"] < 1.0


@pytest.mark.kafka
def test_java_holds_a_fixed_rate(kafka1: Any, tmp_path: Path, json_records: tuple[bytes, ...]) -> None:
    rate, seconds = 4000.0, 5.0
    count = int(rate * seconds)
    pres, cres = _pair(
        kafka1,
        tmp_path,
        "java-fixed",
        {
            "props": {"bootstrap.servers": kafka1.bootstrap_servers, "compression.type": "lz4"},
            "corpus_file": str(_corpus_file(tmp_path, json_records)),
            "mode": "fixed-rate",
            "rate": rate,
            "count": count,
            "skip_s": 1.0,
        },
        consumer_client="librdkafka",  # the C consumer reads the Java producer's kb headers
    )
    assert pres["sent"] == count and pres["delivered"] == count
    assert abs(pres["achieved_rate"] - rate) / rate < 0.001
    # the steady window: messages sent in it per second of it
    w = pres["windows"]
    send = w["send"]
    assert send["end_mono_ns"] > send["start_mono_ns"]
    due_span = (w["last_due_mono_ns"] - send["start_mono_ns"]) / 1e9
    assert abs((count - 1) / due_span - rate) / rate < 1e-6
    assert pres["delay"]["count"] == count and pres["corrected"]["count"] == count
    assert pres["delay"]["p50_us"] < 5000  # parked, not late: the schedule is kept
    # wakes are >= tick (default 2 ms) apart on the schedule: at 4,000 msg/s (250 µs apart) at
    # most an eighth as many wakes as messages (a loop parking per message would wake 20,000 times).
    # Wake k is at >= t0 + k * tick and every wake but the last is before the last due time, so
    # wakes <= ceil(span / tick) + 1 < span / tick + 2.
    assert 0 < pres["wakes"] < due_span / DEFAULT_TICK_S + 2
    cpu = pres["cpu"]
    assert cpu["wall_s"] == pytest.approx(seconds - 1.0, abs=0.5)
    assert set(cpu["threads"]) == {"app", "client", "runtime", "other"}
    assert cpu["threads"]["client"]["usr_s"] + cpu["threads"]["client"]["sys_s"] > 0
    assert (cres["unique"], cres["lost"], cres["duplicates"]) == (count, 0, 0)
    for name in ("service", "delay", "corrected"):
        h = _native.Histogram.decode(base64.b64decode(pres[name]["encoded"]))
        assert h.count == pres[name]["count"]
        for key, p in PCTS:
            assert h.percentile(p) / 1000.0 == pres[name][key]


BOTH = plan_toml(
    sweep("sat", ["B"], ["lz4"], rate="saturated", client=["librdkafka", "java"]),
    sweep("fixed", ["A", "C", "D"], ["lz4"], rate=1500, client=["librdkafka", "java"]),
    transport="local",
    name="both-clients",
    repetitions=1,
    warmup=False,
    duration_s=3,
    min_window_s=0,
    steady_skip_s=0.5,
    corpus_size=300000,
    retries=2,
    # this test is about the two clients through the engine, not latency: a 3-s Java run carries the
    # JVM's start-up backlog in its whole-run send delay (benchmarks/README.md, the clients run), which
    # A's 20 ms saturation check would flag; the check itself is tested in tests/test_knee.py
    saturation_bound_ms=5000,
)


@pytest.mark.kafka
@pytest.mark.slow
def test_kbench_run_with_both_clients(tmp_path: Path) -> None:
    plan = tmp_path / "both.toml"
    plan.write_text(BOTH)
    out = tmp_path / "run"
    # steal is injected at 0 %, so no row may be INVALID on a busy host; a fixed-rate repetition
    # that missed its rate is REJECTED and retried (retries = 2); nothing else is allowed
    env = {**os.environ, "PYTHONPATH": KBENCH_PATH, procstat.INJECT_ENV: "0"}
    p = subprocess.run(
        [sys.executable, "-m", "kbench", "run", str(plan), "-o", str(out), "--force"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    for exp in "ABCD":
        with (out / f"{exp}.csv").open() as f:
            rows = list(csv.DictReader(f))
        assert {r["client"] for r in rows} == {"librdkafka", "java"}, exp
        last: dict[tuple[str, str], tuple[int, str]] = {}
        for r in rows:
            assert r["status"] in ("OK", "REJECTED"), (exp, r["status"], r["reason"])
            assert r["status"] == "OK" or (exp != "B" and r["reason"]), (exp, r)  # B has no target to miss
            assert int(r["messages"]) > 0
            k, a = (r["cell_id"], r["rep"]), int(r["attempt"])
            if a >= last.get(k, (0, ""))[0]:
                last[k] = (a, r["status"])
        # every cell of both clients ends with an OK repetition
        cells = {r["cell_id"] for r in rows}
        assert set(last) == {(c, "1") for c in cells} and {st for _, st in last.values()} == {"OK"}, (exp, last)
        assert {r["client"] for r in rows if r["status"] == "OK"} == {"librdkafka", "java"}, exp
    with (out / "D.csv").open() as f:
        d = list(csv.DictReader(f))
    roles = {(r["client"], r["role"]) for r in d}
    assert ("librdkafka", "producer") in roles and ("java", "producer") in roles
    # the Java driver's thread groups land in main's split: app thread = loadgen, kafka-* = client
    java_prod = [r for r in d if r["client"] == "java" and r["role"] == "producer" and r["status"] == "OK"]
    assert java_prod and all(float(r["client_cpu_s"]) > 0 and float(r["loadgen_cpu_s"]) > 0 for r in java_prod)
    man = json.loads((out / "manifest.json").read_text())
    assert man["clients"]["java"]["version"] == "4.1.2"
    assert man["clients"]["java"]["runtime"].startswith("OpenJDK")
    assert man["clients"]["librdkafka"]["name"] == "librdkafka"


@pytest.mark.kafka
def test_cli_produce_with_the_java_client(kafka1: Any, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": KBENCH_PATH}
    out = tmp_path / "r" / "produce.json"  # -o names a directory
    cmd = [sys.executable, "-m", "kbench", "produce", "--client", "java", "--bootstrap", kafka1.bootstrap_servers]
    cmd += ["--topic", "cli-java", "--create", "--rate", "500", "--count", "1000", "--codec", "zstd"]
    cmd += ["-X", "compression.zstd.level=19", "-X", "sasl.password=s3cr3t-value", "--consume", "-o", str(out.parent)]
    cmd += ["--header-sample", "100"]  # the kb header on sequence numbers 0, 100, ..., 900
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr
    assert "sent 1000, delivered 1000, failed 0" in p.stdout and "lost 0, duplicates 0" in p.stdout
    r = json.loads(out.read_text())
    assert r["client"] == "java" and r["producer"]["client"]["name"] == "java"
    assert r["producer"]["corrected"]["count"] == 1000 and r["consumer"]["e2e"]["count"] == 10
    assert r["producer"]["target_rate"] == 500 and r["producer"]["delay"]["count"] == 1000
    assert "s3cr3t-value" not in out.read_text() and "s3cr3t-value" not in p.stdout


PRODUCER_FIELDS = {"sent", "delivered", "failed", "undelivered", "bytes", "send_seconds", "achieved_rate"}
PRODUCER_FIELDS |= {"delivered_rate", "delivery_errors", "client_errors", "service", "delay", "corrected", "sampled"}
PRODUCER_FIELDS |= {"wakes"}
CONSUMER_FIELDS = {"records", "bytes", "unique", "duplicates", "lost", "out_of_range", "foreign", "no_header"}
CONSUMER_FIELDS |= {"partitions", "timed_out", "errors", "e2e", "sampled", "samples_missing"}
WINDOW = {"start_mono_ns", "end_mono_ns", "start_wall_ns", "end_wall_ns"}


@pytest.mark.kafka
@pytest.mark.parametrize("producer", ["librdkafka", "java"])
def test_both_drivers_speak_the_protocol_to_each_other(
    kafka1: Any, tmp_path: Path, json_records: tuple[bytes, ...], producer: str
) -> None:
    consumer = "java" if producer == "librdkafka" else "librdkafka"
    n = 1500
    props = {"bootstrap.servers": kafka1.bootstrap_servers, "compression.type": "zstd"}
    stats = {"stats_path": str(tmp_path / "stats.jsonl")}
    if producer == "librdkafka":  # its wire bytes come from its statistics
        props["statistics.interval.ms"] = "100"
    pres, cres = _pair(
        kafka1,
        tmp_path,
        f"proto-{producer}",
        {"props": props, "corpus_file": str(_corpus_file(tmp_path, json_records)), "mode": "fixed-rate"}
        | {"rate": 1000.0, "count": n, "tick_s": 0.004}  # 4 messages a wake
        | stats,
        consumer_client=consumer,
        producer_client=producer,
        header_sample=100,  # both drivers put the kb header on sequence numbers 0, 100, ..., 1400
    )
    for res, fields, name in ((pres, PRODUCER_FIELDS, producer), (cres, CONSUMER_FIELDS, consumer)):
        assert res["protocol"] == 1 and res["client"]["name"] == name
        assert fields <= set(res)
        assert {"usr_s", "sys_s", "wall_s", "note"} <= set(res["cpu"])
        assert set(res["windows"]["run"]) == WINDOW
        assert res["windows"]["run"]["end_mono_ns"] > res["windows"]["run"]["start_mono_ns"]
    assert set(pres["windows"]["send"]) == WINDOW and pres["windows"]["last_due_mono_ns"] > 0
    # both loops keep the tick rule (docs/drivers.md section 3): wakes >= tick_s apart on the schedule
    due_span = (pres["windows"]["last_due_mono_ns"] - pres["windows"]["send"]["start_mono_ns"]) / 1e9
    assert n / 8 < pres["wakes"] < due_span / 0.004 + 2  # <= ceil(span / tick) + 1, see the Java fixed-rate test
    assert set(cres["windows"]["receive"]) == WINDOW
    assert pres["client_stats"]["wire_bytes"] > 0
    assert (pres["delivered"], cres["unique"], cres["lost"], cres["duplicates"]) == (n, n, 0, 0)
    assert pres["sampled"] == cres["sampled"] == cres["e2e"]["count"] == n // 100
    assert (cres["samples_missing"], cres["out_of_range"], cres["no_header"]) == (0, 0, n - n // 100)
    # one clock for both processes: e2e latencies are positive and bounded
    assert cres["e2e"]["p50_us"] > 0 and cres["e2e"]["max_us"] < 30e6
