"""The A/A control and the cluster warm-up on a real local Kafka cluster (started by kbench run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_engine_kafka import rows, run_kbench

from kbench.experiments import registry

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

TINY = """
name = "aa-tiny"
repetitions = 2
duration_s = 1
min_window_s = 0
warmup = true
warmup_s = 0.5
knee_probe_s = 0.5
corpus_size = 200000

[transport]
kind = "local"

[[sweep]]
name = "fixed"
control = true
experiments = ["A", "C"]
codec = ["none", "lz4"]
rate = 500
"""


def test_a_tiny_plan_with_the_control_writes_the_aa_rows(tmp_path: Path) -> None:
    p, run = run_kbench(tmp_path, TINY)
    assert p.returncode in (0, 4), p.stderr[-3000:]  # 4: a cell short of OK repetitions on a busy host
    for exp in ("A", "C"):
        header, body = rows(run / f"{exp}.csv")
        assert header == list(registry.columns(exp)) and "control_of" in header
        aa = [r for r in body if r["cell_id"] == "fixed-000-aa"]
        assert sorted(r["rep"] for r in aa if r["attempt"] == "1") == ["1", "2"], exp
        assert {r["control_of"] for r in aa} == {"fixed-000"}
        assert {r["control_of"] for r in body if r["cell_id"] != "fixed-000-aa"} == {""}
        base = [r for r in body if r["cell_id"] == "fixed-000"]
        for col in ("codec", "corpus", "batch_size", "linger_ms", "partitions", "acks", "rate", "target_rate_msgs"):
            assert {r[col] for r in aa} == {r[col] for r in base}, col  # identical settings
    man = json.loads((run / "manifest.json").read_text())
    order = [cid for cid, _ in man["order"]]
    assert order.count("fixed-000-aa") == 2 and len(order) == 6
    # the cluster was warmed before anything was measured: probes at a low rate, each p99 recorded
    warm = man["warm_up"]
    (entry,) = warm["cells"].values()
    assert warm["rate_msgs"] == 1000.0 and len(entry["p99s_us"]) >= 2
    assert all(v is None or v > 0 for v in entry["p99s_us"])
    log = (run / "run.log").read_text()
    assert "cluster warm-up (librdkafka) probe 1: corrected p99" in log
