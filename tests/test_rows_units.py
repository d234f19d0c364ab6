"""The experiments' shared row arithmetic (kbench.experiments.rowkit), value by value: one
role's CPU, CPU-s/GB's denominator, summed broker counters, ratios.  Pure Python: tests the
mutation run uses for the experiments' row rules."""

from __future__ import annotations

import math

import pytest

from kbench.engine.status import Status
from kbench.engine.transports.base import CpuSample
from kbench.experiments import rowkit


def test_one_roles_cpu() -> None:
    usr, sys_, cpu, st, why = rowkit.cpu_role(CpuSample("producer", 1.0, 0.5, 4.0))
    assert (usr, sys_, cpu, st, why) == (25.0, 12.5, 1.5, None, "")
    usr, sys_, cpu, st, why = rowkit.cpu_role(CpuSample("producer", 1.0, 0.5, 0.0))
    assert math.isnan(usr) and math.isnan(sys_) and cpu == 1.5 and st is None  # no wall time: no %
    assert rowkit.cpu_role(CpuSample("broker-1", None, None, 4.0, total_s=2.0)) == (None, None, 2.0, None, "")
    assert rowkit.cpu_role(CpuSample("broker-1", None, None, 4.0, total_s=-0.5)) == (
        None,
        None,
        None,
        Status.FAILED_CPU_REGRESSED,
        "broker-1: CPU counter went backwards (-0.500s)",
    )
    assert rowkit.cpu_role(CpuSample("broker-1", None, None, 4.0, total_s=0.5, regressed=True))[3] == (
        Status.FAILED_CPU_REGRESSED
    )
    assert rowkit.cpu_role(CpuSample("consumer", None, 1.0, 4.0, note="gone")) == (
        None,
        None,
        None,
        Status.NA,
        "consumer: CPU counters unreadable (gone)",
    )
    assert rowkit.cpu_role(CpuSample("consumer", 1.0, None, 4.0))[4] == "consumer: CPU counters unreadable"
    for c in (CpuSample("p", -0.1, 0.5, 4.0), CpuSample("p", 0.1, -0.5, 4.0), CpuSample("p", 0.1, 0.5, 4.0, True)):
        usr, sys_, cpu, st, why = rowkit.cpu_role(c)
        assert (usr, sys_, cpu, st) == (None, None, None, Status.FAILED_CPU_REGRESSED)
        assert why == f"p: CPU counter went backwards (usr {c.usr_s:.3f}s, sys {c.sys_s:.3f}s)"
    assert rowkit.cpu_role(CpuSample("p", 0.0, 0.0, 2.0))[:3] == (0.0, 0.0, 0.0)


def test_per_gb_window_and_counters() -> None:
    assert rowkit.window_gb(CpuSample("p", 1.0, 1.0, 1.0, window_payload_bytes=2_500_000_000)) == 2.5
    assert rowkit.window_gb(CpuSample("p", 1.0, 1.0, 1.0)) is None
    assert rowkit.per_gb(3.0, 1.5) == 2.0 and rowkit.per_gb(0.0, 1.5) == 0.0
    assert rowkit.per_gb(None, 1.5) is None and rowkit.per_gb(3.0, None) is None and rowkit.per_gb(3.0, 0.0) is None
    b1 = CpuSample("broker-1", 1.0, 1.0, 1.0, broker_counters={"bytes_in": 10.0, "bytes_out": None})
    b2 = CpuSample("broker-2", 1.0, 1.0, 1.0, broker_counters={"bytes_in": 5.0, "bytes_out": 3.0})
    assert rowkit.sum_counter([b1, b2], "bytes_in") == 15.0
    assert rowkit.sum_counter([b1, b2], "bytes_out") is None and rowkit.sum_counter([b2], "bytes_out") == 3.0
    assert rowkit.sum_counter([b1, b2], "nope") is None and rowkit.sum_counter([], "bytes_in") is None
    assert rowkit.GB == 1e9


# --------------------------------------------------------------------------- every column of A-F

from kbench.engine import rules  # noqa: E402
from kbench.engine.cell import Cell  # noqa: E402
from kbench.engine.transports.base import BatchFill, LatencySummary, RunResult  # noqa: E402
from kbench.model import corpus as corpus_mod  # noqa: E402

CORPUS = corpus_mod.Corpus("c", (b"abc",) * 4)
CELL = Cell("x-001", "sw", ("A", "B", "C", "D", "E", "F"), "zstd:3", "json", 32768, 7.0, 2, "all", 800.0, "lz4")
PARAMS = {
    "cell_id": "x-001",
    "sweep": "sw",
    "client": "librdkafka",
    "codec": "zstd:3",
    "corpus": "json",
    "batch_size": 32768,
    "linger_ms": 7.0,
    "partitions": 2,
    "acks": "all",
    "rate": 800.0,
    "key_policy": "none",
    "topic_compression": "lz4",
    "control_of": "",  # not an A/A control
}


def _lat(b: float, oor: int = 0) -> LatencySummary:
    return LatencySummary(100, b, b + 1, b + 2, b + 3, b + 4, oor)


