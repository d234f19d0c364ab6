"""Oracle for ``kbench advise``'s cost model: every term of one priced candidate against a hand
calculation written out here with round numbers (docs/advise.md, "Cost model").

The batching shape and the codec speeds are given (not simulated or measured), so each figure
below is arithmetic a reader can check on paper:

- workload: 10,000 records/s of 1,000 bytes = 10 MB/s = 0.01 GB/s of payload, RF 3, retention
  24 h, one consumer group;
- shape: stored = 0.25 x payload (ratio 4), produced = 0.26 x payload, batches of 64 KiB raw;
- codec: zstd:3 at 500 MB/s compress with a new context per batch (the producer's; M's reused-context
  figure, 800, must not be used), 1,000 MB/s decompress (2 and 1 CPU-s per GB);
- prices: the defaults (``Prices()``), 730 hours a month.

Exact to 1e-9 relative (floating point only): the model is arithmetic on these inputs.
"""

from __future__ import annotations

import dataclasses

import pytest

from kbench.model import advise as adv
from kbench.model.codecs import parse_spec
from kbench.model.mtable import MTable

REL = 1e-9
RAW = 64 << 10  # raw bytes per batch


def shape(stored: float = 0.25, produced: float = 0.26) -> adv.Shape:
    # four records' waits (ms) and the raw bytes of the batch each sits in
    return adv.Shape(
        stored_per_payload=stored,
        produced_per_payload=produced,
        raw_batch_p50=float(RAW),
        records_per_batch_p50=65.0,
        batches_per_s=150.0,
        wait_ms=(1.0, 2.0, 3.0, 4.0),
        batch_raw_by_record=(float(RAW),) * 4,
        steady=True,
    )


#: M's reused-context compress figure (800) is not the producer's: it compresses each batch with a
#: new context (500), the figure every hand calculation below uses
M = MTable(speeds={("zstd:3", RAW): (800.0, 1000.0)}, fresh={("zstd:3", RAW): 500.0})
WORK = adv.Workload(rate=10_000, partitions=6, replication_factor=3, retention_hours=24.0)


def priced(
    spec: str = "zstd:3", work: adv.Workload = WORK, prices: adv.Prices | None = None, sh: adv.Shape | None = None
) -> adv.Candidate:
    return adv.price(parse_spec(spec), RAW, 5.0, sh or shape(), 10_000 * 1_000.0, work, prices or adv.Prices(), M)


def test_the_default_prices_the_hand_calculation_uses() -> None:
    p = adv.Prices()
    assert (p.producer_cpu_us_per_record, p.broker_cpu_us_per_record, p.broker_cpu_s_per_gb) == (7.0, 19.0, 1.0)
    assert (p.consumer_cpu_us_per_record, p.consumer_groups) == (1.2, 1)
    assert (p.cross_zone_produce, p.cross_zone_replication, p.cross_zone_consume) == (2 / 3, 1.0, 2 / 3)
    assert (p.core_hour, p.network_per_gb, p.storage_gb_month) == (0.04, 0.02, 0.08)
    assert adv.HOURS_PER_MONTH == 730.0


