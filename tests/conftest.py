"""Shared fixtures."""
from __future__ import annotations

import random

import pytest

from kbench import corpus


@pytest.fixture(scope="session")
def json_bytes() -> bytes:
    """About 64 KiB of realistic JSON events."""
    return corpus.generate("json", 64 * 1024, seed=7).payload


@pytest.fixture(scope="session")
def random_bytes() -> bytes:
    """1 MiB of incompressible bytes."""
    return random.Random(3).randbytes(1 << 20)
