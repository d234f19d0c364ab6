"""The experiments' rules: REJECTED, saturated flag, CPU NA / FAILED_CPU_REGRESSED, steal INVALID."""

from __future__ import annotations

import dataclasses

import pytest
from engine_fakes import lat

from kbench.engine import rules, store
from kbench.engine.plan import Cell
from kbench.engine.transports.base import CpuSample, RunResult
from kbench.experiments import registry
from kbench.model import corpus

CORPUS = corpus.generate("json", 5000)


def cell(exps: tuple[str, ...], rate: float | str = 1000.0, codec: str = "zstd:3", tc: str = "producer") -> Cell:
    return Cell("x-000", "x", exps, codec, "json", 16384, 5.0, 1, "all", rate, tc)


def result(target: float | None = 1000.0, achieved: float = 1000.0, **kw: object) -> RunResult:
    base = dict(
        messages_sent=1000,
        messages_acked=1000,
        payload_bytes=10**9,
        elapsed_s=1.0,
        target_rate=target,
        achieved_rate=achieved,
        latency_service=lat(10),
        latency_delay=lat(1),
        latency_corrected=lat(12),
        latency_e2e=lat(20),
        consumed=1000,
        lost=0,
        duplicated=0,
        cpu=(
            CpuSample("producer", 2.0, 1.0, 10.0, pid=1, window_payload_bytes=10**9),
            CpuSample("broker-0", 1.0, 0.5, 10.0, pid=2, window_payload_bytes=10**9),
        ),
        steal_pct=0.0,
        producer_wire_bytes=10**8,
        consumer_wire_bytes=10**8,
        stored_bytes=2 * 10**8,
        stored_batches=100,
        stored_codecs=("zstd",),
        topic_compression_readback="producer",
    )
    base.update(kw)
    return RunResult(**base)  # type: ignore[arg-type]


def rows(c: Cell, r: RunResult, rf: int = 1) -> dict[str, list[dict[str, object]]]:
    out = rules.rows_for(c, 1, r, CORPUS, CORPUS.entropy, rf)
    for exp, rs in out.items():
        for row in rs:
            assert set(row) <= set(registry.columns(exp)), set(row) - set(registry.columns(exp))
    return out


@pytest.mark.parametrize(
    "achieved,status",
    [(1000.0, "OK"), (980.5, "OK"), (1019.0, "OK"), (979.0, "REJECTED"), (900.0, "REJECTED"), (1030.0, "REJECTED")],
)
def test_rate_off_by_more_than_2_percent_is_rejected(achieved: float, status: str) -> None:
    out = rows(cell(("A", "C", "D")), result(achieved=achieved))
    for exp in ("A", "C", "D"):
        for r in out[exp]:
            assert r["status"] == status
    if status == "REJECTED":
        reason = str(out["A"][0]["reason"])
        assert "off the target" in reason and "1000.0 msgs/s" in reason


def test_saturated_rows_are_flagged() -> None:
    # 1000 messages delivered at 1000 msgs/s: a 1 s span, 10^9 bytes -> 1000 MB/s; the sends ended
    # after 0.5 s (librdkafka's queue took them), which must not double the figure.
    out = rows(cell(("B",), rate="saturated"), result(target=None, achieved=1000.0, elapsed_s=0.5))
    b = out["B"][0]
    assert b["latency_flag"] == rules.SATURATED_FLAG
    assert b["status"] == "OK" and b["target_rate_msgs"] is None
    assert b["payload_mb_per_s"] == pytest.approx(1000.0)
    assert b["producer_wire_mb_per_s"] == pytest.approx(100.0)


def test_cpu_per_role_normalised_per_gb() -> None:
    out = rows(cell(("D",)), result(), rf=3)
    d = {r["role"]: r for r in out["D"]}
    assert d["producer"]["cpu_s_per_gb"] == pytest.approx(3.0)
    assert d["producer"]["usr_pct"] == pytest.approx(20.0) and d["producer"]["sys_pct"] == pytest.approx(10.0)
    assert d["producer"]["wire_bytes"] == 10**8
    r2 = rows(
        cell(("D",)),
        dataclasses.replace(
            result(), consumer_wire_bytes=None, cpu=(CpuSample("consumer", 1.0, 1.0, 10.0, window_payload_bytes=10**9),)
        ),
    )["D"][0]
    assert r2["wire_bytes"] == 2 * 10**8 and "stored bytes" in str(r2["wire_source"])
    assert d["broker-0"]["wire_bytes"] == 2 * 10**8 * 2  # stored x (RF-1)
    assert all(r["status"] == "OK" for r in out["D"])