def test_every_cost_term_of_zstd_against_the_hand_calculation() -> None:
    c = priced()
    assert c.ratio == pytest.approx(4.0, rel=REL)
    # producer: 10,000 x 7 us = 0.07 cores; compressing 0.01 GB/s at 2 s/GB = 0.02 cores
    assert c.producer_cores == pytest.approx(0.07 + 0.02, rel=REL)
    # the Java client is priced at M's reused-context figure: 0.01 GB/s at 1.25 s/GB
    java = priced(work=dataclasses.replace(WORK, client="java"))
    assert java.producer_cores == pytest.approx(0.07 + 0.0125, rel=REL) and java.compress_mb_s == 800.0
    # broker: the leader decompresses 0.01 GB/s at 1 s/GB = 0.01; 3 replicas x 10,000 x 19 us =
    # 0.57; 3 replicas x 0.0025 GB/s stored x 1 s/GB = 0.0075
    assert c.broker_cores == pytest.approx(0.01 + 0.57 + 0.0075, rel=REL)
    # consumer: 10,000 x 1.2 us = 0.012; decompressing 0.01 GB/s at 1 s/GB = 0.01
    assert c.consumer_cores == pytest.approx(0.012 + 0.01, rel=REL)
    # CPU $: 0.6995 cores x 730 h x 0.04 $
    assert c.cpu_usd_month == pytest.approx(0.6995 * 730 * 0.04, rel=REL)
    # network GB/s crossing zones: produce 0.0026 x 2/3, replication 0.0025 x (3 - 1) x 1,
    # consume 0.0025 x 1 group x 2/3 = 0.0084 GB/s
    net_gbps = 0.0026 * 2 / 3 + 0.0025 * 2 + 0.0025 * 2 / 3
    assert net_gbps == pytest.approx(0.0084, rel=1e-12)
    assert c.network_gb_month == pytest.approx(0.0084 * 730 * 3600, rel=REL)
    assert c.network_usd_month == pytest.approx(0.0084 * 730 * 3600 * 0.02, rel=REL)
    # storage: 0.0025 GB/s x 24 h x 3600 s x 3 replicas = 648 GB, at 0.08 $/GB-month
    assert c.stored_gb == pytest.approx(648.0, rel=REL)
    assert c.storage_usd_month == pytest.approx(648.0 * 0.08, rel=REL)
    assert c.total_usd_month == pytest.approx(0.6995 * 730 * 0.04 + 0.0084 * 730 * 3600 * 0.02 + 648.0 * 0.08, rel=REL)
    # latency: a 64 KiB batch compresses in 65,536 / 500e6 s = 0.131072 ms and decompresses in
    # 0.065536 ms; the p99 of four records is the slowest: 4 ms of wait + both
    assert c.compress_ms_p99 == pytest.approx(0.131072, rel=REL)
    assert c.decompress_ms_p99 == pytest.approx(0.065536, rel=REL)
    assert c.added_p99_ms == pytest.approx(4.0 + 0.131072 + 0.065536, rel=REL)
    assert c.wait_p50_ms == 3.0 and c.wait_p99_ms == 4.0


def test_none_costs_no_compression_anywhere() -> None:
    c = priced("none", sh=shape(stored=1.02, produced=1.03))
    assert c.producer_cores == pytest.approx(0.07, rel=REL)
    assert c.broker_cores == pytest.approx(0.57 + 3 * 0.0102, rel=REL)  # no decompression on the leader
    assert c.consumer_cores == pytest.approx(0.012, rel=REL)
    assert c.stored_gb == pytest.approx(0.0102 * 24 * 3600 * 3, rel=REL)
    assert c.added_p99_ms == pytest.approx(4.0, rel=REL)


def test_replication_factor_and_retention_scale_what_they_must() -> None:
    one = priced(work=adv.Workload(rate=10_000, partitions=6, replication_factor=1, retention_hours=24.0))
    # RF 1: one replica stored, no replication traffic, broker per-replica work once
    assert one.stored_gb == pytest.approx(216.0, rel=REL)
    assert one.broker_cores == pytest.approx(0.01 + 0.19 + 0.0025, rel=REL)
    assert one.network_gb_month == pytest.approx((0.0026 * 2 / 3 + 0.0025 * 2 / 3) * 730 * 3600, rel=REL)
    # the producer and consumer do not depend on RF
    three = priced()
    assert (one.producer_cores, one.consumer_cores) == (three.producer_cores, three.consumer_cores)
    week = priced(work=adv.Workload(rate=10_000, partitions=6, replication_factor=3, retention_hours=168.0))
    assert week.stored_gb == pytest.approx(648.0 * 7, rel=REL)
    assert week.storage_usd_month == pytest.approx(648.0 * 7 * 0.08, rel=REL)
    assert week.cpu_usd_month == three.cpu_usd_month and week.network_usd_month == three.network_usd_month


