"""A failed security handshake is reported as what it is (issue 32): a client with SASL properties
against a PLAINTEXT listener is told, in one line, that the broker answered but the SASL
handshake failed — not that no broker is reachable — and a closed port still says that no broker
is reachable.  Every kbench client that connects is covered: producer, consumer, admin and the
corpus sampler (all wait through ``kb_wait_reachable``), and the ``kbench produce`` command."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kbenv import KBENCH_PATH

from kbench.kafka import admin
from kbench.kafka.drivers import KafkaError, ProducerSpec, consume, produce
from kbench.kafka.sample import sample

pytestmark = pytest.mark.kafka

PASSWORD = "pw"
SASL = {
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "PLAIN",
    "sasl.username": "u",
    "sasl.password": PASSWORD,
}
HANDSHAKE = "but the SASL handshake/authentication failed"
UNREACHABLE = "no Kafka broker reachable"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _clients() -> dict[str, Callable[[dict[str, str]], Any]]:
    return {
        "producer": lambda p: produce(
            ProducerSpec(topic="hs", props=p, count=1, mode="saturated", connect_timeout=10), [b"x"]
        ),
        "consumer": lambda p: consume(p, "hs", expected=1, connect_timeout=10),
        "admin": lambda p: admin.metadata(p, timeout=10),
        "sampler": lambda p: sample(p, "hs", 1, timeout=10),
    }


@pytest.mark.parametrize("who", ["producer", "consumer", "admin", "sampler"])
def test_sasl_against_plaintext_names_the_handshake(who: str, kafka1: Any) -> None:
    props = {**SASL, "bootstrap.servers": kafka1.bootstrap_servers}
    with pytest.raises(KafkaError) as ei:
        _clients()[who](props)
    msg = str(ei.value)
    assert HANDSHAKE in msg and "sasl.mechanism" in msg, msg
    assert f"connected to '{kafka1.bootstrap_servers}'" in msg, msg
    assert UNREACHABLE not in msg and "\n" not in msg and PASSWORD not in msg, msg


def _kbench(bootstrap: str, timeout_s: int = 10) -> subprocess.CompletedProcess[str]:
    xs = [a for k, v in SASL.items() for a in ("-X", f"{k}={v}")]
    args = ["produce", "--bootstrap", bootstrap, "--topic", "hs", "--mode", "saturated", "--count", "1"]
    return subprocess.run(
        [sys.executable, "-m", "kbench", *args, "--connect-timeout", str(timeout_s), *xs],
        env={**os.environ, "PYTHONPATH": KBENCH_PATH},
        cwd=Path(KBENCH_PATH),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_produce_sasl_against_plaintext_is_one_line_naming_sasl(kafka1: Any) -> None:
    p = _kbench(kafka1.bootstrap_servers)
    out = p.stdout + p.stderr
    assert p.returncode != 0, out
    lines = out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kbench: error: "), out
    assert HANDSHAKE in out and UNREACHABLE not in out, out
    assert "Traceback" not in out and PASSWORD not in out, out


def test_cli_produce_closed_port_is_still_unreachable() -> None:
    p = _kbench(f"127.0.0.1:{closed_port()}", timeout_s=2)
    out = p.stdout + p.stderr
    assert p.returncode != 0, out
    assert len(out.strip().splitlines()) == 1 and UNREACHABLE in out, out
    assert "handshake" not in out and "Traceback" not in out and PASSWORD not in out, out


PLAN = """name = "hs"
repetitions = 1
duration_s = 0.05
min_window_s = 0
warmup = false
corpus_size = 20000

[[sweep]]
experiments = ["C"]
codec = ["none"]
corpus = "json"
rate = 100
"""


def _first_contact_with_sasl(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``kbench args -X <SASL properties>``, asserting it fails in one error line naming the SASL
    handshake (not an unreachable broker), without a traceback or the password."""
    xs = [a for k, v in SASL.items() for a in ("-X", f"{k}={v}")]
    p = subprocess.run(
        [sys.executable, "-m", "kbench", *args, *xs],
        env={**os.environ, "PYTHONPATH": KBENCH_PATH},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = p.stdout + p.stderr
    assert p.returncode != 0, out
    errors = [line for line in out.splitlines() if line.startswith("kbench: error: ")]
    assert len(errors) == 1 and HANDSHAKE in errors[0], out
    assert UNREACHABLE not in out and "Traceback" not in out and PASSWORD not in out, out
    return p


def test_run_bootstrap_first_contact_uses_the_security_properties(kafka1: Any, tmp_path: Path) -> None:
    """``run --bootstrap``'s first contact (the transport's metadata request) is made with the plan's
    client properties: SASL against a PLAINTEXT listener fails there, naming the handshake."""
    plan = tmp_path / "hs.toml"
    plan.write_text(PLAN)
    _first_contact_with_sasl("run", str(plan), "--bootstrap", kafka1.bootstrap_servers, cwd=tmp_path)


def test_gate_bootstrap_with_x_uses_the_security_properties(kafka1: Any, tmp_path: Path) -> None:
    """``kbench gate --bootstrap`` takes ``-X`` as ``run`` does: its metadata request is made with
    them, so SASL against a PLAINTEXT listener fails naming the handshake (exit 1: not bad input)."""
    p = _first_contact_with_sasl("gate", "--bootstrap", kafka1.bootstrap_servers, "--sample-s", "0", cwd=tmp_path)
    assert p.returncode == 1


def test_plain_clients_still_connect(kafka1: Any) -> None:
    """Without security properties the same clients connect (the error callback only notes errors)."""
    props = {"bootstrap.servers": kafka1.bootstrap_servers}
    admin.create_topic(props, "hs-ok", partitions=1, replication_factor=1, timeout=30)
    produce(ProducerSpec(topic="hs-ok", props=props, count=3, mode="saturated", connect_timeout=10), [b"a", b"b"])
    got = sample(props, "hs-ok", 3, timeout=30)
    assert [r.value for r in got.records] == [b"a", b"b", b"a"]
    assert len(admin.metadata(props, timeout=10)["brokers"]) == 1