def test_cpu_s_per_gb_divides_by_the_payload_of_the_roles_own_window() -> None:
    # the run carried 1 GB, but each role's CPU window saw only part of it: the rules must
    # divide by the window's bytes (producer 0.8 GB, consumer 0.75 GB, broker 0.9 GB)
    r = result(
        cpu=(
            CpuSample("producer", 2.0, 0.4, 8.0, window_payload_bytes=8 * 10**8),
            CpuSample("consumer", 1.0, 0.5, 7.5, window_payload_bytes=75 * 10**7),
            CpuSample("broker-0", 1.5, 0.3, 9.0, window_payload_bytes=9 * 10**8),
        )
    )
    d = {x["role"]: x for x in rows(cell(("D", "F")), r)["D"]}
    assert d["producer"]["cpu_s_per_gb"] == pytest.approx(2.4 / 0.8)
    assert d["consumer"]["cpu_s_per_gb"] == pytest.approx(1.5 / 0.75)
    assert d["broker-0"]["cpu_s_per_gb"] == pytest.approx(1.8 / 0.9)
    assert d["producer"]["payload_gb"] == pytest.approx(0.8) and d["broker-0"]["payload_gb"] == pytest.approx(0.9)
    f = rows(cell(("F",)), r)["F"][0]
    assert f["broker_cpu_s_per_gb"] == pytest.approx(1.8 / 0.9)
    # a role whose window payload was not measured has no CPU-s/GB (NA, with the reason), never the run's
    r2 = result(cpu=(CpuSample("producer", 2.0, 0.4, 8.0),))
    p = rows(cell(("D",)), r2)["D"][0]
    assert p["status"] == "NA" and p["cpu_s_per_gb"] is None and "window not measured" in str(p["reason"])


def test_cpu_s_per_gb_is_the_same_for_two_window_lengths_of_one_steady_run() -> None:
    from kbench.engine.transports.window import Schedule

    # a steady fixed-rate run: 20 s at 5000 msgs/s over the json corpus (records of varied sizes);
    # the producer's CPU grows with time at 0.3 CPU-s per second
    rate, dur, t0 = 5000.0, 20.0, 10**12
    sizes = [len(x) for x in CORPUS.records]
    sched = Schedule.of(sizes, int(rate * dur), int(rate * dur), t0, t0 + int(dur * 1e9), rate)
    assert sched.window_payload(t0) == sched.payload(0, int(rate * dur))
    per_gb = []
    for skip in (1.0, 8.0):
        cpu_s = 0.3 * (dur - skip)
        window = sched.window_payload(t0 + int(skip * 1e9))
        r = result(
            payload_bytes=sched.payload(0, sched.sent),
            cpu=(CpuSample("producer", cpu_s, 0.0, dur - skip, window_payload_bytes=window),),
        )
        per_gb.append(rows(cell(("D",)), r)["D"][0]["cpu_s_per_gb"])
    assert per_gb[0] == pytest.approx(per_gb[1], rel=0.01)
    # dividing by the whole run's payload (the old rule) would differ by the skipped share
    whole = [0.3 * (dur - skip) / (sched.payload(0, sched.sent) / 1e9) for skip in (1.0, 8.0)]
    assert whole[1] / whole[0] == pytest.approx(12 / 19)


def test_steal_limit_is_the_plans() -> None:
    out = rules.rows_for(cell(("A",)), 1, result(steal_pct=5.0), CORPUS, CORPUS.entropy, 1, steal_limit_pct=10.0)
    assert out["A"][0]["status"] == "OK"
    out = rules.rows_for(cell(("A",)), 1, result(steal_pct=5.0), CORPUS, CORPUS.entropy, 1, steal_limit_pct=4.0)
    assert out["A"][0]["status"] == "INVALID" and "CPU steal 5.00% > 4% during the run" in str(out["A"][0]["reason"])
    # steal not measurable (None) never invalidates, but a measuring run cannot be shown within
    # the limit: NA with the reason; the row keeps no steal figure
    out = rows(cell(("A", "D")), result(steal_pct=None))
    assert out["A"][0]["status"] == "NA" and "not measurable" in str(out["A"][0]["reason"])
    assert out["D"][0]["steal_pct"] is None