def _full(**kw: object) -> RunResult:
    base: dict[str, object] = dict(
        messages_sent=830,
        messages_acked=820,
        payload_bytes=4_100_000_000,
        elapsed_s=1.25,
        target_rate=800.0,
        achieved_rate=810.0,  # +1.25 %: within the 2 % tolerance
        latency_service=_lat(100, 1),
        latency_delay=_lat(200),
        latency_corrected=_lat(300, 2),
        latency_e2e=_lat(400, 4),
        latency_phases={"queue_p50_us": 11.0, "compress_p50_us": 12.0, "request_p50_us": 13.0},
        consumed=820,
        lost=0,
        duplicated=0,
        cpu=(
            CpuSample("producer", 3.0, 1.0, 8.0, pid=11, loadgen_s=1.5, client_s=2.5, window_payload_bytes=2 * 10**9),
            CpuSample("consumer", 1.0, 3.0, 16.0, pid=12, window_payload_bytes=4 * 10**9),
            CpuSample(
                "broker-0",
                2.0,
                2.0,
                4.0,
                pid=13,
                source="/proc/13/stat",
                broker_counters={"bytes_in": 7.0, "bytes_out": 8.0, "produce_conversions": 1.0},
                window_payload_bytes=5 * 10**8,
            ),
            CpuSample(
                "broker-1",
                None,
                None,
                4.0,
                total_s=2.0,
                broker_counters={"bytes_in": 9.0, "bytes_out": 10.0, "produce_conversions": 2.0},
                window_payload_bytes=5 * 10**8,
            ),
        ),
        steal_pct=0.5,
        producer_wire_bytes=3 * 10**8,
        consumer_wire_bytes=6 * 10**8,
        stored_bytes=10**9,
        stored_batches=77,
        stored_uncompressed_bytes=4_500_000_000,
        stored_codecs=("lz4", "zstd"),
        topic_compression_readback="lz4",
        stored_source="segments",
        batch_fill=BatchFill(77, 10.0, 20.0, 30.0, 1000.0, 2000.0, 3000.0, "inspector"),
        client_fill=BatchFill(70, 11.0, 21.0, 31.0, 1100.0, 2100.0, 3100.0, "librdkafka-stats"),
        nic_bytes={"producer": (5 * 10**8, 10**8)},
        nic_window_payload_bytes=2 * 10**9,
    )
    base.update(kw)
    return RunResult(**base)  # type: ignore[arg-type]


def _rows(res: RunResult, rf: int = 3) -> dict[str, list[dict[str, object]]]:
    return rules.rows_for(CELL, 2, res, CORPUS, 6.5, rf, attempt=3)


RUN = {
    **PARAMS,
    "rep": 2,
    "attempt": 3,
    "target_rate_msgs": 800.0,
    "achieved_rate_msgs": 810.0,
    "rate_error_pct": (810.0 - 800.0) / 800.0 * 100,
    "messages": 820,
}
LOSS = {"lost": 0, "duplicated": 0, "delivery_errors": 0}


def test_a_row_every_column() -> None:
    (a,) = _rows(_full())["A"]
    assert a == {
        **RUN,
        **{
            f"corrected_{k}": v
            for k, v in zip(("p50_us", "p95_us", "p99_us", "p999_us", "max_us"), (300, 301, 302, 303, 304))
        },
        **{
            f"service_{k}": v
            for k, v in zip(("p50_us", "p95_us", "p99_us", "p999_us", "max_us"), (100, 101, 102, 103, 104))
        },
        "delay_p99_us": 202,
        "delay_max_us": 204,
        "e2e_p50_us": 400,
        "e2e_p99_us": 402,
        "e2e_max_us": 404,
        "phase_queue_p50_us": 11.0,
        "phase_compress_p50_us": 12.0,
        "phase_request_p50_us": 13.0,
        "phase_decompress_p50_us": None,  # no batch-size statistics for the consumer's side here
        "phase_fetch_wait_p50_us": None,
        "out_of_range": 1 + 2 + 4,  # service + corrected + e2e (not the delay histogram)
        **LOSS,
        "status": "OK",
        "reason": "",
    }
    (na,) = _rows(_full(latency_e2e=None, latency_e2e_na="a worker's clock is not synchronised"))["A"]
    assert na["out_of_range"] == 3 and na["e2e_p50_us"] is None
    assert na["status"] == "OK" and na["reason"] == "e2e latency NA: a worker's clock is not synchronised"


def test_b_row_every_column() -> None:
    (b,) = _rows(_full())["B"]
    span = 820 / 810.0  # the delivered span: acked / achieved rate
    assert b == {
        **RUN,
        "payload_mb_per_s": 4_100_000_000 / span / 1e6,
        "producer_wire_mb_per_s": 3 * 10**8 / span / 1e6,
        "service_p50_us": 100,
        "service_p99_us": 102,
        "latency_flag": "latency-NOT-comparable-saturated",
        **LOSS,
        "status": "OK",
        "reason": "",
    }
    (b0,) = _rows(_full(producer_wire_bytes=None))["B"]
    assert b0["producer_wire_mb_per_s"] is None


