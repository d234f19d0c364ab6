"""Shared fixtures."""
from __future__ import annotations

import random
from typing import TYPE_CHECKING, Iterator

import pytest

from kbench import corpus

if TYPE_CHECKING:
    from kbench.cluster import LocalCluster


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
def kafka1(tmp_path_factory: pytest.TempPathFactory) -> Iterator["LocalCluster"]:
    """A 1-node KRaft cluster for the whole session (free ports, tmp dir)."""
    from kbench.cluster import LocalCluster

    with LocalCluster(brokers=1, directory=tmp_path_factory.mktemp("kafka1")) as c:
        yield c


@pytest.fixture(scope="session")
def kafka3(tmp_path_factory: pytest.TempPathFactory) -> Iterator["LocalCluster"]:
    """A 3-node KRaft cluster for the whole session (free ports, tmp dir)."""
    from kbench.cluster import LocalCluster

    with LocalCluster(brokers=3, directory=tmp_path_factory.mktemp("kafka3")) as c:
        yield c
