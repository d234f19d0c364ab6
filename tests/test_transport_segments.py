"""The local transport's stored-bytes read from segment files (no Kafka needed).

A broker killed while it creates a partition leaves the partition's directory without its
``.log`` file: the repetition must fail with that reason (TransportError, which the runner
turns into a FAILED row), never abort the whole run with a segment-reader error.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kbench.engine.plan import TransportDef
from kbench.engine.transports.base import BrokerInfo, TransportError
from kbench.engine.transports.kafka import KafkaTransport


def test_partition_directory_without_segments_fails_the_repetition(tmp_path: Path) -> None:
    (tmp_path / "t-0").mkdir()
    t = KafkaTransport(TransportDef(), brokers=(BrokerInfo(0, log_dir=str(tmp_path)),))
    with pytest.raises(TransportError, match=r"stored bytes not measurable: .*t-0: no \.log segment files"):
        t._segments("t", 1)


def test_no_partition_directory_is_stored_unknown(tmp_path: Path) -> None:
    t = KafkaTransport(TransportDef(), brokers=(BrokerInfo(0, log_dir=str(tmp_path)),))
    assert t._segments("t", 1) == (None, None, None, (), None)