def test_c_and_e_rows_every_column() -> None:
    rows = _rows(_full())
    (c,) = rows["C"]
    assert c == {
        **RUN,
        "payload_bytes": 4_100_000_000,
        "stored_bytes": 10**9,
        "ratio": 4.1,
        "batch_ratio": 4.5,
        "corpus_entropy_bits": 6.5,
        "corpus_sha256": CORPUS.sha256,
        "corpus_near_random": True,  # 6.5 >= 6.3 bits per byte
        "stored_batches": 77,
        "stored_codecs": ["lz4", "zstd"],
        "stored_source": "segments",
        "status": "OK",
        "reason": "",
    }
    (e,) = rows["E"]
    assert e == {
        **RUN,
        "batches": 77,
        "records_per_batch_p50": 10.0,
        "records_per_batch_p90": 20.0,
        "records_per_batch_max": 30.0,
        "bytes_per_batch_p50": 1000.0,
        "bytes_per_batch_p90": 2000.0,
        "bytes_per_batch_max": 3000.0,
        "fill_source": "inspector",
        "client_records_per_batch_p50": 11.0,
        "client_records_per_batch_p90": 21.0,
        "client_batch_bytes_p50": 1100.0,
        "client_batch_bytes_p90": 2100.0,
        "payload_bytes": 4_100_000_000,
        "stored_bytes": 10**9,
        "ratio": 4.1,
        "stored_source": "segments",
        "status": "OK",
        "reason": "",
    }
    low = _rows(_full(stored_uncompressed_bytes=None, batch_fill=None, client_fill=None), rf=1)
    assert low["C"][0]["batch_ratio"] is None and low["E"][0]["batches"] is None
    assert low["E"][0]["client_batch_bytes_p50"] is None
    assert rules.rows_for(CELL, 2, _full(), CORPUS, 6.2, 3)["C"][0]["corpus_near_random"] is False
    inferred = _rows(_full(stored_source="DescribeLogDirs + inferred codec"))["C"][0]
    assert inferred["status"] == "OK"
    assert inferred["reason"] == "stored codec inferred, not read (source: DescribeLogDirs + inferred codec)"


def test_d_rows_every_column() -> None:
    d = {r["role"]: r for r in _rows(_full())["D"]}
    assert list(d) == ["producer", "consumer", "broker-0", "broker-1"]
    # no broker's own byte counters in this run (testbed only): every row carries them as NA
    no_kafka = {
        "kafka_bytes_in": None,
        "kafka_bytes_out": None,
        "kafka_replication_bytes_in": None,
        "kafka_replication_bytes_out": None,
        "nic_tx_overhead": None,
        "nic_rx_overhead": None,
        "kafka_bytes_source": "",
    }
    common = {**RUN, **no_kafka, "steal_pct": 0.5, "status": "OK", "reason": ""}
    none_nic = {"nic_tx_bytes": None, "nic_rx_bytes": None, "nic_tx_bytes_per_gb": None, "nic_rx_bytes_per_gb": None}
    assert d["producer"] == {
        **common,
        "role": "producer",
        "pid": 11,
        "usr_pct": 3.0 / 8.0 * 100,
        "sys_pct": 1.0 / 8.0 * 100,
        "cpu_s": 4.0,
        "payload_gb": 2.0,
        "cpu_source": "",
        "broker_bytes_in": None,
        "broker_bytes_out": None,
        "produce_conversions": None,
        "cpu_s_per_gb": 2.0,
        "loadgen_cpu_s": 1.5,
        "loadgen_cpu_s_per_gb": 0.75,
        "client_cpu_s": 2.5,
        "client_cpu_s_per_gb": 1.25,
        "wire_bytes": 3 * 10**8,
        "wire_source": "producer statistics: bytes out",
        "nic_tx_bytes": 5 * 10**8,
        "nic_rx_bytes": 10**8,
        "nic_tx_bytes_per_gb": 2.5e8,
        "nic_rx_bytes_per_gb": 0.5e8,
        "nic_source": "emulated host NIC counters (Ethernet frames) over the whole repetition",
    }
    assert d["consumer"] == {
        **common,
        **none_nic,
        "role": "consumer",
        "pid": 12,
        "usr_pct": 1.0 / 16.0 * 100,
        "sys_pct": 3.0 / 16.0 * 100,
        "cpu_s": 4.0,
        "payload_gb": 4.0,
        "cpu_source": "",
        "broker_bytes_in": None,
        "broker_bytes_out": None,
        "produce_conversions": None,
        "cpu_s_per_gb": 1.0,
        "loadgen_cpu_s": None,
        "loadgen_cpu_s_per_gb": None,
        "client_cpu_s": None,
        "client_cpu_s_per_gb": None,
        "wire_bytes": 6 * 10**8,
        "wire_source": "consumer statistics: bytes in",
        "nic_source": "",
    }
    assert d["broker-0"] == {
        **common,
        **none_nic,
        "role": "broker-0",
        "pid": 13,
        "usr_pct": 50.0,
        "sys_pct": 50.0,
        "cpu_s": 4.0,
        "payload_gb": 0.5,
        "cpu_source": "/proc/13/stat",
        "broker_bytes_in": 7.0,
        "broker_bytes_out": 8.0,
        "produce_conversions": 1.0,
        "cpu_s_per_gb": 8.0,
        "loadgen_cpu_s": None,
        "loadgen_cpu_s_per_gb": None,
        "client_cpu_s": None,
        "client_cpu_s_per_gb": None,
        "wire_bytes": 2 * 10**9,  # stored bytes x (RF - 1)
        "wire_source": "replication: stored bytes x (RF-1), RF=3",
        "nic_source": "",
    }
    b1 = d["broker-1"]
    assert (b1["pid"], b1["usr_pct"], b1["sys_pct"], b1["cpu_s"], b1["cpu_s_per_gb"]) == (None, None, None, 2.0, 4.0)
    assert b1["cpu_source"] == "kbench worker process (/proc/self/stat)"  # no pid: the worker's own counters
    assert (b1["broker_bytes_in"], b1["broker_bytes_out"], b1["produce_conversions"]) == (9.0, 10.0, 2.0)