def test_consumer_groups_and_prices_enter_once_each() -> None:
    two = priced(prices=adv.Prices(consumer_groups=2, core_hour=0.10))
    assert two.consumer_cores == pytest.approx(2 * (0.012 + 0.01), rel=REL)
    assert two.cpu_usd_month == pytest.approx((0.09 + 0.5875 + 0.044) * 730 * 0.10, rel=REL)
    net = 0.0026 * 2 / 3 + 0.0025 * 2 + 0.0025 * 2 * 2 / 3
    assert two.network_gb_month == pytest.approx(net * 730 * 3600, rel=REL)


def test_non_unit_prices_percentiles_and_the_budget_boundary() -> None:
    """Every coefficient away from 1 (so a product cannot pass for a quotient), 200 records (so
    the p99 is not the maximum), and a p99 budget exactly at the candidate's added p99."""
    waits = tuple(float(i) for i in range(200))  # 0..199 ms
    raws = tuple(float(RAW) if i < 199 else float(2 * RAW) for i in range(200))  # the last in a 128 KiB batch
    sh = adv.Shape(0.25, 0.26, float(RAW), 65.0, 150.0, waits, raws, False)
    m = MTable(speeds={("zstd:3", RAW): (800.0, 1000.0)}, fresh={("zstd:3", RAW): 500.0})
    prices = adv.Prices(broker_cpu_s_per_gb=2.0, cross_zone_replication=0.5, cross_zone_produce=0.25)
    c = adv.price(parse_spec("zstd:3"), RAW, 5.0, sh, 10_000 * 1_000.0, WORK, prices, m)
    # the candidate says what it is
    assert (c.codec, c.level, c.batch_size, c.linger_ms, c.steady) == ("zstd", 3, RAW, 5.0, False)
    assert (c.stored_per_payload, c.produced_per_payload, c.raw_batch_p50) == (0.25, 0.26, float(RAW))
    assert (c.records_per_batch_p50, c.compress_mb_s, c.decompress_mb_s) == (65.0, 500.0, 1000.0)
    # broker: 0.01 (leader decompression) + 0.57 + 3 replicas x 0.0025 GB/s x 2 s/GB
    assert c.broker_cores == pytest.approx(0.01 + 0.57 + 0.015, rel=REL)
    # network: produce 0.0026 x 1/4, replication 0.0025 x 2 x 1/2, consume 0.0025 x 2/3
    assert c.network_gb_month == pytest.approx((0.0026 / 4 + 0.0025 + 0.0025 * 2 / 3) * 730 * 3600, rel=REL)
    # p99 of 200 values is the 199th smallest (index 198), not the largest
    assert c.wait_p99_ms == 198.0 and c.wait_p50_ms == 100.0
    small = RAW / 500e6 * 1e3 + RAW / 1000e6 * 1e3  # a 64 KiB batch: compress + decompress, ms
    assert c.compress_ms_p99 == pytest.approx(RAW / 500e6 * 1e3, rel=REL)  # index 198 sits in a 64 KiB batch
    assert c.decompress_ms_p99 == pytest.approx(RAW / 1000e6 * 1e3, rel=REL)
    assert c.added_p99_ms == pytest.approx(198.0 + small, rel=REL)  # not the maximum (199 ms + a 128 KiB batch)
    assert c.within_budget is True  # no budget
    at = adv.price(
        parse_spec("zstd:3"),
        RAW,
        5.0,
        sh,
        1e7,
        adv.Workload(10_000, 6, 3, 24.0, p99_budget_ms=c.added_p99_ms),
        prices,
        m,
    )
    assert at.within_budget is True  # the budget is inclusive
    under = adv.Workload(10_000, 6, 3, 24.0, p99_budget_ms=c.added_p99_ms * 0.999)
    assert adv.price(parse_spec("zstd:3"), RAW, 5.0, sh, 1e7, under, prices, m).within_budget is False


def test_a_shape_without_records_adds_no_wait() -> None:
    empty = adv.Shape(0.25, 0.26, float(RAW), 0.0, 0.0, (), (), False)
    c = priced(sh=empty)
    assert (c.wait_p50_ms, c.wait_p99_ms, c.added_p99_ms, c.compress_ms_p99) == (0.0, 0.0, 0.0, 0.0)
