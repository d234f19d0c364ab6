"""Producer/consumer drivers without a cluster: argument checks, bad properties, unreachable brokers."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from kbench.kafka import admin
from kbench.kafka.drivers import KafkaError, ProducerSpec, consume, produce, redact
from kbench.kafka.secret import REDACTED


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_bad_property_name_fails_with_librdkafkas_message() -> None:
    spec = ProducerSpec(
        topic="t", props={"bootstrap.servers": "127.0.0.1:1", "no.such.prop": "1"}, count=1, mode="saturated"
    )
    with pytest.raises(KafkaError, match=r'No such configuration property: "no.such.prop"'):
        produce(spec, [b"x"])
    with pytest.raises(KafkaError, match=r'No such configuration property: "linger.mss"'):
        consume({"bootstrap.servers": "127.0.0.1:1", "linger.mss": "5"}, "t", expected=1)


def test_bad_property_value_is_librdkafkas_message_and_secrets_are_redacted() -> None:
    with pytest.raises(KafkaError, match="compression.codec"):
        produce(ProducerSpec(topic="t", props={"compression.type": "brotli"}, count=1, mode="saturated"), [b"x"])
    with pytest.raises(KafkaError) as ei:
        produce(
            ProducerSpec(
                topic="t",
                props={
                    "bootstrap.servers": "127.0.0.1:1",
                    "ssl.key.password": "hunter2",
                    "security.protocol": "ssl",
                    "ssl.key.location": "/nonexistent",
                },
                count=1,
                mode="saturated",
                connect_timeout=1,
            ),
            [b"x"],
        )
    assert "hunter2" not in str(ei.value)
    assert redact({"sasl.password": "p", "acks": "all"}) == {"sasl.password": REDACTED, "acks": "all"}


@pytest.mark.parametrize("who", ["producer", "consumer", "admin"])
def test_unreachable_bootstrap_fails_clearly_in_bounded_time(who: str) -> None:
    bs = f"127.0.0.1:{closed_port()}"
    t = time.monotonic()
    with pytest.raises(KafkaError, match=rf"no Kafka broker reachable at '{bs}' within 2.0 s"):
        if who == "producer":
            produce(
                ProducerSpec(topic="t", props={"bootstrap.servers": bs}, count=10, rate=100, connect_timeout=2), [b"x"]
            )
        elif who == "consumer":
            consume({"bootstrap.servers": bs}, "t", expected=1, connect_timeout=2)
        else:
            admin.metadata({"bootstrap.servers": bs}, timeout=2)
    assert time.monotonic() - t < 8


def test_spec_validation_messages() -> None:
    with pytest.raises(ValueError, match="unknown producer mode"):
        ProducerSpec(topic="t", props={}, mode="fast", count=1)
    with pytest.raises(ValueError, match="rate > 0"):
        ProducerSpec(topic="t", props={}, count=1)
    with pytest.raises(ValueError, match="count > 0 or a duration"):
        ProducerSpec(topic="t", props={}, rate=1)
    with pytest.raises(ValueError, match="needs nkeys"):
        ProducerSpec(topic="t", props={}, rate=1, count=1, keys="random")


# The Dask nanny's pre-spawn variables (left in the environment of whoever started a LocalCluster, and
# set in every Dask worker) double a zstd producer's CPU when a driver inherits them: MALLOC_TRIM_THRESHOLD_.
DASK_ENV = {"MALLOC_TRIM_THRESHOLD_": "65536", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def test_driver_env_drops_the_dask_nannys_allocator_settings() -> None:
    from kbench.kafka.clients import driver_env

    env = driver_env({**DASK_ENV, "PATH": "/bin", "PYTHONPATH": "/x"}, "/repo")
    assert env == {"PATH": "/bin", "PYTHONPATH": f"/repo{os.pathsep}/x"}
    assert driver_env({"OPENBLAS_NUM_THREADS": "1", "HOME": "/h"}) == {"HOME": "/h"}


@pytest.mark.parametrize("where", ["local", "dask"])
def test_every_driver_process_starts_with_the_driver_env(
    where: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Both places that start a driver (the local runner, a Dask worker) pass the driver env to
    the one driver client."""
    import subprocess

    from kbench.engine import dask_tasks
    from kbench.engine.transports import local_pool as transport

    seen: list[dict[str, str]] = []

    class Started(Exception):
        pass

    def popen(*args: object, env: dict[str, str] | None = None, **kw: object) -> None:
        seen.append(dict(os.environ if env is None else env))
        raise Started

    for k, v in DASK_ENV.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr(subprocess, "Popen", popen)
    with pytest.raises(Started):
        if where == "local":
            transport.spawn("producer", {}, tmp_path / "err")
        else:
            dask_tasks.start_driver({"role": "producer"}, tmp_path / "err", abort=None)
    assert len(seen) == 1 and not set(DASK_ENV) & set(seen[0]), sorted(set(DASK_ENV) & set(seen[0]))