def test_d_rows_when_figures_are_missing() -> None:
    cpu = (
        CpuSample("producer", 3.0, 1.0, 8.0, pid=11, loadgen_s=1.5, window_payload_bytes=2 * 10**9),
        CpuSample("consumer", 1.0, 3.0, 16.0, pid=12),
        CpuSample("broker-0", 2.0, 2.0, 4.0, pid=13, window_payload_bytes=5 * 10**8),
    )
    res = _full(cpu=cpu, consumer_wire_bytes=None, nic_window_payload_bytes=None, stored_bytes=None)
    d = {r["role"]: r for r in rules.rows_for(CELL, 2, res, CORPUS, 6.5, 1)["D"]}
    assert d["producer"]["loadgen_cpu_s"] is None and d["producer"]["client_cpu_s_per_gb"] is None  # not split
    assert d["producer"]["nic_tx_bytes"] == 5 * 10**8 and d["producer"]["nic_tx_bytes_per_gb"] is None
    c = d["consumer"]
    assert c["status"] == "NA" and c["reason"] == "consumer: payload of its CPU window not measured"
    assert c["cpu_s"] == 4.0 and c["cpu_s_per_gb"] is None and c["wire_bytes"] is None
    assert (
        d["broker-0"]["wire_bytes"] is None
        and d["broker-0"]["wire_source"] == "replication: stored bytes x (RF-1), RF=1"
    )
    fetched = _full(cpu=cpu, consumer_wire_bytes=None)
    c = {r["role"]: r for r in rules.rows_for(CELL, 2, fetched, CORPUS, 6.5, 1)["D"]}["consumer"]
    assert (c["wire_bytes"], c["wire_source"]) == (
        10**9,
        "stored bytes fetched once (consumer statistics not exported)",
    )
    assert {r["role"]: r for r in rules.rows_for(CELL, 2, fetched, CORPUS, 6.5, 1)["D"]}["broker-0"]["wire_bytes"] == 0
    (only,) = _rows(_full(cpu=()))["D"]
    assert only["role"] == "all" and only["status"] == "NA" and only["reason"] == "this transport measured no CPU"


def test_f_row_every_column_and_its_na() -> None:
    (f,) = _rows(_full())["F"]
    assert f == {
        **RUN,
        "producer_codec": "zstd:3",
        "stored_codecs": ["lz4", "zstd"],
        "recompressed": True,  # lz4 batches in a zstd producer's topic
        "broker_usr_pct": None,  # broker-1's counters give usr+sys only
        "broker_sys_pct": None,
        "broker_cpu_s_per_gb": (4.0 + 2.0) / 0.5,
        "payload_bytes": 4_100_000_000,
        "stored_bytes": 10**9,
        "stored_source": "segments",
        "produce_conversions": 3.0,
        "status": "OK",
        "reason": "",
    }
    two = (
        CpuSample("broker-0", 2.0, 1.0, 4.0, pid=13, window_payload_bytes=5 * 10**8),
        CpuSample("broker-1", 1.0, 0.5, 4.0, pid=14, window_payload_bytes=5 * 10**8),
    )
    (f,) = _rows(_full(cpu=two, stored_codecs=("zstd",)))["F"]
    assert (f["broker_usr_pct"], f["broker_sys_pct"], f["broker_cpu_s_per_gb"]) == (75.0, 37.5, 9.0)
    assert f["recompressed"] is False and f["produce_conversions"] is None
    assert _rows(_full(cpu=two, stored_codecs=()))["F"][0]["recompressed"] is None
    nowin = tuple(CpuSample(c.role, c.usr_s, c.sys_s, c.wall_s, pid=c.pid) for c in two)
    (f,) = _rows(_full(cpu=nowin))["F"]
    assert f["status"] == "NA" and f["reason"] == "broker: payload of its CPU window not measured"
    assert f["broker_cpu_s_per_gb"] is None
    back = (CpuSample("broker-0", 2.0, -1.0, 4.0, pid=13, window_payload_bytes=5 * 10**8), two[1])
    (f,) = _rows(_full(cpu=back))["F"]
    assert f["status"] == "FAILED_CPU_REGRESSED" and f["broker_cpu_s_per_gb"] is None
    assert f["reason"] == "broker-0: CPU counter went backwards (usr 2.000s, sys -1.000s)"
    (f,) = _rows(_full(cpu=(CpuSample("producer", 1.0, 1.0, 1.0, pid=1),)))["F"]
    assert f["status"] == "NA" and f["reason"] == "broker CPU not measured (no local broker pids)"


# --------------------------------------------------------------------------- the run's verdict, A's saturation

from kbench.experiments import a_latency  # noqa: E402


