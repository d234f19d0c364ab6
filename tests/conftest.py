"""Shared fixtures."""

from __future__ import annotations

import os
import random
import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from markers import Needs, message, missing

from kbench.model import corpus

if TYPE_CHECKING:
    from kbench.kafka.cluster import LocalCluster

ROOT = Path(__file__).resolve().parent.parent
UNMARKED = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """Every ``kbench`` command a test starts sees 0 % CPU steal unless the test says otherwise.

    This machine kind is a VM whose hypervisor steals several per cent of CPU while the suite runs
    (8 % measured over 10 s during a full run): with the plans' default 1 % limit, a repetition of
    any Kafka test could turn INVALID for a reason that is not the test's subject.  The steal rule
    itself is tested with injected figures (test_engine_runner, test_cli_grammar, test_engine_gate),
    and /proc/stat's parsing with recorded texts (test_rows_units, test_engine_window); each run
    says in its manifest and tables that its steal was injected.

    Likewise the host-speed probe (kbench.engine.host_speed) reads a fixed nominal speed: the
    suite's own tests load both CPUs, which moves the probe by more than the plans' 10 % (a lz4
    slice runs 10-20 % slower beside a busy sibling vCPU).  The rule is tested with injected
    sequences and the live probe against the kernel's own CPU accounting (test_host_speed)."""
    from kbench.engine.host_speed import INJECT_ENV as HOST_SPEED_ENV
    from kbench.kafka.procstat import INJECT_ENV

    os.environ.setdefault(INJECT_ENV, "0")
    os.environ.setdefault(HOST_SPEED_ENV, "1")
    # A suite started as a background job of a non-interactive shell (CI's runner, `cmd &`) inherits
    # SIGINT ignored, and so would every kbench it starts: Python installs no KeyboardInterrupt
    # handler when SIGINT is ignored at start-up, and the Ctrl-C tests' signal would be lost (a run
    # signalled after its first repetition ran to the end and exited 0).  A handled signal is reset
    # to the default across exec, so the commands start as from a terminal.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Before ``-m`` selects: note each test that needs a tier (tests/markers.py) it is not marked with."""
    needs = Needs()
    for item in items:
        lacking = missing(item, needs)
        if lacking:
            item.stash[UNMARKED] = message(item.nodeid, lacking)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Fail such a test before any of its fixtures starts a broker, a build or a browser."""
    if UNMARKED in item.stash:
        pytest.fail(item.stash[UNMARKED], pytrace=False)


@pytest.fixture(scope="session")
def json_bytes() -> bytes:
    """About 64 KiB of realistic JSON events."""
    return corpus.generate("json", 64 * 1024, seed=7).payload


@pytest.fixture(scope="session")
def random_bytes() -> bytes:
    """1 MiB of incompressible bytes."""
    return random.Random(3).randbytes(1 << 20)


@pytest.fixture(scope="session")
def json_records() -> tuple[bytes, ...]:
    """About 256 KiB of JSON event records."""
    return corpus.generate("json", 256 * 1024, seed=7).records


@pytest.fixture(scope="session")
def kafka1(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A 1-node KRaft cluster for the whole session (free ports, tmp dir)."""
    from kbench.kafka.cluster import LocalCluster

    with LocalCluster(brokers=1, directory=tmp_path_factory.mktemp("kafka1")) as c:
        yield c


@pytest.fixture(scope="session")
def kafka3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A 3-node KRaft cluster for the whole session (free ports, tmp dir)."""
    from kbench.kafka.cluster import LocalCluster

    with LocalCluster(brokers=3, directory=tmp_path_factory.mktemp("kafka3")) as c:
        yield c


@pytest.fixture(scope="session")
def kafka_report_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Short real-Kafka runs for the report tests (A latencies, a p99 verdict, a REJECTED cell):
    made once per session (tests/report_runs.py: kafka_runs)."""
    from report_runs import kafka_runs

    return kafka_runs(tmp_path_factory.getbasetemp() / "kafka-report-runs")


def parse_dump(text: str) -> list[dict[str, str]]:
    """Batch lines of DumpLogSegments output as dicts (key: value pairs)."""
    out = []
    for line in text.splitlines():
        if line.startswith("baseOffset:"):
            out.append(dict(re.findall(r"(\w+): (\S+)", line)))
    return out


@pytest.fixture(scope="session")
def dump_log_segments():
    """Run Kafka's DumpLogSegments --deep-iteration over files; returns the batch dicts per file."""
    from kbench.kafka import kafka_dist

    def run(files: list[Path]) -> dict[str, list[dict[str, str]]]:
        proc = kafka_dist.run_tool(
            "kafka.tools.DumpLogSegments", ["--deep-iteration", "--files", ",".join(str(f) for f in files)], timeout=300
        )
        per: dict[str, list[dict[str, str]]] = {}
        cur = None
        chunks: dict[str, list[str]] = {}
        for line in proc.stdout.splitlines():
            if line.startswith("Dumping "):
                cur = line[len("Dumping ") :].strip()
                chunks[cur] = []
            elif cur is not None:
                chunks[cur].append(line)
        for name, lines in chunks.items():
            per[name] = parse_dump("\n".join(lines))
        return per

    return run