def test_unreadable_cpu_is_na_never_zero() -> None:
    r = result(
        cpu=(
            CpuSample("producer", 1.0, 1.0, 10.0, window_payload_bytes=10**9),
            CpuSample("broker-0", None, None, 10.0, note="pid vanished", window_payload_bytes=10**9),
        )
    )
    d = {x["role"]: x for x in rows(cell(("D",)), r)["D"]}
    assert d["broker-0"]["status"] == "NA"
    assert d["broker-0"]["cpu_s"] is None and d["broker-0"]["cpu_s_per_gb"] is None
    assert "pid vanished" in str(d["broker-0"]["reason"])
    assert d["producer"]["status"] == "OK"
    assert store.format_value(d["broker-0"]["cpu_s"]) == "NA"


def test_negative_cpu_delta_is_failed_cpu_regressed() -> None:
    r = result(cpu=(CpuSample("consumer", -0.5, 0.1, 10.0, regressed=True),))
    d = rows(cell(("D",)), r)["D"][0]
    assert d["status"] == "FAILED_CPU_REGRESSED"
    assert d["cpu_s"] is None


@pytest.mark.parametrize("steal,status", [(0.5, "OK"), (1.0, "OK"), (1.5, "INVALID")])
def test_steal_above_1_percent_invalidates_the_run(steal: float, status: str) -> None:
    out = rows(cell(("A", "D")), result(steal_pct=steal))
    assert out["A"][0]["status"] == status
    assert all(r["status"] == status for r in out["D"])


def test_invalid_outranks_rejected() -> None:
    out = rows(cell(("A",)), result(achieved=500.0, steal_pct=5.0))
    assert out["A"][0]["status"] == "INVALID"
    assert "off the target" in str(out["A"][0]["reason"]) and "steal" in str(out["A"][0]["reason"])


def test_loss_and_topic_config_mismatch_fail() -> None:
    assert rows(cell(("A",)), result(lost=3))["A"][0]["status"] == "FAILED_LOSS"
    out = rows(cell(("C",), tc="lz4"), result(topic_compression_readback="producer"))
    assert out["C"][0]["status"] == "FAILED_TOPIC_CONFIG"


def test_c_reports_ratio_and_entropy() -> None:
    c = rows(cell(("C",)), result())["C"][0]
    assert c["ratio"] == pytest.approx(5.0)
    assert c["corpus_entropy_bits"] == pytest.approx(CORPUS.entropy)
    assert c["corpus_sha256"] == CORPUS.sha256


@pytest.mark.parametrize(
    "tc,stored,expect", [("producer", ("zstd",), False), ("lz4", ("lz4",), True), ("zstd", ("zstd",), False)]
)
def test_f_detects_recompression_from_stored_codecs(tc: str, stored: tuple[str, ...], expect: bool) -> None:
    f = rows(cell(("F",), tc=tc), result(stored_codecs=stored, topic_compression_readback=tc))["F"][0]
    assert f["recompressed"] is expect
    assert f["broker_cpu_s_per_gb"] == pytest.approx(1.5)


def test_failed_rows_cover_every_experiment() -> None:
    out = rules.failed_rows(cell(("A", "D")), 2, 1000.0, "boom")
    assert set(out) == {"A", "D"} and out["D"][0]["role"] == "all"
    assert all(r[0]["status"] == "FAILED_RUN" for r in out.values())


def test_topic_compression_none_reads_back_as_uncompressed() -> None:
    # the plan's "none" is Kafka's "uncompressed"; either spelling read back is the planned setting
    for got in ("uncompressed", "none"):
        out = rows(cell(("C",), tc="uncompressed"), result(topic_compression_readback=got))
        assert out["C"][0]["status"] == "OK", (got, out["C"][0]["reason"])
    out = rows(cell(("C",), tc="uncompressed"), result(topic_compression_readback="zstd"))
    assert out["C"][0]["status"] == "FAILED_TOPIC_CONFIG"