def test_judge_each_rule_at_its_bound() -> None:
    ok = rules.judge(CELL, _full(achieved_rate=816.0, steal_pct=1.0))  # +2.00 %, steal at the 1 % limit
    assert (ok.status, ok.reasons) == ("OK", [])
    v = rules.judge(CELL, _full(achieved_rate=816.5))
    assert (v.status, v.reasons) == (
        "REJECTED",
        ["achieved 816.5 msgs/s is +2.06% off the target 800.0 msgs/s (limit ±2%)"],
    )
    assert rules.judge(CELL, _full(achieved_rate=783.0)).status == "REJECTED"
    assert rules.judge(CELL, _full(target_rate=None, achieved_rate=5.0)).status == "OK"
    assert rules.judge(CELL, _full(target_rate=0.0, achieved_rate=5.0)).status == "OK"
    v = rules.judge(CELL, _full(steal_pct=1.01))
    assert (v.status, v.reasons) == ("INVALID", ["CPU steal 1.01% > 1% during the run"])
    v = rules.judge(CELL, _full(steal_pct=2.5), steal_limit_pct=2.0)
    assert v.reasons == ["CPU steal 2.50% > 2% during the run"]
    v = rules.judge(CELL, _full(steal_pct=None))
    assert (v.status, v.reasons) == ("NA", ["CPU steal not measurable during the run: cannot show it within 1%"])
    v = rules.judge(CELL, _full(steal_pct=None, synthetic=True))
    assert (v.status, v.reasons) == ("OK", ["dry transport: timings and CPU are synthetic, not measurements"])
    v = rules.judge(CELL, _full(lost=3, duplicated=None))
    assert (v.status, v.reasons) == ("FAILED_LOSS", ["consumer saw 3 lost and 0 duplicated records"])
    assert rules.judge(CELL, _full(lost=None, duplicated=2)).reasons == ["consumer saw 0 lost and 2 duplicated records"]
    v = rules.judge(CELL, _full(delivery_errors=4))
    assert (v.status, v.reasons) == ("FAILED_LOSS", ["4 delivery errors"])
    v = rules.judge(CELL, _full(topic_compression_readback="zstd"))
    assert (v.status, v.reasons) == (
        "FAILED_TOPIC_CONFIG",
        ["topic compression.type reads back 'zstd', the plan says 'lz4'"],
    )
    assert rules.judge(CELL, _full(topic_compression_readback=None)).status == "OK"
    both = rules.judge(CELL, _full(steal_pct=9.0, delivery_errors=1))
    assert both.status == "INVALID" and len(both.reasons) == 2


def test_failed_rows_one_per_experiment() -> None:
    rows = rules.failed_rows(CELL, 4, 800.0, "the broker went away", attempt=2)
    assert sorted(rows) == ["A", "B", "C", "D", "E", "F"]
    d = rows["D"][0]
    assert d == {
        **PARAMS,
        "rep": 4,
        "attempt": 2,
        "target_rate_msgs": 800.0,
        "role": "all",
        "status": "FAILED_RUN",
        "reason": "the broker went away",
    }
    assert "role" not in rows["A"][0] and rows["C"][0]["status"] == "FAILED_RUN"


def test_saturation_reasons_at_each_bound() -> None:
    sat = a_latency.saturation_reasons
    quiet = _full(latency_delay=_lat(19_998), latency_phases={"queue_p50_us": 27_000.0})
    assert sat(quiet, 7.0, 20.0) == []  # delay p99 20,000 µs and queue 27 − 7 = 20 ms: at the bound, not above
    late = _full(latency_delay=_lat(24_998), latency_phases={"queue_p50_us": 27_500.0})
    assert sat(late, 7.0, 20.0) == [
        "saturated: send delay p99 25.0 ms > 20 ms (sends left behind the schedule)",
        "saturated: queue wait p50 27.5 ms − linger.ms 7 = 20.5 ms > 20 ms (batches waited for the sender)",
    ]
    small = _full(latency_delay=_lat(598), latency_phases={}, latency_corrected=_lat(300), latency_e2e=_lat(999 + 300))
    assert sat(small, 7.0, 0.5) == [
        "saturated: send delay p99 0.600 ms > 0.5 ms (sends left behind the schedule)",
        "saturated: e2e p50 − corrected p50 = 0.999 ms > 0.5 ms (the consumer fell behind)",
    ]
    behind = _full(latency_delay=_lat(0), latency_corrected=_lat(300), latency_e2e=_lat(1300))
    assert sat(behind, 7.0, 0.999) == [
        "saturated: e2e p50 − corrected p50 = 1.0 ms > 0.999 ms (the consumer fell behind)"
    ]
    assert sat(_full(latency_delay=None, latency_e2e=None, latency_phases={}), 7.0, 0.0) == []
    (a,) = rules.rows_for(CELL, 2, late, CORPUS, 6.5, 3, saturation_bound_ms=20.0)["A"]
    assert a["status"] == "SATURATED" and a["reason"] == "; ".join(sat(late, 7.0, 20.0))
    (a,) = rules.rows_for(CELL, 2, late, CORPUS, 6.5, 3, saturation_bound_ms=30.0)["A"]
    assert (a["status"], a["reason"]) == ("OK", "")
    (a,) = _rows(_full(latency_delay=None))["A"]
    assert a["status"] == "NA"
    assert (
        a["reason"] == "send delay not measured: the saturation check cannot show the fixed rate was held unsaturated"
    )
    (a,) = _rows(_full(latency_delay=None, target_rate=None, achieved_rate=800.0))["A"]
    assert a["status"] == "OK"  # not a fixed-rate run: nothing to check
    (a,) = _rows(_full(latency_corrected=None, latency_delay=None))["A"]
    assert a["status"] == "NA" and "send delay not measured" not in a["reason"]


# --------------------------------------------------------------------------- the console's headline tables

from kbench.engine import verdict  # noqa: E402


def _lines(text: str) -> list[str]:
    return [x.rstrip() for x in text.splitlines()]


