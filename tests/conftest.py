"""Shared fixtures."""
from __future__ import annotations

from typing import Iterator

import pytest

from kbench import corpus


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


if False:  # typing only
    from kbench.cluster import LocalCluster  # noqa: F401
