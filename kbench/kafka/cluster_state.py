"""A local cluster's facts and files: its defaults, the state file a running cluster leaves
(read, status, stop), its errors, and the process and port helpers the cluster starts brokers with."""

from __future__ import annotations

import base64
import ctypes
import ipaddress
import json
import os
import random
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from kbench.model.paths import default_cluster_dir as default_dir

__all__ = [
    "BrokerInfo",
    "ClusterError",
    "ClusterState",
    "DEFAULT_BROKER_CONFIG",
    "DEFAULT_HEAP",
    "DEFAULT_PORT_BASE",
    "JVM_OPTS",
    "LOOPBACK",
    "Launcher",
    "STATE_FILE",
    "T",
    "LOG4J2_CONFIG",
    "call_here",
    "default_dir",
    "die_with_parent",
    "down",
    "free_ports",
    "is_our_process",
    "new_cluster_id",
    "parse_heap",
    "parse_hosts",
    "pid_alive",
    "popen_here",
    "port_free",
    "read_state",
    "status",
    "tail_of",
]


#: Broker JVM heap (-Xms = -Xmx): small, the page cache does the real work.
DEFAULT_HEAP = "384m"


#: Pinned ports for the CLI: node i listens on DEFAULT_PORT_BASE + i (clients) and
#: DEFAULT_PORT_BASE + 100 + i (controller).  ``port_base=0`` picks free ports instead.
DEFAULT_PORT_BASE = 19092


STATE_FILE = "cluster.json"


LOOPBACK = "127.0.0.1"


T = TypeVar("T")


#: Starts one node's process: (node id, argv, Popen keyword arguments) -> the process.
Launcher = Callable[[int, list[str], dict[str, Any]], "subprocess.Popen[bytes]"]


#: Broker settings kbench pins (any can be overridden with --broker-config k=v).
DEFAULT_BROKER_CONFIG: dict[str, str] = {
    "compression.type": "producer",
    "auto.create.topics.enable": "false",
    "num.network.threads": "2",
    "num.io.threads": "2",
    "background.threads": "2",
    "num.replica.fetchers": "1",
    "num.recovery.threads.per.data.dir": "1",
    "log.cleaner.threads": "1",
    "log.cleaner.dedupe.buffer.size": "8388608",
    "offsets.topic.num.partitions": "3",
    "group.initial.rebalance.delay.ms": "0",
    "share.coordinator.state.topic.num.partitions": "1",
    "log.retention.hours": "24",
    "log.segment.bytes": "268435456",
    # a deleted topic's files go at once (the broker's default for the topic-level
    # file.delete.delay.ms waits 60 s), so that removing one repetition's gigabytes (and dropping
    # their page cache) happens before the next one runs
    "log.segment.delete.delay.ms": "0",
    # Kafka's log tasks (the deletion among them) start this long after the broker: 0, so that a
    # fresh cluster's first deleted topic also goes at once (its default is 30 s)
    "log.initial.task.delay.ms": "0",
}


JVM_OPTS = (
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
)


LOG4J2_CONFIG = """<?xml version="1.0" encoding="UTF-8"?>
<!-- kbench: broker logs go to files under each node's logs/ directory, never to the console. -->
<Configuration status="WARN">
  <Appenders>
    <RollingFile name="server" fileName="${sys:kafka.logs.dir}/server.log"
                 filePattern="${sys:kafka.logs.dir}/server.log.%i">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
      <SizeBasedTriggeringPolicy size="50 MB"/>
      <DefaultRolloverStrategy max="2"/>
    </RollingFile>
    <File name="controller" fileName="${sys:kafka.logs.dir}/controller.log">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
    </File>
    <File name="stateChange" fileName="${sys:kafka.logs.dir}/state-change.log">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
    </File>
  </Appenders>
  <Loggers>
    <Root level="INFO"><AppenderRef ref="server"/></Root>
    <Logger name="kafka.controller" level="INFO" additivity="false"><AppenderRef ref="controller"/></Logger>
    <Logger name="org.apache.kafka.controller" level="INFO" additivity="false"><AppenderRef ref="controller"/></Logger>
    <Logger name="state.change.logger" level="INFO" additivity="false"><AppenderRef ref="stateChange"/></Logger>
    <Logger name="kafka.request.logger" level="WARN"/>
    <Logger name="kafka.network.RequestChannel$" level="WARN"/>
    <Logger name="org.apache.kafka.clients" level="WARN"/>
  </Loggers>
</Configuration>
"""


class ClusterError(RuntimeError):
    """The cluster could not be started, reached or stopped; the message says why and what to do."""


@dataclass(frozen=True)
class BrokerInfo:
    """One node of the cluster (broker and controller in one JVM)."""

    node_id: int
    pid: int
    port: int
    controller_port: int
    config: str  # path of server.properties
    data_dir: str  # Kafka's log.dirs: topic partitions' segments
    log_dir: str  # the JVM's log files (server.log, ...)
    metrics_port: int = 0  # the Prometheus JMX exporter's port on the node's host (0: not started with it)
    host: str = LOOPBACK  # the address the node listens on and advertises

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def metrics_url(self) -> str | None:
        """The broker's Prometheus metrics endpoint, when it runs the JMX exporter."""
        return f"http://{self.host}:{self.metrics_port}/metrics" if self.metrics_port else None