def _aligned(text: str) -> None:
    for block in text.split("\n\n"):
        rows = [x for x in block.splitlines() if not x.startswith("verdicts on")]
        assert len({len(x) for x in rows}) == 1, rows  # every row padded to the columns' widths


def test_headline_of_c_medians_ranges_exclusions_and_verdicts() -> None:
    def r(cell: str, codec: str, ratio: str, st: str = "OK") -> dict[str, str]:
        return {"cell_id": cell, "codec": codec, "ratio": ratio, "status": st, "corpus": "json", "batch_ratio": "NA"}

    rows = [
        r("c1", "zstd:3", "4.0"),
        r("c1", "zstd:3", "5.5"),
        r("c1", "zstd:3", "4.5"),
        r("c1", "zstd:3", "9", "INVALID"),
        r("c2", "none", "1.0"),
        r("c2", "none", "1.0"),
        r("c2", "none", "NA"),
        r("c3", "lz4", "1234.5"),
        r("c3", "lz4", "0.01234"),
    ]
    text = verdict.headline("C", rows)
    assert _lines(text) == [
        "cell  codec   n             ratio (x)           batch_ratio (x)  corpus_entropy_bits (bits/B)",
        "----  ------  ------------  ------------------  ---------------  ----------------------------",
        "c1    zstd:3  3 (+1 excl.)  4.50 [4.00–5.50]    NA               NA",
        "c2    none    2 (+1 excl.)  1.00 [1.00–1.00]    NA               NA",
        "c3    lz4     2             617 [0.0123–1,234]  NA               NA",
        "",
        "verdicts on ratio (effect: b − a, Hodges–Lehmann shift [95 % interval], exact test, Holm-corrected p):",
        "cell  vs cell  a       b     verdict                                                               effect, p, n                             seed rule",
        "----  -------  ------  ----  --------------------------------------------------------------------  ---------------------------------------  --------------",
        "c1    c2       zstd:3  none  too few repetitions to tell (n = 3/2: a 5 % test needs ≥ 4 per cell)  −3.5 x [−4.5, −3], p = 0.60, n = 3/2     ranges apart",
        "c1    c3       zstd:3  lz4   too few repetitions to tell (n = 3/2: a 5 % test needs ≥ 4 per cell)  613 x [−5.49, 1,230], p = 1.00, n = 3/2  ranges overlap",
        "c2    c3       none    lz4   too few repetitions to tell (n = 2: a 5 % test needs ≥ 4 per cell)    616 x [−0.99, 1,234], p = 1.00, n = 2/2  ranges overlap",
    ]
    _aligned(text)
    assert verdict.format_table(["a", "bb"], []) == "a  bb\n-  --"


def test_headline_of_f_and_d_flags_roles_and_the_lower_is_better_side() -> None:
    def f(cell: str, tc: str, cpu: str, rec: str) -> dict[str, str]:
        return {
            "cell_id": cell,
            "codec": "lz4",
            "topic_compression": tc,
            "broker_cpu_s_per_gb": cpu,
            "recompressed": rec,
            "status": "OK",
        }

    rows = [
        f("f1", "producer", "2.0", "false"),
        f("f1", "producer", "2.5", "false"),
        f("f2", "zstd", "5.0", "true"),
        f("f2", "zstd", "6.0", "false"),
        f("f3", "gzip", "NA", "NA"),
    ]
    text = verdict.headline("F", rows)
    assert _lines(text) == [
        "cell  topic_compression  n             broker_cpu_s_per_gb (CPU-s/GB)  recompressed",
        "----  -----------------  ------------  ------------------------------  ------------",
        "f1    producer           2             2.25 [2.00–2.50]                false",
        "f2    zstd               2             5.50 [5.00–6.00]                true (mixed)",
        "f3    gzip               0 (+1 excl.)  NA                              NA",
        "",
        "verdicts on broker_cpu_s_per_gb (effect: b − a, Hodges–Lehmann shift [95 % interval], exact test, Holm-corrected p):",
        "cell  vs cell  a         b     verdict                                                             effect, p, n                               seed rule",
        "----  -------  --------  ----  ------------------------------------------------------------------  -----------------------------------------  ------------",
        "f1    f2       producer  zstd  too few repetitions to tell (n = 2: a 5 % test needs ≥ 4 per cell)  3.25 CPU-s/GB [2.5, 4], p = 0.33, n = 2/2  ranges apart",
        "f1    f3       producer  gzip  not comparable (no OK repetitions)                                  —                                          —",
        "f2    f3       zstd      gzip  not comparable (no OK repetitions)                                  —                                          —",
    ]
    _aligned(text)
    text = verdict.headline("F", [f("f1", "producer", "2.0", "true"), f("f1", "producer", "2.0", "true")])
    assert _lines(text)[2] == "f1    lz4    2  2.00 [2.00–2.00]                true" and "verdicts" not in text

    def d(cell: str, codec: str, role: str, cpu: str) -> dict[str, str]:
        return {
            "cell_id": cell,
            "codec": codec,
            "role": role,
            "cpu_s_per_gb": cpu,
            "usr_pct": "10",
            "sys_pct": "0.5",
            "status": "OK",
        }

    rows = [
        d("d1", "none", "producer", "1.0"),
        d("d1", "none", "producer", "1.2"),
        d("d2", "zstd:3", "producer", "3.0"),
        d("d2", "zstd:3", "producer", "3.5"),
        d("d1", "none", "broker-0", "2.0"),
        d("d1", "none", "broker-0", "2.1"),
    ]
    text = verdict.headline("D", rows)
    assert _lines(text) == [
        "cell  codec   role      n  cpu_s_per_gb (CPU-s/GB)  usr_pct (%)          sys_pct (%)",
        "----  ------  --------  -  -----------------------  -------------------  -------------",
        "d1    none    broker-0  2  2.05 [2.00–2.10]         10.00 [10.00–10.00]  0.5 [0.5–0.5]",
        "d1    none    producer  2  1.10 [1.00–1.20]         10.00 [10.00–10.00]  0.5 [0.5–0.5]",
        "d2    zstd:3  producer  2  3.25 [3.00–3.50]         10.00 [10.00–10.00]  0.5 [0.5–0.5]",
        "",
        "verdicts on cpu_s_per_gb (effect: b − a, Hodges–Lehmann shift [95 % interval], exact test, Holm-corrected p):",
        "cell  vs cell  a              b                verdict                                                             effect, p, n                                 seed rule",
        "----  -------  -------------  ---------------  ------------------------------------------------------------------  -------------------------------------------  ------------",
        "d1    d2       none/producer  zstd:3/producer  too few repetitions to tell (n = 2: a 5 % test needs ≥ 4 per cell)  2.15 CPU-s/GB [1.8, 2.5], p = 0.33, n = 2/2  ranges apart",
    ]
    _aligned(text)


