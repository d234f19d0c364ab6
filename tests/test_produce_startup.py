"""``kbench produce``'s start-up imports only what the command uses (benchmarks/README.md,
"kbench produce's start-up"): a librdkafka run against librdkafka's mock cluster, read with
``python -X importtime``, loads none of the engine, the experiments, the reporting, the cluster's
process machinery or the data libraries."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from kbenv import KBENCH_PATH
from test_consume import MockCluster

from kbench.model.stats import SATURATED_FLAG

#: What a librdkafka ``kbench produce`` never needs (the driver clients' pool, the plans and their
#: reports, ``kbench cluster``'s processes, the data and metrics libraries).
NOT_FOR_PRODUCE = re.compile(
    r"^(kbench\.(engine|experiments|reporting|testbed|plans)|kbench\.kafka\.(cluster_state|cluster|metrics)"
    r"|numpy|pandas|matplotlib|prometheus_client|scipy)(\.|$)"
)


def _imported(argv: list[str]) -> tuple[list[str], str]:
    p = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "kbench", "produce", *argv],
        env={**os.environ, "PYTHONPATH": KBENCH_PATH},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    mods = [ln.rsplit("|", 1)[1].strip() for ln in p.stderr.splitlines() if ln.startswith("import time:")]
    assert "kbench.kafka.drivers" in mods  # the check reads the real import list (produce's own imports)
    return mods, p.stdout


def test_a_librdkafka_produce_imports_only_what_it_uses() -> None:
    mods, _ = _imported(["--help"])
    assert not [m for m in mods if NOT_FOR_PRODUCE.match(m)]
    mock = MockCluster({"startup": 1})
    try:
        argv = ["--bootstrap", mock.bootstrap_servers, "--topic", "startup", "--mode", "saturated", "--count", "3"]
        mods, out = _imported(argv)
    finally:
        mock.close()
    assert not [m for m in mods if NOT_FOR_PRODUCE.match(m)]
    assert "delivered 3" in out and SATURATED_FLAG in out  # the whole text report was printed


def test_the_check_sees_a_module_the_command_must_not_import() -> None:
    assert NOT_FOR_PRODUCE.match("kbench.engine.transports.local_pool")
    assert NOT_FOR_PRODUCE.match("kbench.experiments.spec") and NOT_FOR_PRODUCE.match("pandas")
    assert not NOT_FOR_PRODUCE.match("kbench.kafka.drivers") and not NOT_FOR_PRODUCE.match("kbench.kafka.clusters")
