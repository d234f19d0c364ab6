"""The engine over the simulated transport (no cluster): real batches, segments and thread CPU."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from engine_fakes import plan_toml, sweep
from test_engine_runner import GATE_OK

from kbench.engine import plan as plan_mod
from kbench.engine import store
from kbench.engine.runner import RunOptions, execute
from kbench.engine.transports.simulated import SimTransport
from kbench.kafka.procstat import FixedSteal

PLAN = plan_toml(
    sweep("sat", ["B"], ["none", "zstd:3"], rate="saturated"),
    sweep("c", ["C", "D", "E"], ["none", "zstd:3"], batch_size=[16384, 262144], rate="auto"),
    sweep("f", ["F"], ["zstd:3"], rate=10000, topic_compression=["producer", "lz4"]),
    transport="sim",
    name="sim",
    repetitions=2,
    warmup=False,
    duration_s=1,
    min_window_s=0,
    corpus_size=300000,
    seed=3,
)


def test_sim_plan(tmp_path: Path) -> None:
    (tmp_path / "p.toml").write_text(PLAN)
    plan = plan_mod.load(str(tmp_path / "p.toml"))
    # The steal the run sees is injected (0 %), so every row's status is known whatever the
    # host's neighbours do.
    o = execute(
        RunOptions(
            plan=plan,
            run_dir=tmp_path / "run",
            gate_sample_s=0,
            gate_overrides=GATE_OK,
            progress_stream=io.StringIO(),
            steal_source=FixedSteal(0.0),  # the rows must not depend on this host's hypervisor
        ),
        SimTransport(),
    )
    assert o.state == "complete"
    # every row of every experiment OK (2 repetitions of each cell; D: three roles)
    for exp, n in (("B", 2 * 2), ("C", 4 * 2), ("D", 4 * 2 * 3), ("E", 4 * 2), ("F", 2 * 2)):
        rows = store.read_rows(tmp_path / "run" / f"{exp}.csv")
        assert [r["status"] for r in rows] == ["OK"] * n, (exp, [r["reason"] for r in rows])
    c = store.read_rows(tmp_path / "run" / "C.csv")
    ratio = {(r["codec"], r["batch_size"]): float(r["ratio"]) for r in c}
    assert ratio[("zstd:3", "262144")] > ratio[("zstd:3", "16384")] > 2 * ratio[("none", "16384")]
    e = store.read_rows(tmp_path / "run" / "E.csv")
    fill = {r["batch_size"]: float(r["records_per_batch_p50"]) for r in e if r["codec"] == "none"}
    assert fill["262144"] > fill["16384"] >= 1
    d = store.read_rows(tmp_path / "run" / "D.csv")
    assert {r["role"] for r in d} == {"producer", "broker-0", "consumer"}
    assert {r["status"] for r in d} == {"OK"} and {r["steal_pct"] for r in d} == {"0"}
    assert all(r["usr_pct"] == "NA" and float(r["cpu_s"]) >= 0 for r in d)
    # the sim's CPU covers the whole run, so each role's window payload is the whole corpus
    payload = {(r["cell_id"], r["rep"]): int(r["payload_bytes"]) for r in c}
    for r in d:
        assert float(r["payload_gb"]) * 1e9 == pytest.approx(payload[(r["cell_id"], r["rep"])], rel=1e-6)
    f = {r["topic_compression"]: r for r in store.read_rows(tmp_path / "run" / "F.csv")}
    assert f["producer"]["recompressed"] == "false" and f["lz4"]["recompressed"] == "true"
    assert f["lz4"]["stored_codecs"] == "lz4"
