"""kbench advise: the recommendation moves the way the cost model says it must."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kbench.model import advise as adv
from kbench.model import corpus as corpus_mod
from kbench.model.codecs import parse_spec

WORK = adv.Workload(rate=20_000, partitions=8, replication_factor=3, client="librdkafka")
SPECS = [parse_spec(s) for s in ("none", "lz4", "zstd:1", "zstd:9", "gzip:9")]


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """One model sweep and one M table, re-priced by every test."""
    c = corpus_mod.generate("json", 1 << 20, seed=3)
    cache = tmp_path_factory.mktemp("mcache")
    m = adv.measure_m(c, SPECS, cache_dir=cache)
    shapes = adv.sweep_shapes(c, WORK, SPECS, [16 << 10, 256 << 10], [0.0, 5.0, 50.0])
    return c, m, shapes, cache


def _advise(swept, prices: adv.Prices, work: adv.Workload = WORK) -> adv.Advice:
    c, m, shapes, _ = swept
    return adv.advise(c, work, prices, specs=SPECS, shapes=shapes, m=m)


def test_m_cache_is_reused(swept):
    c, _, _, cache = swept
    again = adv.measure_m(c, SPECS, cache_dir=cache)
    assert again.measured == 0 and again.speeds


def test_expensive_network_buys_ratio_expensive_cpu_buys_a_cheaper_codec(swept):
    base = _advise(swept, adv.Prices())
    net = _advise(swept, adv.Prices(network_per_gb=2.0, core_hour=0.001))
    cpu = _advise(swept, adv.Prices(network_per_gb=1e-6, storage_gb_month=1e-6, core_hour=50.0))
    # Network expensive: the best ratio money can buy here, at least the default's.
    assert net.best.ratio >= base.best.ratio
    assert net.best.ratio >= max(c.ratio for c in net.candidates) * 0.98
    # CPU expensive: a codec that costs less CPU than the network-driven choice.
    assert cpu.best.cores < net.best.cores
    assert cpu.best.ratio < net.best.ratio
    assert cpu.best.codec in ("none", "lz4", "snappy")


def test_latency_budget_excludes_long_linger(swept):
    free = _advise(swept, adv.Prices())
    assert free.best.linger_ms == 50.0  # network dominates: the longest linger packs the most per batch
    tight = _advise(swept, adv.Prices(), replace(WORK, p99_budget_ms=15.0))
    assert tight.best.linger_ms < 50.0
    assert tight.best.added_p99_ms <= 15.0
    assert all(c.added_p99_ms > 15.0 for c in tight.candidates if not c.within_budget)
    assert any(c.linger_ms == 50.0 and not c.within_budget for c in tight.candidates)


def test_front_is_pareto_and_matrix_has_every_seed_row(swept):
    a = _advise(swept, adv.Prices())
    for f in a.front:
        assert not any(o.total_usd_month < f.total_usd_month and o.added_p99_ms < f.added_p99_ms for o in a.candidates)
    rows = adv.decision_matrix(a)
    assert len(rows) == 5
    assert {r.agrees for r in rows} <= {"yes", "no", "n/a"}


def test_cost_file_errors_name_the_key(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text("network_per_gb = 0.05\ncore_hours = 1\n")
    with pytest.raises(adv.CostError, match="unknown key 'core_hours'"):
        adv.load_prices(p)
    p.write_text("network_per_gb = 0.05\n")
    assert adv.load_prices(p).network_per_gb == 0.05