# --------------------------------------------------------------------------- procstat's arithmetic

from kbench.kafka import procstat  # noqa: E402


def _sys(total: float, steal: float, iowait: float = 0.0) -> procstat.SystemCpu:
    return procstat.SystemCpu(total - steal - iowait, 0.0, 0.0, 0.0, iowait, 0.0, 0.0, steal, total)


def test_steal_and_system_counters() -> None:
    assert procstat.steal_pct(_sys(100.0, 1.0), _sys(300.0, 5.0)) == 2.0
    assert procstat.steal_pct(None, _sys(1.0, 0.0)) is None and procstat.steal_pct(_sys(1.0, 0.0), None) is None
    assert procstat.steal_pct(_sys(100.0, 1.0), _sys(100.0, 1.0)) is None  # no CPU time passed
    text = "intr 5\ncpu  100 20 30 400 50 6 7 8 9 10\ncpu0 1 2 3 4 5 6 7 8\n"
    s = procstat.parse_system(text, clk_tck=10.0)
    assert s == procstat.SystemCpu(10.0, 2.0, 3.0, 40.0, 5.0, 0.6, 0.7, 0.8, total=62.1)
    assert procstat.parse_system(text) == procstat.SystemCpu(1.0, 0.2, 0.3, 4.0, 0.5, 0.06, 0.07, 0.08, total=6.21)
    assert (
        procstat.parse_system("cpu  1 2 3 4 5 6 7\n") is None
        and procstat.parse_system("cpu  1 2 x 4 5 6 7 8\n") is None
    )
    assert procstat.parse_system("cpu0 1 2 3 4 5 6 7 8\n") is None and procstat.parse_system("") is None


def test_injected_steal_advances_to_its_figure() -> None:
    f = procstat.FixedSteal(2.5)
    a, b = f(), f()
    assert a is not None and b is not None and a.total == 1000.0 and b.total == 2000.0
    assert (a.steal, a.user) == (25.0, 975.0) and procstat.steal_pct(a, b) == 2.5 and f.describe() == "injected: 2.5%"
    none = procstat.FixedSteal(None)
    assert none() is None and none.describe() == "injected: not measurable"
    env = procstat.INJECT_ENV
    assert env == "KBENCH_INJECT_STEAL_PCT"
    assert procstat.injected_steal({}) is None and procstat.injected_steal({env: ""}) is None
    assert procstat.injected_steal({env: "None"}) == procstat.FixedSteal(None)
    assert procstat.injected_steal({env: "1.5"}) == procstat.FixedSteal(1.5)
    with pytest.raises(ValueError) as e:
        procstat.injected_steal({env: "lots"})
    assert str(e.value) == "KBENCH_INJECT_STEAL_PCT='lots' is not a number; give a percentage or 'none'"


def test_per_process_deltas() -> None:
    p = procstat.ProcCpu
    a = procstat.Snapshot(
        0,
        _sys(100.0, 0.0),
        (p(1, None, "a", 1.0, 2.0), p(2, None, "b", 1.0, 1.0), p(3, 7, "c", None, None), p(4, None, "d", 5.0, 5.0)),
    )
    b = procstat.Snapshot(
        9, _sys(200.0, 0.0, 10.0), (p(1, None, "a2", 1.5, 2.25), p(2, None, "b", 0.5, 1.0), p(3, 7, "c", 1.0, 1.0))
    )
    ds = procstat.delta(a, b)
    assert [(d.pid, d.tid, d.comm, d.user_s, d.sys_s, d.status) for d in ds] == [
        (1, None, "a2", 0.5, 0.25, "OK"),
        (2, None, "b", -0.5, 0.0, "NEGATIVE"),
        (3, 7, "c", None, None, "NA"),
        (4, None, "d", None, None, "NA"),  # gone at the end
    ]
    assert ds[0].total_s == 0.75 and ds[2].total_s is None
    assert b.get(3, 7) is b.procs[2] and b.get(3) is None and b.get(9) is None


