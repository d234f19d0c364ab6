"""``kbench advise`` outside its cost terms (tests/test_oracles_advise.py has those): the batch
shape it reads from a simulation, the Pareto front, the recommendation and its sentence, the
workload and cost-file checks, the corpus it models, the sweep's equivalent batch sizes and the
CSV, each against values worked out here.  Fast (small simulations, no experiment M): these are
the tests the mutation run uses for kbench.model.advise."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import pytest

from kbench.model import advise as adv
from kbench.model import corpus
from kbench.model import simulator as sim
from kbench.model.codecs import CodecSpec, parse_spec
from kbench.model.corpus import Corpus
from kbench.model.mtable import MTable


def _b(records: int, raw: int, produced: int, stored: int, reason: str, t_open: float, t_close: float) -> sim.SimBatch:
    return sim.SimBatch(0, records, raw, produced, "lz4", reason, t_open, t_close, 0, 0, stored, "lz4")


def _res(batches: tuple[sim.SimBatch, ...], payload: int, producer_records: int) -> sim.SimResult:
    st = {r: sim.StageResult(r, 0.0, 1.0, 0, 0, 0, producer_records) for r in sim.ROLES}
    return sim.SimResult(sim.SimConfig(), "c", "", 0.0, payload, 0, 0, 0, 0, 0, 0, st, batches)


def test_shape_of_steady_batches() -> None:
    res = _res(
        (
            _b(2, 1000, 400, 250, "full", 0.0, 4.0),
            _b(4, 3000, 800, 750, "linger", 1.0, 3.0),
            _b(1, 500, 9999, 9999, "flush", 5.0, 5.0),  # flush-closed: not a steady batch
        ),
        payload=3600,  # 0.8 payload bytes per raw byte
        producer_records=7,
    )
    s = adv.shape_of(res, rate=3.5)
    assert s.stored_per_payload == 1000 / 3200 and s.produced_per_payload == 1200 / 3200
    assert s.wait_ms == (0.5, 1.0, 1.5, 2.0, 2.0, 4.0)  # each record's wait: the batch's age when it joined
    assert s.batch_raw_by_record == (3000.0, 3000.0, 3000.0, 1000.0, 3000.0, 1000.0)
    assert s.raw_batch_p50 == 3000.0 and s.records_per_batch_p50 == 4.0
    assert s.batches_per_s == 1.5 and s.steady


def test_shape_of_a_large_batch_and_of_flushes_only() -> None:
    big = adv.shape_of(_res((_b(130, 1300, 650, 650, "linger", 2.0, 15.0),), 1300, 130), rate=130.0)
    assert len(big.wait_ms) == 130  # 65 points (every 2nd record), each weighted 2
    assert (
        big.wait_ms[:2] == pytest.approx((0.2, 0.2), abs=1e-12) and big.wait_ms[-1] == 13.0 and big.wait_ms[-2] == 13.0
    )
    assert big.stored_per_payload == 0.5 and big.batches_per_s == 1.0
    fl = adv.shape_of(_res((_b(3, 300, 100, 100, "flush", 4.0, 1.0),), 600, 3), rate=0.0 + 1.0)
    assert not fl.steady and fl.wait_ms == (0.0, 0.0, 0.0)  # a close before the open waits 0
    assert fl.stored_per_payload == 100 / 600 and fl.records_per_batch_p50 == 3.0 and fl.batches_per_s == 1 / 3


def test_records_needed_and_sizes() -> None:
    w = adv.Workload(rate=1000, partitions=1)
    assert adv.records_needed(w, [0.0, 20.0, 5.0]) == 130 and adv.records_needed(w, []) == 50
    assert [adv.size_text(n) for n in (2 << 20, 1 << 20, 16 << 10, 1536, 1000)] == [
        "2MiB",
        "1MiB",
        "16KiB",
        "1536",
        "1000",
    ]


def cand(spec: str, bs: int = 16384, linger: float = 5.0, **kw: object) -> adv.Candidate:
    s = parse_spec(spec)
    base: dict[str, object] = {f.name: 0.0 for f in dataclasses.fields(adv.Candidate)}
    base.update(codec=s.codec, level=s.level, batch_size=bs, linger_ms=linger, within_budget=True, steady=True)
    base.pop("equivalent_batch_sizes")
    base.update(kw)
    return adv.Candidate(**base)  # type: ignore[arg-type]


def test_candidate_label_cores_and_row() -> None:
    c = cand("zstd:3", 1 << 20, 20.0, producer_cores=0.5, broker_cores=0.25, consumer_cores=0.125)
    assert c.spec == "zstd:3" and cand("lz4").spec == "lz4"
    assert c.label == "zstd:3 batch.size=1MiB linger.ms=20" and c.cores == 0.875
    row = dataclasses.replace(c, equivalent_batch_sizes=(2 << 20, 4 << 20)).row()
    assert row["equivalent_batch_sizes"] == "2097152;4194304" and row["spec"] == "zstd:3" and row["level"] == 3
    assert list(row)[:4] == ["codec", "level", "batch_size", "linger_ms"] and row["producer_cores"] == 0.5


def test_pareto_front_is_the_undominated_cheapest_first() -> None:
    a = cand("none", total_usd_month=1.0, added_p99_ms=10.0)
    b = cand("lz4", total_usd_month=2.0, added_p99_ms=5.0)
    b2 = cand("lz4", 65536, total_usd_month=2.0, added_p99_ms=6.0)
    c = cand("gzip:6", total_usd_month=3.0, added_p99_ms=7.0)
    e = cand("zstd:3", total_usd_month=4.0, added_p99_ms=1.0)
    g = cand("zstd:9", total_usd_month=5.0, added_p99_ms=1.0)  # as fast as e, dearer
    assert adv.pareto_front([g, c, e, b2, a, b]) == [a, b, e]
    assert adv.pareto_front([]) == []


def test_recommendation_is_the_knee_and_its_sentence() -> None:
    cheapest = cand("zstd:12", 1 << 20, 50.0, total_usd_month=10.0, added_p99_ms=30.0)
    best = cand(
        "zstd:3",
        total_usd_month=10.05,
        added_p99_ms=10.0,
        cpu_usd_month=6.0,
        network_usd_month=3.0,
        storage_usd_month=1.05,
        ratio=4.0,
    )
    slower = cand("lz4", total_usd_month=10.08, added_p99_ms=15.0)  # within the tolerance, dominated by best
    none = cand("none", total_usd_month=20.0, added_p99_ms=0.0)  # on the front, outside the tolerance
    over = cand("snappy", total_usd_month=1.0, within_budget=False)
    ch = adv.recommend([none, over, slower, cheapest, best])
    assert ch.best is best and ch.runner_up is cheapest and ch.cheapest is cheapest
    assert ch.reason == (
        "zstd:3 batch.size=16KiB linger.ms=5 adds the least p99 latency (10.00 ms) of the candidates within the "
        "p99 budget costing at most 1 % more than the cheapest, at $10.05/month (CPU is its largest part, $6.00); "
        "it stores 4.00x less than the payload; no compression would cost $20.00/month."
    )
    # a zero tolerance is the cheapest itself; its runner-up the next point of the front
    ch0 = adv.recommend([none, slower, cheapest, best], tolerance_pct=0.0)
    assert ch0.best is cheapest and ch0.runner_up is best
    # a wide tolerance reaches the front's other end
    assert adv.recommend([none, slower, cheapest, best], tolerance_pct=100.0).best is none
    net = cand("lz4", total_usd_month=5.0, cpu_usd_month=1.0, network_usd_month=3.0, storage_usd_month=1.0, ratio=2.0)
    one = adv.recommend([net])
    assert one.best is net and one.runner_up is None and one.cheapest is net
    assert "(network is its largest part, $3.00)" in one.reason and "no compression" not in one.reason
    tie = cand("lz4", 65536, total_usd_month=5.0, added_p99_ms=-1.0, storage_usd_month=9.0)
    assert adv.recommend([net, tie]).best is tie  # equal cost: the lower added p99 first
    assert "storage is its largest part" in adv.recommend([tie]).reason
    assert "no compression would cost" not in adv.recommend([none]).reason
    with pytest.raises(adv.CostError) as e:
        adv.recommend([over])
    assert str(e.value) == "no candidate meets the p99 budget; raise --p99-budget-ms or add --linger-ms 0"
    for bad in (-1.0, 101.0, float("nan")):
        with pytest.raises(adv.CostError, match="--cost-tolerance"):
            adv.recommend([net], tolerance_pct=bad)


def test_workload_checks_every_figure() -> None:
    adv.Workload(rate=1.0, partitions=1, replication_factor=1, retention_hours=1.0, p99_budget_ms=None).validate()
    adv.Workload(rate=1.0, partitions=1, client="java", p99_budget_ms=5.0).validate()
    bad = [
        ({"rate": float("nan")}, "--rate"),
        ({"partitions": 0}, "--partitions must be >= 1, got 0"),
        ({"replication_factor": 0}, "--rf"),
        ({"retention_hours": 0.0}, "--retention"),
        ({"p99_budget_ms": float("nan")}, "--p99-budget-ms"),
        ({"client": "go"}, "unknown client 'go'; use librdkafka or java"),
    ]
    for kw, msg in bad:
        w = dataclasses.replace(adv.Workload(rate=1.0, partitions=1), **kw)  # type: ignore[arg-type]
        with pytest.raises(adv.CostError, match=msg):
            w.validate()
    assert [str(s) for s in adv.client_specs("librdkafka")] == list(adv.CLIENT_SPECS["librdkafka"])


def test_cost_files_and_overrides(tmp_path: Path) -> None:
    d = adv.load_prices(None)
    assert d == adv.Prices() and d.source == "defaults"
    lines = d.lines()
    assert len(lines) == len(adv.PRICE_KEYS) == 11
    assert lines == [
        "  network_per_gb = 0.02  ($ per GB between zones)",
        "  core_hour = 0.04  ($ per core-hour)",
        "  storage_gb_month = 0.08  ($ per GB-month stored)",
        "  cross_zone_produce = 0.6667  (share of produce bytes crossing zones)",
        "  cross_zone_replication = 1  (share of replication bytes crossing zones)",
        "  cross_zone_consume = 0.6667  (share of consumed bytes crossing zones)",
        "  consumer_groups = 1  (consumer groups reading every byte)",
        "  producer_cpu_us_per_record = 7  (producer CPU-us per record besides compression)",
        "  broker_cpu_us_per_record = 19  (broker CPU-us per record per replica)",
        "  broker_cpu_s_per_gb = 1  (broker CPU-s per GB stored per replica)",
        "  consumer_cpu_us_per_record = 1.2  (consumer CPU-us per record besides decompression)",
    ]
    f = tmp_path / "cost.toml"
    f.write_text("core_hour = 0.5\nconsumer_groups = 2\n")
    p = adv.load_prices(f, network_per_gb=0.1, storage_gb_month=None)  # type: ignore[arg-type]
    assert (p.core_hour, p.consumer_groups, p.network_per_gb, p.storage_gb_month) == (0.5, 2, 0.1, 0.08)
    assert isinstance(p.consumer_groups, int) and isinstance(p.core_hour, float)
    assert p.source == f"{f} + overrides" and adv.load_prices(f).source == str(f)
    assert adv.load_prices(None, core_hour=1.0).source == "defaults + overrides"
    for text, msg in [
        ("cpu = 1\n", "unknown key 'cpu'; use one of network_per_gb, core_hour"),
        ("core_hour = -1\n", r"core_hour must be a number from 0 to 1e\+09, got -1"),
        ("core_hour = true\n", r"core_hour must be a number from 0 to 1e\+09, got True"),
        ('core_hour = "1"\n', r"core_hour must be a number from 0 to 1e\+09, got '1'"),
        ("core_hour = \n", r"not valid TOML \(Invalid value .*\); fix the syntax"),
    ]:
        f.write_text(text)
        with pytest.raises(adv.CostError, match=msg):
            adv.load_prices(f)
    f.write_text("core_hour = 0\n")
    assert adv.load_prices(f).core_hour == 0.0
    with pytest.raises(adv.CostError, match="cost file not found: .*nope.toml; give an existing TOML file"):
        adv.load_prices(tmp_path / "nope.toml")


def shape_of(stored: float, steady: bool = True, raw: float = 4096.0) -> adv.Shape:
    return adv.Shape(stored, stored + 0.01, raw, 10.0, 100.0, (1.0, 2.0), (raw, raw), steady)


def test_advise_prices_given_shapes_and_recommends(tmp_path: Path) -> None:
    corpus = Corpus("c", (b"x" * 1000,) * 10)
    work = adv.Workload(rate=10_000, partitions=2, replication_factor=3, retention_hours=24.0)
    m = MTable(speeds={("zstd:3", 4096): (500.0, 1000.0)}, fresh={("zstd:3", 4096): 400.0})
    shapes = {("none", 16384, 5.0): (shape_of(1.0), ()), ("zstd:3", 16384, 5.0): (shape_of(0.25), (65536,))}
    a = adv.advise(corpus, work, adv.Prices(), specs=[CodecSpec("none"), parse_spec("zstd:3")], shapes=shapes, m=m)
    z = adv.price(parse_spec("zstd:3"), 16384, 5.0, shapes[("zstd:3", 16384, 5.0)][0], 1e7, work, adv.Prices(), m)
    assert a.best == dataclasses.replace(z, equivalent_batch_sizes=(65536,)) and a.best.ratio == 4.0
    assert [c.codec for c in a.candidates] == ["zstd", "none"] and a.runner_up is not None
    assert a.runner_up.codec == "none" and a.front == [a.best, a.runner_up] and a.m_measured == 0 and a.notes == []
    assert a.reason == adv.recommend(a.candidates).reason and a.workload is work and a.corpus is corpus
    assert a.prices == adv.Prices()
    shapes[("none", 16384, 5.0)] = (shape_of(1.0, steady=False), ())
    a = adv.advise(corpus, work, adv.Prices(), specs=[CodecSpec("none")], shapes=shapes, m=m)
    assert a.notes == [
        "some candidates saw only flush-closed batches (the corpus is shorter than their linger.ms "
        "at this rate); their ratios are those of partial batches"
    ]
    with pytest.raises(adv.CostError):
        adv.advise(corpus, dataclasses.replace(work, partitions=0), adv.Prices(), shapes=shapes, m=m)
    one = adv.write_csv(a.candidates[:1], tmp_path / "one.csv")
    assert len(list(csv.DictReader(one.open(newline="")))) == 1
    out = adv.write_csv(a.candidates, tmp_path / "adv.csv")
    rows = list(csv.DictReader(out.open(newline="")))
    assert [r["spec"] for r in rows] == ["zstd:3", "none"] and rows[0]["equivalent_batch_sizes"] == "65536"
    assert rows[0]["ratio"] == "4" and rows[0]["total_usd_month"] == f"{a.candidates[0].total_usd_month:.6g}"
    assert rows[0]["within_budget"] == "True" and rows[1]["level"] == ""


def test_sweep_runs_unfilled_batch_sizes_once() -> None:
    corpus = Corpus("c", tuple(bytes([65 + i % 26]) * 100 for i in range(400)))
    work = adv.Workload(rate=10_000, partitions=1, client="java")
    runs: list[str] = []
    out = adv.sweep_shapes(
        corpus, work, [CodecSpec("none"), parse_spec("lz4")], [262144, 1024, 65536], [5.0], runs.append
    )
    # 5 ms at 10,000 records/s: ~50 records (~5 KB) per batch; 1 KiB fills, 64 KiB and 256 KiB never do
    assert sorted(out) == [("lz4", 1024, 5.0), ("lz4", 65536, 5.0), ("none", 1024, 5.0), ("none", 65536, 5.0)]
    assert out[("none", 65536, 5.0)][1] == (262144,) and out[("lz4", 65536, 5.0)][1] == (262144,)
    assert out[("none", 1024, 5.0)][1] == () and out[("lz4", 1024, 5.0)][1] == ()
    assert runs == ["none 1024 5", "none 65536 5", "lz4 1024 5", "lz4 65536 5"]
    assert out[("lz4", 65536, 5.0)][0].stored_per_payload < out[("none", 65536, 5.0)][0].stored_per_payload
    assert out[("none", 65536, 5.0)][0].steady
    cfg = adv.sim_config(adv.Workload(rate=1234.0, partitions=3), parse_spec("zstd:3"), 4096, 2.5, seed=7)
    assert (cfg.codec, cfg.level, cfg.client, cfg.batch_size, cfg.linger_ms) == ("zstd", 3, "librdkafka", 4096, 2.5)
    assert (cfg.partitions, cfg.rate, cfg.seed, cfg.start_ts_ms) == (3, 1234.0, 7, 1_700_000_000_000)
    assert adv.sim_config(work, CodecSpec("none"), 4096, 2.5) == sim.SimConfig(
        codec="none", client="java", batch_size=4096, linger_ms=2.5, rate=10_000, start_ts_ms=1_700_000_000_000
    )


def test_the_corpus_modelled(tmp_path: Path) -> None:
    c, note = adv.corpus_for("json", adv.Workload(rate=100, partitions=1), [0.0])
    assert note == "" and adv.MIN_CORPUS <= c.size < adv.MIN_CORPUS + 4096 and c.name == "json"
    f = tmp_path / "sample.txt"
    f.write_bytes(b"".join(b"%099d\n" % i for i in range(3000)))  # 3000 records of 99 bytes
    c, note = adv.corpus_for(str(f), adv.Workload(rate=100_000, partitions=1), [0.0])  # 5000 needed
    assert len(c.records) == 6000 and c.records[3000] == c.records[0] and c.source.endswith("repeated 2x")
    assert note == f"{c.name} holds 3000 records, fewer than the 5000 needed: repeated 2 times"
    c, note = adv.corpus_for(str(f), adv.Workload(rate=1000, partitions=1), [0.0])
    assert len(c.records) == 3000 and note == ""
    f.write_bytes(b"abc\n" * 10)
    with pytest.raises(adv.CostError) as e:
        adv.corpus_for(str(f), adv.Workload(rate=100, partitions=1), [0.0])
    assert str(e.value) == (
        "corpus sample.txt: 10 records of 30 bytes in all (30 bytes as modelled), less than the 4096 bytes experiment "
        "M compresses at its smallest block; give a sample of more records (e.g. kcat -C -t TOPIC -c 20000 -e > sample.txt)"
    )
    f.write_bytes(b"abcd\n" * 1024)  # 4096 bytes: exactly the smallest block
    assert len(adv.corpus_for(str(f), adv.Workload(rate=100, partitions=1), [0.0])[0].records) == 1024
    f.write_bytes(b"abc\n" * 1000)  # 3000 bytes, repeated 5 times to 15000: enough as modelled
    c, _ = adv.corpus_for(str(f), adv.Workload(rate=100_000, partitions=1), [0.0])
    assert len(c.records) == 5000
    lp = corpus.write_lenprefixed([b"x" * 5000, b"y" * 10], tmp_path / "lp.bin")
    c, _ = adv.corpus_for(str(lp), adv.Workload(rate=20, partitions=1), [0.0], fmt="lenprefixed")
    assert c.records == (b"x" * 5000, b"y" * 10)


def test_builtin_corpus_sized_to_the_records_needed() -> None:
    w = adv.Workload(rate=100_000, partitions=1)  # 5,000 records needed
    c, note = adv.corpus_for("json", w, [0.0])
    assert note == "" and 5000 <= len(c.records) < 5050 and c.source == "builtin:json:seed=1"
    c2, _ = adv.corpus_for("json", w, [0.0], seed=2)
    assert c2.source == "builtin:json:seed=2" and c2.records != c.records
    big, note = adv.corpus_for("json", adv.Workload(rate=1_000_000, partitions=1), [20.0])  # 130,000 needed
    assert abs(big.size - adv.MAX_CORPUS) < 4096
    assert note == f"corpus capped at 4MiB ({len(big.records)} of 130000 records)"


def test_advise_measures_m_and_sweeps_when_not_given(tmp_path: Path) -> None:
    c = corpus.generate("json", 256 << 10)
    seen: list[str] = []
    a = adv.advise(
        c,
        adv.Workload(rate=5000, partitions=1),
        adv.Prices(),
        specs=[CodecSpec("none"), parse_spec("lz4")],
        batch_sizes=[16384],
        lingers=[5.0],
        cache_dir=tmp_path,
        on_progress=seen.append,
    )
    assert seen == ["lz4@4096", "lz4@16384", "lz4@65536", "lz4@262144", "none 16384 5", "lz4 16384 5"]
    assert a.m_measured == 4 and (tmp_path / "advise-m.json").is_file()
    assert sorted(x.spec for x in a.candidates) == ["lz4", "none"] and a.best.spec == "lz4"
    assert a.best.ratio > 2 and a.best.batch_size == 16384 and a.prices == adv.Prices()
    again = adv.advise(
        c,
        a.workload,
        adv.Prices(),
        specs=[CodecSpec("none"), parse_spec("lz4")],
        batch_sizes=[16384],
        lingers=[5.0],
        cache_dir=tmp_path,
    )
    assert again.m_measured == 0 and again.best == a.best  # experiment M from the cache


def test_decision_matrix_answers_each_row_from_the_sweep() -> None:
    from kbench.model import advise_matrix

    s_lz4 = cand("lz4", 16384, total_usd_month=5.0, ratio=2.0, consumer_cores=0.3, network_gb_month=100.0)
    s_zstd = cand("zstd:3", 16384, total_usd_month=6.0, ratio=3.0, consumer_cores=0.2, network_gb_month=80.0)
    s_none = cand("none", 16384, total_usd_month=7.0, consumer_cores=0.1)
    b_zstd = cand("zstd:3", 65536, total_usd_month=4.0, ratio=3.5, consumer_cores=0.25, network_gb_month=50.0)
    b_gzip = cand("gzip:6", 65536, total_usd_month=3.0, ratio=3.8, consumer_cores=0.4, network_gb_month=60.0)
    over = cand("snappy", 65536, total_usd_month=1.0, network_gb_month=1.0, consumer_cores=0.0, within_budget=False)

    def advice(cands: list[adv.Candidate]) -> adv.Advice:
        w = adv.Workload(rate=1.0, partitions=1)
        return adv.Advice(w, adv.Prices(), Corpus("c", (b"x",)), cands, [], cands[0], None, "", 0)

    rows = advise_matrix.decision_matrix(advice([s_lz4, s_zstd, s_none, b_zstd, b_gzip, over]))
    assert [(r.seed_choice, r.ours, r.agrees) for r in rows] == [
        ("lz4", "lz4", "yes"),
        ("zstd:3", "gzip:6", "no"),
        ("lz4", "lz4 (compatibility, not cost)", "n/a"),
        ("lz4", "zstd:3", "no"),
        ("zstd:3", "zstd:3", "yes"),
    ]
    assert (
        rows[0].evidence
        == "cheapest: lz4 batch.size=16KiB linger.ms=5; ratio lz4 2.00 vs zstd:3 3.00 (same batching rules)"
    )
    assert rows[1].evidence == "cheapest: gzip:6 batch.size=64KiB linger.ms=5"
    assert rows[3].evidence == (
        "least consumer CPU among compressing codecs: zstd:3 batch.size=16KiB linger.ms=5; "
        "ratio lz4 2.00 vs zstd:3 3.50 (same batching rules)"
    )
    assert rows[4].evidence == "fewest bytes on the network: zstd:3 batch.size=64KiB linger.ms=5"
    assert rows[0].scenario.startswith("batch <= 16 KiB") and rows[4].scenario.startswith("network is the bottleneck")
    rows = advise_matrix.decision_matrix(advice([b_zstd]))
    assert (rows[0].ours, rows[0].evidence, rows[0].agrees) == (
        "no candidate",
        "no swept candidate fits the scenario",
        "n/a",
    )
    assert (rows[1].ours, rows[1].agrees) == ("zstd:3", "yes")


def test_advise_png_draws_no_label_over_a_point() -> None:
    """The recommendation's name is in the legend, and the legend is under the axes: no text of the
    figure covers a candidate's point."""
    pytest.importorskip("matplotlib")
    from kbench.model.corpus import Corpus
    from kbench.reporting.advise_plot import figure

    cands = [
        cand(s, bs, total_usd_month=100.0 + 7 * i + bs / 65536, added_p99_ms=0.5 + (i % 5) * 3 + bs / 200000)
        for i, s in enumerate(("none", "lz4", "zstd:1", "zstd:3", "zstd:6", "gzip:6"))
        for bs in (16384, 65536, 262144)
    ]
    best = cands[7]
    w = adv.Workload(rate=1000.0, partitions=6, p99_budget_ms=10.0)
    advice = adv.Advice(w, adv.Prices(), Corpus("c", (b"x",)), cands, adv.pareto_front(cands), best, None, "", 0)
    fig = figure(advice)
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    ax = fig.axes[0]
    (legend,) = fig.legends
    assert any(best.label in t.get_text() for t in legend.get_texts())
    box = legend.get_window_extent(r)
    area = ax.get_window_extent(r)
    assert box.y1 <= area.y0  # under the axes
    texts = [t for t in ax.texts if t.get_visible()]
    assert texts == []  # nothing written among the points
    pts = ax.transData.transform([(c.added_p99_ms, c.total_usd_month) for c in cands])
    assert not any(box.contains(x, y) for x, y in pts)