def test_broker_cpu_from_metrics_and_inferred_stored_codec_are_named() -> None:
    """A remote broker: CPU as usr+sys from its metrics endpoint, counters beside it; stored
    bytes from DescribeLogDirs with an inferred codec, flagged in the reason, status untouched."""
    m = CpuSample(
        "broker-1",
        None,
        None,
        10.0,
        total_s=3.0,
        source="metrics: process_cpu_seconds_total (usr+sys) from http://b1:7071/metrics",
        broker_counters={"bytes_in": 5e8, "bytes_out": 4e8, "produce_conversions": 0.0},
    )
    src = "DescribeLogDirs (Kafka LogDirsCommand); stored codec inferred: topic compression.type=producer stores the producer's codec (zstd)"
    r = result(cpu=(CpuSample("producer", 2.0, 1.0, 10.0, window_payload_bytes=10**9),), stored_source=src)
    r = dataclasses.replace(r, cpu=r.cpu + (dataclasses.replace(m, window_payload_bytes=10**9),))
    out = rows(cell(("C", "D", "F")), r, rf=3)
    d = {x["role"]: x for x in out["D"]}
    b = d["broker-1"]
    assert b["status"] == "OK" and b["cpu_s"] == 3.0 and b["usr_pct"] is None
    assert str(b["cpu_source"]).startswith("metrics: process_cpu_seconds_total")
    assert (b["broker_bytes_in"], b["broker_bytes_out"], b["produce_conversions"]) == (5e8, 4e8, 0.0)
    assert d["producer"]["cpu_source"] == "kbench worker process (/proc/self/stat)"
    c = out["C"][0]
    assert c["status"] == "OK" and c["stored_source"] == src and "stored codec inferred" in str(c["reason"])
    f = out["F"][0]
    assert f["broker_usr_pct"] is None and f["broker_cpu_s_per_gb"] == 3.0 and f["produce_conversions"] == 0.0
    assert f["recompressed"] is False and "inferred" in str(f["reason"])


def test_producer_cpu_splits_load_generator_and_client_library() -> None:
    prod = CpuSample("producer", 2.0, 1.0, 10.0, pid=1, loadgen_s=0.5, client_s=2.5, window_payload_bytes=10**9)
    broker = CpuSample("broker-0", 1.0, 0.5, 10.0, pid=2, window_payload_bytes=10**9)
    out = rows(cell(("D",)), result(cpu=(prod, broker)))
    d = {r["role"]: r for r in out["D"]}
    p = d["producer"]
    assert (p["loadgen_cpu_s"], p["client_cpu_s"], p["cpu_s"]) == (0.5, 2.5, 3.0)
    assert p["loadgen_cpu_s_per_gb"] == pytest.approx(0.5) and p["client_cpu_s_per_gb"] == pytest.approx(2.5)
    assert d["broker-0"]["loadgen_cpu_s"] is None and d["broker-0"]["client_cpu_s_per_gb"] is None
    # an unreadable total leaves the split NA too: parts never stand in for a missing whole
    bad = CpuSample("producer", None, None, 10.0, loadgen_s=0.5, client_s=2.5)
    p2 = rows(cell(("D",)), result(cpu=(bad,)))["D"][0]
    assert p2["status"] == "NA" and p2["loadgen_cpu_s"] is None and p2["client_cpu_s"] is None


def test_every_status_is_explained_once_for_console_report_and_docs() -> None:
    # one table (engine/status.EXPLAIN): the console's cause/fix, the report's threat line and
    # docs/csv-schema.md's meaning all read it; a status added without its explanation fails here
    from pathlib import Path

    from kbench.engine.status import EXPLAIN, Status

    assert set(EXPLAIN) == set(Status)
    for st, e in EXPLAIN.items():
        if st != Status.OK:
            assert e.cause and e.fix and e.excluded, st
    schema = (Path(__file__).resolve().parents[1] / "docs" / "csv-schema.md").read_text()
    for st, e in EXPLAIN.items():
        assert f"| `{st.value}` | {e.meaning} |" in schema, st
