"""Topic administration over librdkafka's Admin API (``csrc/core/admin.c``, bound in ``csrc/python/py_admin.c``).

All functions take librdkafka properties (at least ``bootstrap.servers``), wait a bounded
time for a broker, and raise ``kbench.KafkaError`` with the broker's or librdkafka's message.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from kbench import _native
from kbench._native import KafkaError

__all__ = ["create_topic", "delete_topic", "describe_topic_configs", "metadata", "topic_config"]


def metadata(props: Mapping[str, str], timeout: float = 10.0) -> dict[str, Any]:
    """Brokers, controller id and topics (partitions, leaders, replicas, ISRs)."""
    return _native.metadata(dict(props), timeout=timeout)


def create_topic(
    props: Mapping[str, str],
    name: str,
    partitions: int = 1,
    replication_factor: int = 1,
    min_insync_replicas: int | None = None,
    compression_type: str | None = None,
    configs: Mapping[str, str] | None = None,
    timeout: float = 30.0,
) -> None:
    """Create a topic and wait until every partition has a leader."""
    cfg = {k: str(v) for k, v in (configs or {}).items()}
    if min_insync_replicas is not None:
        cfg["min.insync.replicas"] = str(min_insync_replicas)
    if compression_type is not None:
        cfg["compression.type"] = compression_type
    _native.create_topic(dict(props), name, partitions, replication_factor, cfg, timeout)


def describe_topic_configs(
    props: Mapping[str, str], name: str, timeout: float = 30.0
) -> dict[str, tuple[str | None, str]]:
    """Every config of a topic: name -> (value or None when sensitive, source).

    Right after a topic is created, a broker whose metadata has not caught up answers
    "Unknown topic or partition"; that answer is retried until ``timeout``.
    """
    deadline = time.monotonic() + timeout
    while True:
        left = max(deadline - time.monotonic(), 0.5)
        try:
            return _native.describe_topic_configs(dict(props), name, left)
        except KafkaError as e:
            if "Unknown topic or partition" not in str(e) or time.monotonic() >= deadline:
                raise
        time.sleep(0.2)  # backoff between bounded retries, not a synchronisation point


def topic_config(props: Mapping[str, str], name: str, key: str, timeout: float = 30.0) -> str | None:
    """One config value of a topic (e.g. ``compression.type``)."""
    return describe_topic_configs(props, name, timeout)[key][0]


def delete_topic(props: Mapping[str, str], name: str, timeout: float = 30.0) -> None:
    """Delete a topic and wait until the metadata no longer lists it."""
    _native.delete_topic(dict(props), name, timeout)
