"""The Kafka clients kbench drives, each as a driver process speaking docs/drivers.md.

``librdkafka`` is the C driver behind ``python -m kbench.kafka.worker``; ``java`` is the Apache
Kafka Java client behind :mod:`kbench.kafka.java_driver`; ``kafka-go`` (segmentio/kafka-go) and
``sarama`` (IBM/sarama) are the Go driver of :mod:`kbench.kafka.go_driver`.  A client joins by
adding its command line to :func:`driver_command`, its property names to :func:`producer_props`
and what it cannot express to :func:`cell_refusal`.  ``librdkafka@V`` is the same C driver on the
librdkafka of another version (:mod:`kbench.kafka.rdk_versions`): it behaves as ``librdkafka``
everywhere (:func:`family`) but in the library its process binds.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Iterable, Mapping

from kbench.kafka import rdk_versions

__all__ = [
    "CLIENTS",
    "DRIVER_UNSET_ENV",
    "GO_CLIENTS",
    "GO_PROPERTIES",
    "PROTOCOL",
    "cell_refusal",
    "client_problem",
    "check_properties",
    "codec_property",
    "driver_command",
    "driver_env",
    "family",
    "level_problem",
    "librdkafka_property_names",
    "producer_props",
    "unknown_property",
]

#: Version of the driver protocol (docs/drivers.md) the runner speaks.
PROTOCOL = 1
CLIENTS = ("librdkafka", "java", "kafka-go", "sarama")
#: The clients of the Go driver (kbench/kafka/go).
GO_CLIENTS = ("kafka-go", "sarama")
#: librdkafka's levels are checked against the linked library by the plan
#: (kbench.engine.plan); Java has per-codec ranges (compression.gzip.level 1-9,
#: compression.lz4.level 1-17, compression.zstd.level up to 22) it enforces itself; the Go
#: clients' limits are in :func:`cell_refusal`.
#: The Go clients' levels: gzip 1-9 and zstd 1-22 (klauspost/compress maps a zstd level to one
#: of its four encoder levels); their lz4 and snappy codecs take none.
GO_LEVELS = {"gzip": (1, 9), "zstd": (1, 22)}
#: The property names the Go driver maps, per client (kbench/kafka/go: kafkago.go, sarama.go;
#: either role takes both roles' names and ignores the other's); it refuses any other name.
GO_PROPERTIES: dict[str, tuple[str, ...]] = {
    "kafka-go": (
        "bootstrap.servers",
        "group.id",
        *("Compression", "CompressionLevel", "BatchSize", "BatchBytes", "BatchTimeout", "RequiredAcks"),
        *("MaxAttempts", "ReadTimeout", "WriteTimeout", "Balancer"),
        *("MinBytes", "MaxBytes", "MaxWait", "QueueCapacity"),
    ),
    "sarama": (
        "bootstrap.servers",
        "group.id",
        *("Version", "ClientID", "ChannelBufferSize", "Net.MaxOpenRequests"),
        *("Producer.Compression", "Producer.CompressionLevel", "Producer.Flush.Bytes", "Producer.Flush.Messages"),
        *("Producer.Flush.Frequency", "Producer.Flush.MaxMessages", "Producer.RequiredAcks"),
        *("Producer.MaxMessageBytes", "Producer.Retry.Max", "Producer.Idempotent", "Producer.Partitioner"),
        *("Consumer.Fetch.Min", "Consumer.Fetch.Default", "Consumer.Fetch.Max", "Consumer.MaxWaitTime"),
    ),
}
#: The size kafka-go counts for a message with an empty key and value (Message.size(): 4 + 1 + 1
#: + 4 + 4 + 8 bytes), against its BatchBytes.
KAFKA_GO_MIN_MESSAGE = 22


#: Variables a driver process is started without.  A Dask nanny sets them for its worker processes
#: (distributed's ``nanny.pre-spawn-environ``) and leaves them in its own environment, so a driver
#: started on a Dask worker, or after a ``LocalCluster`` in the same process, would inherit them:
#: ``MALLOC_TRIM_THRESHOLD_=65536`` alone doubled a zstd producer's CPU-s per GB on the 2-vCPU VM
#: (glibc hands freed codec buffers back to the kernel after every batch).  Drivers on every host
#: run with the allocator's and thread pools' defaults, so their CPU figures compare.
DRIVER_UNSET_ENV = ("MALLOC_TRIM_THRESHOLD_", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def driver_env(base: Mapping[str, str], pythonpath: str | None = None) -> dict[str, str]:
    """The environment of a driver process: ``base`` without :data:`DRIVER_UNSET_ENV`, and with
    ``pythonpath`` (when given) first on ``PYTHONPATH``."""
    env = {k: v for k, v in base.items() if k not in DRIVER_UNSET_ENV}
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join([pythonpath, env.get("PYTHONPATH", "")])
    return env


def family(client: str) -> str:
    """The client a name is a version of: ``librdkafka`` for ``librdkafka@2.16.1``, else the name."""
    return client.partition("@")[0]


def client_problem(client: str) -> str | None:
    """None when kbench can run ``client``, else why not in one line: an unknown name lists the
    clients, an unknown ``librdkafka@V`` the librdkafka versions installed."""
    name, version = rdk_versions.split(client)
    if name not in CLIENTS:
        return f"unknown client '{client}'; use one of {', '.join(CLIENTS)}, or librdkafka@VERSION"
    if version is not None:
        if name != rdk_versions.SYSTEM:
            return f"client '{client}': only librdkafka takes a version (librdkafka@VERSION)"
        try:
            rdk_versions.locate(version)
        except ValueError as e:
            return str(e)
    return None


def driver_command(client: str) -> list[str]:
    """The command line of one driver process for ``client``."""
    if client == "librdkafka":
        # -P: the kbench on PYTHONPATH or installed, never a copy in the current directory
        return [sys.executable, "-P", "-m", "kbench.kafka.worker"]
    name, version = rdk_versions.split(client)
    if name == rdk_versions.SYSTEM and version:  # the worker on that version's library
        return [sys.executable, "-P", "-m", "kbench.kafka.rdk_launch", version]
    if client == "java":
        from kbench.kafka import java_driver

        return java_driver.command()
    if client in GO_CLIENTS:
        from kbench.kafka import go_driver

        return go_driver.command(client)
    raise ValueError(f"unknown client '{client}'; use one of {', '.join(CLIENTS)}")


def producer_props(
    client: str,
    base: Mapping[str, str],
    codec: str,
    level: int | None,
    batch_size: int,
    linger_ms: float,
    acks: str,
) -> dict[str, str]:
    """The producer properties of one cell in ``client``'s own names (docs/drivers.md section 2.1).
    Raises ValueError for a cell the client cannot express (:func:`cell_refusal`)."""
    if client in GO_CLIENTS:
        why = cell_refusal(client, codec, level, batch_size, linger_ms, acks)
        if why is not None:
            raise ValueError(why)
        return _go_props(client, base, codec, level, batch_size, linger_ms, acks)
    props = {
        **base,
        "compression.type": codec,
        "batch.size": str(batch_size),
        "linger.ms": f"{linger_ms:g}",
        "acks": acks,
    }
    if family(client) == "librdkafka":
        props["statistics.interval.ms"] = "1000"
        if level is not None:
            props["compression.level"] = str(level)
    elif level is not None and codec in ("gzip", "lz4", "zstd"):
        props[f"compression.{codec}.level"] = str(level)
    # Java takes linger.ms as a whole number of ms
    if client == "java":
        props["linger.ms"] = str(int(round(linger_ms)))
    return props


def codec_property(client: str) -> str:
    """The name of ``client``'s compression-codec property (``kbench produce --codec``)."""
    return {"kafka-go": "Compression", "sarama": "Producer.Compression"}.get(client, "compression.type")


