"""Type stub of ``kbench._native``, the C extension (csrc/python/*.c over csrc/core/*.c).

Only the wrapper modules listed in docs/architecture.md import it; tests/test_native_stub.py
checks that this stub names exactly what the extension exports.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from typing_extensions import Buffer

# ---------------------------------------------------------------- exceptions

class BatchError(ValueError):
    """A RecordBatch or segment is malformed; ``offset`` is the byte offset of the problem."""

    offset: int | None

class CodecError(ValueError):
    """A codec failed; the message is the library's own."""

class KafkaError(RuntimeError):
    """A Kafka client operation failed; the message is librdkafka's own (secret values scrubbed)."""

# ---------------------------------------------------------------- codecs (py_codecs.c, py_codecbench.c)

def available() -> list[str]: ...
def codec_library_versions() -> dict[str, str]: ...
def compress(data: Buffer, codec: str, level: int | None = None) -> bytes: ...
def decompress(data: Buffer, codec: str, max_size: int) -> bytes: ...
def zstd_cparams(level: int, /) -> dict[str, int]: ...

class CodecBench:
    """Timed codec loops over a corpus cut into blocks (experiment M)."""

    def __init__(self, data: Buffer, block_size: int, codec: str, level: int | None = None) -> None: ...
    def compress(self, loops: int, /) -> int: ...
    def decompress(self, loops: int, /) -> int: ...
    @property
    def compressed_size(self) -> int: ...
    @property
    def input_size(self) -> int: ...
    @property
    def nblocks(self) -> int: ...
    @property
    def level(self) -> int: ...

# ---------------------------------------------------------------- corpus statistics (py_entropy.c)

def entropy(data: Buffer, /) -> float: ...
def lenprefixed_scan(data: Buffer, max_records: int, max_record: int, /) -> tuple[int, int, int, int]:
    """Walk length-prefixed records without making them: (status, count, at, n), GIL released."""

def lenprefixed_records(data: Buffer, count: int, /) -> list[bytes]:
    """The first ``count`` length-prefixed records of data (after lenprefixed_scan); ValueError on an overrun."""

# ---------------------------------------------------------------- RecordBatch v2 and segments (py_batch.c)

def crc32c(data: Buffer, impl: str | None = None) -> int: ...
def crc32c_impls() -> list[str]: ...
def crc32c_active() -> str: ...
def batch_encode(
    records: Sequence[tuple[bytes | None, bytes | None, int, Sequence[tuple[str | bytes, bytes | None]]]],
    codec: str,
    level: int | None,
    base_offset: int,
    partition_leader_epoch: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    transactional: bool,
    librdkafka_framing: bool,
    /,
) -> tuple[bytes, str]: ...
def batch_decode(data: Buffer, max_uncompressed: int, verify_crc: bool = True) -> tuple[dict[str, Any], list[Any]]: ...
def segment_scan(
    data: Buffer, decompress: bool = True, verify_crc: bool = True, max_uncompressed: int = ...
) -> list[tuple[Any, ...]]: ...
def segment_scan_file(
    path: str,
    decompress: bool = True,
    verify_crc: bool = True,
    max_uncompressed: int = ...,
    start: int = 0,
    max_rows: int = 0,
) -> tuple[list[tuple[Any, ...]], int | None]: ...

# ---------------------------------------------------------------- simulated transport (py_sim.c)

def murmur2(data: Buffer, /) -> int: ...
def partition_for_key(key: Buffer, partitions: int, /) -> int: ...
def sim_run(*args: Any) -> dict[str, Any]: ...

# ---------------------------------------------------------------- clock and histogram (py_histogram.c)

HISTOGRAM_MAX_NS: int

def monotonic_ns() -> int: ...
def histogram_record_cost(n: int = 10_000_000, with_clock: bool = False) -> float: ...

class Histogram:
    """Log-linear latency histogram in ns (3 significant digits, 1 ns .. 2^36-1 ns)."""

    def __init__(self) -> None: ...
    def record(self, ns: int, /) -> None: ...
    def merge(self, other: Histogram, /) -> None: ...
    def percentile(self, p: float, /) -> int | None: ...
    def buckets(self) -> list[tuple[int, int, int]]: ...
    def encode(self) -> bytes: ...
    @classmethod
    def decode(cls, data: bytes, /) -> Histogram: ...
    def reset(self) -> None: ...
    @property
    def count(self) -> int: ...
    @property
    def underflow(self) -> int: ...
    @property
    def overflow(self) -> int: ...
    @property
    def min(self) -> int | None: ...
    @property
    def max(self) -> int | None: ...
    @property
    def mean(self) -> float | None: ...