@dataclass(frozen=True)
class ClusterState:
    """What ``cluster up`` wrote to ``cluster.json``."""

    dir: str
    cluster_id: str
    kafka_version: str
    bootstrap_servers: str
    brokers: tuple[BrokerInfo, ...]
    started_at: float
    broker_config: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        d = asdict(self)
        d["brokers"] = [asdict(b) for b in self.brokers]
        return json.dumps(d, indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ClusterState:
        d = json.loads(text)
        d["brokers"] = tuple(BrokerInfo(**b) for b in d["brokers"])
        return cls(**d)

    @property
    def pids(self) -> list[int]:
        return [b.pid for b in self.brokers]

    @property
    def metrics_urls(self) -> list[str]:
        return [b.metrics_url for b in self.brokers if b.metrics_url]


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


#: Lowest port :func:`free_ports` draws (below it: well-known services' registered ports).
FREE_PORT_MIN = 10000
#: Linux's default ephemeral range, when /proc does not say.
EPHEMERAL_DEFAULT = (32768, 60999)


def ephemeral_range(path: Path = Path("/proc/sys/net/ipv4/ip_local_port_range")) -> tuple[int, int]:
    """The kernel's ephemeral port range: the local ports it gives outgoing connections."""
    try:
        lo, hi = (int(x) for x in path.read_text().split())
    except (OSError, ValueError):
        return EPHEMERAL_DEFAULT
    return lo, hi


def free_ports(
    n: int, ephemeral: tuple[int, int] | None = None, exclude: Sequence[int] = (), low: int = FREE_PORT_MIN
) -> list[int]:
    """``n`` distinct ports free on 127.0.0.1, none in ``exclude``, drawn at random from ``low`` up
    and outside the kernel's ephemeral range.

    A port the kernel hands out (bind to port 0) is free only until a broker binds it seconds
    later, after its storage is formatted and its JVM started; meanwhile any outgoing connection
    on the machine can be given the same port as its local end, and the broker then fails with
    "Address already in use" (seen once in CI, 2026-12-06).  Ports outside the ephemeral range
    are never given to outgoing connections, so only another server binding the same port could
    take one.  When the range leaves no room, the kernel's choice as before."""
    lo, hi = ephemeral or ephemeral_range()
    taken = set(exclude)
    candidates = [p for p in range(low, 65536) if not lo <= p <= hi and p not in taken]
    random.SystemRandom().shuffle(candidates)
    out: list[int] = []
    for p in candidates:
        if port_free(p):
            out.append(p)
            if len(out) == n:
                return out
    taken.update(out)  # closed again: the kernel could hand one of them out
    socks: list[socket.socket] = []
    try:
        while len(out) + len(socks) < n:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            if s.getsockname()[1] in taken:
                s.close()
                continue
            socks.append(s)
        return out + [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def new_cluster_id() -> str:
    """A random KRaft cluster id (22 url-safe base64 characters).  One starting with '-'
    would be taken for an option by ``kafka-storage format``, so draw again."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie is dead for our purposes
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat[stat.rindex(")") + 2] != "Z"
    except (OSError, ValueError, IndexError):
        return False


def is_our_process(pid: int, config: str) -> bool:
    """True when pid is alive and its command line names this node's server.properties."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return config.encode() in cmdline and pid_alive(pid)


def die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_PDEATHSIG = 1
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def tail_of(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])


def popen_here(node_id: int, argv: list[str], kwargs: dict[str, Any]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, **kwargs)


def call_here(fn: Callable[[], T]) -> T:
    return fn()


def parse_hosts(hosts: Sequence[str] | None, n: int) -> list[str]:
    if hosts is None:
        return [LOOPBACK] * n
    out = [str(h) for h in hosts]
    if len(out) != n:
        raise ClusterError(f"{len(out)} host addresses for {n} brokers; give one address per broker")
    for h in out:
        try:
            ipaddress.IPv4Address(h)
        except ValueError:
            raise ClusterError(f"bad broker host address {h!r}; give an IPv4 address such as 198.18.0.1") from None
    return out


def parse_heap(heap: str) -> str:
    h = heap.strip().lower()
    if not h or not h[:-1].isdigit() or h[-1] not in "mg":
        raise ClusterError(f"bad heap size '{heap}'; use e.g. 384m or 1g")
    return h


# ------------------------------------------------------------------- CLI side
def read_state(directory: Path | str) -> ClusterState:
    """The state file of the cluster in ``directory``; ClusterError when there is none."""
    f = Path(directory) / STATE_FILE
    if not f.exists():
        raise ClusterError(f"no cluster state in {directory}; start one with: kbench cluster up --dir {directory}")
    try:
        return ClusterState.from_json(f.read_text())
    except (ValueError, TypeError, KeyError) as e:
        raise ClusterError(f"unreadable cluster state {f}: {e}; remove it and start again") from e


def status(directory: Path | str) -> dict[int, bool]:
    """Node id -> whether its process is alive (and still ours)."""
    st = read_state(directory)
    return {b.node_id: is_our_process(b.pid, b.config) for b in st.brokers}


def down(directory: Path | str, timeout: float = 15.0) -> list[int]:
    """Stop the processes recorded in ``directory``'s state file; returns the pids signalled."""
    st = read_state(directory)
    ours = [b for b in st.brokers if is_our_process(b.pid, b.config)]
    for b in ours:
        os.kill(b.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for b in ours:
        while pid_alive(b.pid) and time.monotonic() < deadline:
            time.sleep(0.1)  # not our child: poll its liveness
        if pid_alive(b.pid) and is_our_process(b.pid, b.config):
            os.kill(b.pid, signal.SIGKILL)
    (Path(directory) / STATE_FILE).unlink(missing_ok=True)
    return [b.pid for b in ours]