def cell_refusal(
    client: str, codec: str, level: int | None, batch_size: int, linger_ms: float, acks: str
) -> str | None:
    """Why ``client`` cannot express a cell, or None when it can.  The plan refuses such a cell
    at load (never a setting silently dropped); librdkafka's levels are checked by the plan
    against the linked library, Java's by the Java client."""
    if client not in GO_CLIENTS:
        return None
    if level is not None:
        rng = GO_LEVELS.get(codec)
        if rng is None:
            return f"{client} has no compression level for {codec} (its {codec} codec takes none); use {codec} without a level"
        lo, hi = rng
        if not lo <= level <= hi:
            return f"{client} takes {codec} levels {lo}..{hi}, not {level}"
    if linger_ms <= 0:
        if client == "kafka-go":
            return "kafka-go takes BatchTimeout 0 as its default of 1 s, so linger_ms = 0 cannot be expressed; give linger_ms > 0"
        return (
            "sarama never flushes a partly filled batch when Producer.Flush.Frequency is 0 and "
            "Producer.Flush.Bytes is set, so linger_ms = 0 cannot be expressed; give linger_ms > 0"
        )
    if batch_size < 1:
        return f"{client} needs batch_size >= 1"
    if acks not in ("0", "1", "all", "-1"):
        return f"{client} takes acks 0, 1 or all, not {acks}"
    return None