# ---------------------------------------------------------------- Kafka client (py_kafka_util.c, py_drivers.c, py_admin.c)

rdkafka_version: str
rdkafka_features: str

class Producer:
    """The C producer loop (see kbench.kafka.drivers)."""

    def __init__(
        self,
        props: Mapping[str, object],
        topic: str,
        payload: Buffer,
        offsets: Buffer,
        mode: str = "saturated",
        rate: float = 0,
        count: int = 0,
        duration: float = 0,
        keys: str = "none",
        nkeys: int = 0,
        partition: int = -1,
        run_id: int = 0,
        stats_path: str | None = None,
        flush_timeout: float = 30,
        connect_timeout: float = 10,
        header_sample: int = 1,
        tick: float = 0.002,
        cpu_skip: float = -1.0,
        seq_base: int = 0,
        interval: float = 0,
        latency_skip: float = 0,
    ) -> None: ...
    def run(self) -> dict[str, Any]: ...
    def stop(self) -> None: ...

class Consumer:
    """The C consumer loop (see kbench.kafka.drivers)."""

    def __init__(
        self,
        props: Mapping[str, object],
        topic: str,
        run_id: int = 0,
        expected: int = 0,
        max_records: int = 0,
        timeout: float = 60,
        connect_timeout: float = 10,
        header_sample: int = 1,
        group: bool = False,
        from_beginning: bool = False,
        interval: float = 0,
        latency_skip: float = 0,
        latency_from_seq: int = 0,
        start: str = "end",
        start_value: int = 0,
        cpu_window: bool = False,
        hold: bool = False,
    ) -> None: ...
    def run(self) -> dict[str, Any]: ...
    def stop(self) -> None: ...
    def release(self) -> None: ...
    @property
    def ready(self) -> bool: ...

def client_level_range(codec: str, /) -> tuple[int, int]:
    """The compression.level values the linked librdkafka accepts for codec (ValueError if unknown)."""

def client_property_known(name: str, /) -> bool:
    """Whether the linked librdkafka knows the property (a conf set of an unknown name fails)."""

def client_properties_table() -> str:
    """librdkafka's table of every property it knows (rd_kafka_conf_properties_show)."""

def metadata(props: dict[str, object], timeout: float = 10.0) -> dict[str, Any]: ...
def create_topic(
    props: dict[str, object],
    name: str,
    partitions: int = 1,
    replication_factor: int = 1,
    configs: Mapping[str, object] | None = None,
    timeout: float = 30.0,
) -> None: ...
def delete_topic(props: dict[str, object], name: str, timeout: float = 30.0) -> None: ...
def describe_topic_configs(
    props: dict[str, object], name: str, timeout: float = 30.0
) -> dict[str, tuple[str | None, str]]: ...

# ---------------------------------------------------------------- the secret rule (py_secret.c)

REDACTED: str
SECRET_MIN_SCRUB_LEN: int
SECRET_NAMES: tuple[str, ...]
SECRET_WORDS: tuple[str, ...]

def is_secret_property(name: str, /) -> bool: ...

# ---------------------------------------------------------------- /proc CPU counters (py_procstat.c)

def proc_snapshot(
    pids: Sequence[int], threads: bool = False
) -> tuple[int, dict[str, float] | None, list[tuple[int, int | None, str | None, float | None, float | None]]]: ...

class ProcSampler:
    """Samples /proc CPU counters in a C thread."""

    def __init__(self, pids: Sequence[int], interval: float = 1.0, max_samples: int = 1000000) -> None: ...
    def start(self) -> None: ...
    def stop(
        self,
    ) -> list[
        tuple[int, dict[str, float] | None, list[tuple[int, int | None, str | None, float | None, float | None]]]
    ]: ...

# ---------------------------------------------------------------- topic sample (py_sample.c)

def sample_records(
    props: dict[str, object], topic: str, max_records: int, max_bytes: int = ..., timeout: float = ...
) -> dict[str, Any]:
    """Read up to ``max_records`` records of ``topic`` from the start of each partition: ``records``
    as (partition, offset, key, value) tuples, ``partitions``, ``available``, ``truncated``, ``timed_out``."""
