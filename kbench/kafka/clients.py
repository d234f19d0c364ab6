"""The Kafka clients kbench drives, each as a driver process speaking docs/drivers.md.

``librdkafka`` is the C driver behind ``python -m kbench.kafka.worker``; ``java`` is the Apache
Kafka Java client behind :mod:`kbench.kafka.java_driver`.  A third client joins by adding its
command line to :func:`driver_command` and its property names to :func:`producer_props`.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Iterable, Mapping

__all__ = [
    "CLIENTS",
    "DRIVER_UNSET_ENV",
    "PROTOCOL",
    "check_properties",
    "driver_command",
    "driver_env",
    "level_problem",
    "librdkafka_property_names",
    "producer_props",
    "unknown_property",
]

#: Version of the driver protocol (docs/drivers.md) the runner speaks.
PROTOCOL = 1
CLIENTS = ("librdkafka", "java")
#: librdkafka's levels are checked against the linked library by the plan
#: (kbench.engine.plan); Java has per-codec ranges (compression.gzip.level 1-9,
#: compression.lz4.level 1-17, compression.zstd.level up to 22) it enforces itself.


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


def driver_command(client: str) -> list[str]:
    """The command line of one driver process for ``client``."""
    if client == "librdkafka":
        return [sys.executable, "-m", "kbench.kafka.worker"]
    if client == "java":
        from kbench.kafka import java_driver

        return java_driver.command()
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
    """The producer properties of one cell in ``client``'s own names."""
    props = {
        **base,
        "compression.type": codec,
        "batch.size": str(batch_size),
        "linger.ms": f"{linger_ms:g}",
        "acks": acks,
    }
    if client == "librdkafka":
        props["statistics.interval.ms"] = "1000"
        if level is not None:
            props["compression.level"] = str(level)
    elif level is not None and codec in ("gzip", "lz4", "zstd"):
        props[f"compression.{codec}.level"] = str(level)
    # Java takes linger.ms as a whole number of ms
    if client == "java":
        props["linger.ms"] = str(int(round(linger_ms)))
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
    ignores names it does not know (with a warning), so no name is refused for it."""
    if client != "librdkafka":
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
    used = set(clients)
    if "librdkafka" not in used:
        return
    names = librdkafka_property_names()
    for k in props:
        why = unknown_property("librdkafka", k, names)
        if why is not None:
            sep = " " if where == "-X" else "."
            raise ValueError(f"{where}{sep}{k}: {why}")


def level_problem(client: str, codec: str, level: int | None) -> str | None:
    """None when ``client`` takes ``codec`` at ``level``, else the range it takes (asked of the
    linked librdkafka itself; the Java client enforces KIP-390's ranges on its own)."""
    if client != "librdkafka" or level is None:
        return None
    from kbench.kafka.drivers import client_level_range, client_version

    lo, hi = client_level_range(codec)
    if lo <= level <= hi:
        return None
    return f"{client_version()} accepts compression.level {lo}..{hi} for {codec}"