def _go_props(
    client: str, base: Mapping[str, str], codec: str, level: int | None, batch_size: int, linger_ms: float, acks: str
) -> dict[str, str]:
    """A cell in kafka-go's Writer field names or sarama.Config's field paths."""
    linger = f"{linger_ms:g}ms"
    if client == "kafka-go":
        # BatchBytes caps a batch in bytes (message sizes before compression) like batch.size;
        # BatchSize (a count, default 100) is the most messages BatchBytes can hold, so the bytes
        # bind first.  Not more: the Writer allocates BatchSize message slots per batch.
        props = {
            **base,
            "Compression": codec,
            "BatchBytes": str(batch_size),
            "BatchSize": str(batch_size // KAFKA_GO_MIN_MESSAGE + 1),
            "BatchTimeout": linger,
            "RequiredAcks": acks,
        }
        if level is not None:
            props["CompressionLevel"] = str(level)
        return props
    props = {
        **base,
        "Producer.Compression": codec,
        "Producer.Flush.Bytes": str(batch_size),
        "Producer.Flush.Frequency": linger,
        "Producer.RequiredAcks": acks,
    }
    if level is not None:
        props["Producer.CompressionLevel"] = str(level)
    return props


def librdkafka_property_names() -> tuple[str, ...]:
    """Every property name the linked librdkafka lists (its CONFIGURATION.md table), sorted."""
    from kbench.kafka.drivers import client_properties_table

    names = set()
    for line in client_properties_table().splitlines():
        name, sep, _ = line.partition("|")
        name = name.strip()
        if sep and name and name != "Property" and not name.startswith("-"):
            names.add(name)
    return tuple(sorted(names))


def unknown_property(client: str, name: str, known: Iterable[str] | None = None) -> str | None:
    """None when ``client`` takes a property called ``name``, else why not with the nearest known
    name.  librdkafka is asked itself (a conf set of an unknown name fails); the Java client
    ignores names it does not know (with a warning), so no name is refused for it; the Go clients
    take the names the Go driver maps (:data:`GO_PROPERTIES`)."""
    if client in GO_PROPERTIES:
        known_go = GO_PROPERTIES[client]
        if name in known_go:
            return None
        near = difflib.get_close_matches(name, known_go, n=1, cutoff=0.0)
        hint = f"did you mean {near[0]}?" if near else "see docs/drivers.md section 7"
        return f"the {client} driver maps no property '{name}'; {hint}"
    if family(client) != "librdkafka":
        return None
    from kbench.kafka.drivers import client_property_known, librdkafka_version

    names = tuple(known) if known is not None else librdkafka_property_names()
    if name in names or client_property_known(name):
        return None
    lower = {n.lower(): n for n in names}
    near = difflib.get_close_matches(name.lower(), list(lower), n=1, cutoff=0.0)
    hint = f"did you mean {lower[near[0]]}?" if near else "see librdkafka's CONFIGURATION.md"
    return f"librdkafka {librdkafka_version()} has no property '{name}'; {hint}"


def check_properties(where: str, props: Mapping[str, object], clients: Iterable[str]) -> None:
    """Refuse a client property no client of ``clients`` would take (``where``: ``-X`` or
    ``client``, for the message), before anything is written: one line naming the property and the
    nearest name the client knows.  A ValueError."""
    used = {family(c) for c in clients}
    sep = " " if where == "-X" else "."
    for go in sorted(used.intersection(GO_PROPERTIES)):  # the Go driver refuses any name it does not map
        for k in props:
            why = unknown_property(go, k)
            if why is not None:
                raise ValueError(f"{where}{sep}{k}: {why}")
    if "librdkafka" not in used:
        return
    names = librdkafka_property_names()
    for k in props:
        why = unknown_property("librdkafka", k, names)
        if why is not None:
            raise ValueError(f"{where}{sep}{k}: {why}")


def level_problem(client: str, codec: str, level: int | None) -> str | None:
    """None when ``client`` takes ``codec`` at ``level``, else the range it takes (asked of the
    linked librdkafka itself; the Java client enforces KIP-390's ranges on its own)."""
    if family(client) != "librdkafka" or level is None:
        return None
    from kbench.kafka.drivers import client_level_range, client_version

    lo, hi = client_level_range(codec)
    if lo <= level <= hi:
        return None
    return f"{client_version()} accepts compression.level {lo}..{hi} for {codec}"