# --------------------------------------------------------------------------- merge and D's compare frame

from kbench.kafka import merge  # noqa: E402
from kbench.kafka.drivers import Histogram  # noqa: E402


def _h(*values: int) -> dict[str, object]:
    import base64

    h = Histogram()
    for v in values:
        h.record(v)
    return {"encoded": base64.b64encode(h.encode()).decode()}


def test_merge_producers_every_field() -> None:
    a = {"sent": 3, "send_seconds": None, "client_errors": {"x": 1}, "corrected": _h(1000, 2000), "service": None}
    b = {"sent": 4, "send_seconds": 0.5, "client_errors": {"x": 2, "y": 1}, "corrected": _h(3000)}
    m = merge.merge_producers([a, b])
    assert m["sent"] == 7 and m["delivered"] == 0 and m["send_seconds"] == 0.5
    assert m["client_errors"] == {"x": 3, "y": 1} and m["delivery_errors"] == {}
    assert m["corrected"]["count"] == 3 and m["service"] is None and m["delay"] is None
    assert merge.merge_producers([{"sent": 1}])["send_seconds"] == 0.0
    for fn, what in ((merge.merge_producers, "producer"), (merge.merge_consumers, "consumer")):
        with pytest.raises(ValueError) as e:
            fn([])
        assert str(e.value) == f"no {what} results to merge"


def test_d_compare_frame_totals_usr_and_sys() -> None:
    import pandas as pd

    from kbench.experiments import d_cpu

    df = d_cpu._compare_frame(pd.DataFrame({"usr_pct": [10.0, 1.5], "sys_pct": [5.0, 0.25]}))
    assert list(df["total_pct"]) == [15.0, 1.75]
    assert "total_pct" not in d_cpu._compare_frame(pd.DataFrame({"usr_pct": [1.0]})).columns


def test_failed_rows_default_attempt_and_f_with_idle_brokers() -> None:
    assert rules.failed_rows(CELL, 1, None, "x")["C"][0]["attempt"] == 1
    idle = (
        CpuSample("broker-0", 0.0, 0.0, 4.0, pid=13, window_payload_bytes=5 * 10**8),
        CpuSample("broker-1", 0.0, 0.0, 4.0, pid=14, window_payload_bytes=5 * 10**8),
    )
    (f,) = _rows(_full(cpu=idle))["F"]
    assert (f["broker_usr_pct"], f["broker_sys_pct"], f["broker_cpu_s_per_gb"], f["status"]) == (0.0, 0.0, 0.0, "OK")


def test_edges_of_the_row_rules() -> None:
    sat = a_latency.saturation_reasons
    assert sat(_full(latency_delay=_lat(20_008), latency_phases={}), 7.0, 20.0) != []  # 20,010 µs > 20 ms
    assert sat(_full(latency_delay=_lat(0), latency_phases={"queue_p50_us": 27_010.0}), 7.0, 20.0) != []
    assert sat(_full(latency_delay=_lat(0), latency_phases={"queue_p50_us": 7_900.0}), 7.0, 0.5) == [
        "saturated: queue wait p50 7.9 ms − linger.ms 7 = 0.900 ms > 0.5 ms (batches waited for the sender)"
    ]
    assert sat(_full(latency_delay=_lat(0), latency_phases={}), 7.0, 0.5) == []  # e2e − corrected = 100 µs
    assert sat(_full(latency_delay=_lat(0), latency_phases={}, latency_e2e=_lat(1300)), 7.0, 1.0) == []
    assert sat(_full(latency_delay=_lat(99_998), latency_phases={}), 7.0, 20.0)[0].startswith(
        "saturated: send delay p99 100.0 ms"
    )
    (b,) = _rows(_full(achieved_rate=0.0, target_rate=None))["B"]
    assert math.isnan(b["payload_mb_per_s"])
    (b,) = _rows(_full(achieved_rate=0.5, target_rate=None))["B"]
    assert b["payload_mb_per_s"] == 4_100_000_000 / (820 / 0.5) / 1e6
    assert rules.rows_for(CELL, 2, _full(), CORPUS, 6.3, 3)["C"][0]["corpus_near_random"] is True
    cpu = (
        CpuSample("producer", 3.0, 1.0, 8.0, pid=11, loadgen_s=1.5, window_payload_bytes=2 * 10**9),
        CpuSample("worker-1", 1.0, 1.0, 8.0, pid=None, window_payload_bytes=2 * 10**9),
    )
    d = {r["role"]: r for r in _rows(_full(cpu=cpu))["D"]}
    assert d["producer"]["loadgen_cpu_s_per_gb"] is None and d["producer"]["loadgen_cpu_s"] is None
    assert (d["worker-1"]["wire_bytes"], d["worker-1"]["wire_source"]) == (None, "")
    assert rowkit.cpu_role(CpuSample("p", 1.0, 1.0, 2.0, total_s=2.0)) == (50.0, 50.0, 2.0, None, "")
    assert rowkit.base(CELL, 1, None, None)["attempt"] == 1
    assert verdict._fmt(None) == "NA" and verdict._fmt(100.0) == "100" and verdict._fmt(99.5) == "99.50"
    assert merge.split_count(5, 1) == [(0, 5)] and merge.split_count(5, 2) == [(0, 3), (3, 2)]
    with pytest.raises(ValueError) as e:
        merge.split_count(5, 0)
    assert str(e.value) == "parts must be >= 1"
