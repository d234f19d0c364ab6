"""A bounded sample of a topic's real records: the corpus whose ratio matters to its owner.

:func:`sample` reads up to ``count`` records from the beginning of every partition of a topic
(up to the high watermarks seen when it starts, keys and values byte for byte) through
librdkafka in C (``_native.sample_records``), with the same client properties as every other
kbench client (security settings pass verbatim; librdkafka's messages have secret values
redacted).  Records come back ordered by (partition, offset), so a sample is reproducible.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kbench import _native

__all__ = ["Sample", "SampledRecord", "sample"]

#: Bytes of keys + values a sample keeps at most unless told otherwise.
DEFAULT_MAX_BYTES = 256 << 20


@dataclass(frozen=True)
class SampledRecord:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


@dataclass(frozen=True)
class Sample:
    topic: str
    records: tuple[SampledRecord, ...]
    partitions: int
    available: int  # records between the low and high watermarks when the sample started
    truncated: bool  # stopped at max_bytes
    timed_out: bool  # stopped at the timeout before reaching count or the watermarks

    @property
    def values(self) -> list[bytes]:
        """The values, a null value as empty bytes (what a corpus holds)."""
        return [r.value or b"" for r in self.records]

    @property
    def keys(self) -> list[bytes]:
        return [r.key or b"" for r in self.records]

    @property
    def null_values(self) -> int:
        return sum(1 for r in self.records if r.value is None)


def sample(
    props: Mapping[str, str],
    topic: str,
    count: int,
    max_bytes: int = DEFAULT_MAX_BYTES,
    timeout: float = 60.0,
) -> Sample:
    """Read up to ``count`` records of ``topic``; raises ``KafkaError`` when it cannot be read."""
    if count < 1:
        raise ValueError(f"--count must be >= 1, got {count}")
    if max_bytes < 1:
        raise ValueError(f"--max-bytes must be >= 1, got {max_bytes}")
    d = _native.sample_records(dict(props), topic, count, max_bytes=max_bytes, timeout=timeout)
    recs = sorted((SampledRecord(*r) for r in d["records"]), key=lambda r: (r.partition, r.offset))
    return Sample(
        topic, tuple(recs), int(d["partitions"]), int(d["available"]), bool(d["truncated"]), bool(d["timed_out"])
    )
