"""A local Apache Kafka (KRaft) cluster on loopback: start, wait until ready, describe, stop.

Each node runs in combined mode (``process.roles=broker,controller``): one JVM per node, so a
3-node cluster is 3 JVMs, which is what a 2-core machine can afford.  The controller quorum is
static (``controller.quorum.voters``), storage is formatted with ``kafka.tools.StorageTool``,
and readiness means every node is registered in the cluster metadata as seen by librdkafka.

Layout of a cluster directory::

    <dir>/cluster.json            state file: bootstrap servers, pids, ports, dirs
    <dir>/log4j2.xml              broker logging: files only, nothing on the console
    <dir>/node-<id>/server.properties
    <dir>/node-<id>/data/         Kafka's log.dirs (segments) and KRaft metadata
    <dir>/node-<id>/logs/         server.log, controller.log, state-change.log, stdout.log

By default every node listens on 127.0.0.1 and is started with ``subprocess.Popen``; ``hosts``
gives each node its own listen/advertised address (the controller quorum then uses those
addresses), ``launcher`` starts each node's process some other way (kbench.testbed runs each on
an emulated host), and ``reach`` runs the readiness check where those addresses can be reached.

``stop()``/``down`` signal only pids recorded in the state file whose command line still names
that node's ``server.properties`` (a recycled pid is never touched).
"""

from __future__ import annotations

import base64
import ctypes
import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from kbench.kafka import admin, kafka_dist

__all__ = [
    "BrokerInfo",
    "ClusterError",
    "ClusterState",
    "DEFAULT_BROKER_CONFIG",
    "DEFAULT_HEAP",
    "DEFAULT_PORT_BASE",
    "Launcher",
    "LocalCluster",
    "default_dir",
    "down",
    "read_state",
    "status",
]

#: Broker JVM heap (-Xms = -Xmx): small, the page cache does the real work.
DEFAULT_HEAP = "384m"
#: Pinned ports for the CLI: node i listens on DEFAULT_PORT_BASE + i (clients) and
#: DEFAULT_PORT_BASE + 100 + i (controller).  ``port_base=0`` picks free ports instead.
DEFAULT_PORT_BASE = 19092
STATE_FILE = "cluster.json"
LOOPBACK = "127.0.0.1"

_T = TypeVar("_T")
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
}

_JVM_OPTS = (
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
)

_LOG4J2 = """<?xml version="1.0" encoding="UTF-8"?>
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


def default_dir() -> Path:
    """Where ``kbench cluster`` keeps its cluster unless ``--dir`` says otherwise."""
    return kafka_dist.cache_root() / "cluster"


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _cluster_id() -> str:
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


def _is_our_process(pid: int, config: str) -> bool:
    """True when pid is alive and its command line names this node's server.properties."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return config.encode() in cmdline and pid_alive(pid)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_PDEATHSIG = 1
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])


def _popen(node_id: int, argv: list[str], kwargs: dict[str, Any]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, **kwargs)


def _here(fn: Callable[[], _T]) -> _T:
    return fn()


def _parse_hosts(hosts: Sequence[str] | None, n: int) -> list[str]:
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


def _parse_heap(heap: str) -> str:
    h = heap.strip().lower()
    if not h or not h[:-1].isdigit() or h[-1] not in "mg":
        raise ClusterError(f"bad heap size '{heap}'; use e.g. 384m or 1g")
    return h


class LocalCluster:
    """A local KRaft cluster of 1 or more combined broker+controller nodes on 127.0.0.1.

    Use as a context manager (``with LocalCluster(brokers=3) as c: c.bootstrap_servers``) or call
    :meth:`start` and :meth:`stop`.  ``port_base=None`` (the default here) picks free ports;
    ``directory=None`` uses a fresh temporary directory removed again by :meth:`stop`.
    With ``die_with_parent`` the brokers get SIGTERM if this Python process dies.
    With ``metrics`` (the default) every broker runs the Prometheus JMX exporter agent on a free
    127.0.0.1 port (``BrokerInfo.metrics_url``), configured to export what kbench reads.

    ``hosts`` (one IPv4 address per node) makes node i listen on, advertise, and run its exporter
    on ``hosts[i-1]`` instead of 127.0.0.1; ``launcher(node_id, argv, popen_kwargs)`` starts a
    node's JVM (default ``subprocess.Popen(argv, **popen_kwargs)``); ``reach(fn)`` runs the
    readiness check ``fn`` where the hosts can be reached (default: here).
    """

    def __init__(
        self,
        brokers: int = 1,
        directory: Path | str | None = None,
        broker_config: Mapping[str, str] | None = None,
        heap: str = DEFAULT_HEAP,
        port_base: int | None = None,
        start_timeout: float = 180.0,
        die_with_parent: bool = True,
        metrics: bool = True,
        hosts: Sequence[str] | None = None,
        launcher: Launcher | None = None,
        reach: Callable[[Callable[[], Any]], Any] | None = None,
    ) -> None:
        if brokers < 1 or brokers > 9:
            raise ClusterError(f"--brokers must be between 1 and 9, got {brokers}")
        self.hosts = _parse_hosts(hosts, brokers)
        self.launcher: Launcher = launcher or _popen
        self.reach: Callable[[Callable[[], Any]], Any] = reach or _here
        self.n = brokers
        self._own_dir = directory is None
        self.heap = _parse_heap(heap)
        self.port_base = port_base
        self.start_timeout = start_timeout
        self.die_with_parent = die_with_parent
        self.metrics = metrics
        self.broker_config = self._merged_config(broker_config or {})
        self._procs: list[subprocess.Popen[bytes]] = []
        self.state: ClusterState | None = None
        # the temporary directory is made only when the cluster starts (nothing is left behind
        # by a LocalCluster that never started)
        self.dir: Path | None = Path(directory) if directory is not None else None

    # ----------------------------------------------------------------- config
    def _merged_config(self, extra: Mapping[str, str]) -> dict[str, str]:
        rf = str(min(3, self.n))
        cfg = dict(DEFAULT_BROKER_CONFIG)
        cfg.update(
            {
                "offsets.topic.replication.factor": rf,
                "transaction.state.log.replication.factor": rf,
                "transaction.state.log.min.isr": "1",
                "share.coordinator.state.topic.replication.factor": rf,
                "share.coordinator.state.topic.min.isr": "1",
                "default.replication.factor": "1",
                "min.insync.replicas": "1",
            }
        )
        for k, v in extra.items():
            if not k or "=" in k or "\n" in str(v):
                raise ClusterError(f"bad broker config '{k}={v}'; give it as key=value")
            cfg[k] = str(v)
        return cfg

    def _ports(self) -> tuple[list[int], list[int]]:
        if self.port_base is None or self.port_base == 0:
            ports = _free_ports(2 * self.n)
            return ports[: self.n], ports[self.n :]
        if not 1024 <= self.port_base <= 65535 - 300:
            raise ClusterError(f"port base {self.port_base} out of range; use 1024..65235, or 0 for free ports")
        client = [self.port_base + i for i in range(self.n)]
        ctrl = [self.port_base + 100 + i for i in range(self.n)]
        for p in client + ctrl:
            if not _port_free(p):
                raise ClusterError(
                    f"port {p} on 127.0.0.1 is already in use; stop what listens there "
                    f"(kbench cluster down?) or choose other ports with --port-base N (0 = free ports)"
                )
        return client, ctrl

    def _metrics_ports(self) -> list[int]:
        """The JMX exporter's port per node: BASE+200+i-1 with pinned ports, else free ones."""
        if not self.port_base:
            return _free_ports(self.n)
        ports = [self.port_base + 200 + i for i in range(self.n)]
        for p in ports:
            if not _port_free(p):
                raise ClusterError(
                    f"port {p} on 127.0.0.1 (broker metrics) is already in use; choose other ports with --port-base N "
                    f"(0 = free ports) or start without the exporter (--no-metrics)"
                )
        return ports

    def _write_node(self, node_id: int, port: int, ctrl_port: int, voters: str) -> tuple[Path, Path, Path]:
        host = self.hosts[node_id - 1]
        assert self.dir is not None
        nd = self.dir / f"node-{node_id}"
        data, logs = nd / "data", nd / "logs"
        data.mkdir(parents=True, exist_ok=True)
        logs.mkdir(parents=True, exist_ok=True)
        props = {
            "process.roles": "broker,controller",
            "node.id": str(node_id),
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://{host}:{port},CONTROLLER://{host}:{ctrl_port}",
            "advertised.listeners": f"PLAINTEXT://{host}:{port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(data),
            **self.broker_config,
        }
        conf = nd / "server.properties"
        conf.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        return conf, data, logs

    # --------------------------------------------------------------- lifecycle
    def start(self) -> ClusterState:
        """Format storage, start every node, and wait until all are registered; returns the state."""
        if self.state is not None:
            raise ClusterError("cluster already started")
        existing = self.dir / STATE_FILE if self.dir is not None else None
        if existing is not None and existing.exists():
            st = read_state(self.dir)
            if any(_is_our_process(b.pid, b.config) for b in st.brokers):
                raise ClusterError(
                    f"a cluster is already running in {self.dir}; stop it first with: kbench cluster down --dir {self.dir}"
                )
            existing.unlink()
        client, ctrl = self._ports()
        if self.dir is None:
            self.dir = Path(tempfile.mkdtemp(prefix="kbench-cluster-"))
        dist = kafka_dist.find()
        java = kafka_dist.java()
        agent = kafka_dist.jmx_exporter_agent() if self.metrics else None
        metrics_ports = self._metrics_ports() if self.metrics else [0] * self.n
        self.dir.mkdir(parents=True, exist_ok=True)
        for old in self.dir.glob("node-*"):
            shutil.rmtree(old)
        voters = ",".join(f"{i}@{self.hosts[i - 1]}:{ctrl[i - 1]}" for i in range(1, self.n + 1))
        log4j = self.dir / "log4j2.xml"
        log4j.write_text(_LOG4J2)
        exporter_conf = self.dir / "jmx-exporter.yaml"
        if agent is not None:
            exporter_conf.write_text(kafka_dist.jmx_exporter_config())
        cid = _cluster_id()
        nodes = [self._write_node(i, client[i - 1], ctrl[i - 1], voters) for i in range(1, self.n + 1)]

        def jcmd(
            main: str, args: Sequence[str], logs: Path, heap: str, metrics_port: int = 0, host: str = LOOPBACK
        ) -> list[str]:
            exporter = [f"-javaagent:{agent}={host}:{metrics_port}:{exporter_conf}"] if metrics_port else []
            return [
                java,
                f"-Xmx{heap}",
                f"-Xms{heap}",
                *_JVM_OPTS,
                *exporter,
                f"-Dlog4j2.configurationFile={log4j}",
                f"-Dkafka.logs.dir={logs}",
                "-cp",
                dist.classpath,
                main,
                *args,
            ]

        # format every node's storage (in parallel: each is one short JVM)
        fmts = [
            subprocess.Popen(
                jcmd("kafka.tools.StorageTool", ["format", "--cluster-id", cid, "--config", str(conf)], logs, "128m"),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
            for conf, _, logs in nodes
        ]
        for p, (conf, _, _) in zip(fmts, nodes):
            try:
                out, _ = p.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
                raise ClusterError(
                    f"formatting storage for {conf} took over 120 s; is the machine overloaded?"
                ) from None
            if p.returncode != 0:
                raise ClusterError(
                    f"kafka-storage format failed for {conf}: {out.decode(errors='replace').strip()[-400:]}"
                )

        preexec = _die_with_parent if self.die_with_parent else None
        brokers: list[BrokerInfo] = []
        try:
            for i, (conf, data, logs) in enumerate(nodes, start=1):
                out = open(logs / "stdout.log", "wb")
                try:
                    proc = self.launcher(
                        i,
                        jcmd("kafka.Kafka", [str(conf)], logs, self.heap, metrics_ports[i - 1], self.hosts[i - 1]),
                        {
                            "stdout": out,
                            "stderr": subprocess.STDOUT,
                            "stdin": subprocess.DEVNULL,
                            "start_new_session": True,
                            "preexec_fn": preexec,
                            "cwd": self.dir,
                        },
                    )
                finally:
                    out.close()
                self._procs.append(proc)
                brokers.append(
                    BrokerInfo(
                        i,
                        proc.pid,
                        client[i - 1],
                        ctrl[i - 1],
                        str(conf),
                        str(data),
                        str(logs),
                        metrics_ports[i - 1],
                        self.hosts[i - 1],
                    )
                )
            state = ClusterState(
                dir=str(self.dir),
                cluster_id=cid,
                kafka_version=dist.version,
                bootstrap_servers=",".join(b.address for b in brokers),
                brokers=tuple(brokers),
                started_at=time.time(),
                broker_config=dict(self.broker_config),
            )
            (self.dir / STATE_FILE).write_text(state.to_json())
            self.state = state
            self._await_ready(state)
        except BaseException:
            self.stop(keep_dir=True)  # keep the logs the error message points to
            raise
        return state

    def _await_ready(self, state: ClusterState) -> None:
        deadline = time.monotonic() + self.start_timeout
        seen = 0
        last_err = ""
        while time.monotonic() < deadline:
            for b, p in zip(state.brokers, self._procs):
                if p.poll() is not None:
                    raise ClusterError(
                        f"broker {b.node_id} exited with status {p.returncode} during startup: "
                        f"{_tail(Path(b.log_dir) / 'stdout.log') or _tail(Path(b.log_dir) / 'server.log')} "
                        f"(logs in {b.log_dir})"
                    )
            try:
                md = self.reach(lambda: admin.metadata({"bootstrap.servers": state.bootstrap_servers}, timeout=2.0))
                seen = len(md["brokers"])
                if seen == self.n:
                    return
            except admin.KafkaError as e:
                last_err = str(e)
        raise ClusterError(
            f"cluster in {self.dir} not ready after {self.start_timeout:.0f} s ({seen}/{self.n} brokers registered"
            f"{'; ' + last_err if last_err and not seen else ''}); see the logs under {self.dir}/node-*/logs"
        )

    def stop(self, timeout: float = 15.0, keep_dir: bool = False) -> None:
        """Stop the nodes this object started (SIGTERM, then SIGKILL after timeout).

        All nodes get SIGTERM at once.  In a multi-node KRaft cluster the last nodes lose the
        controller quorum and cannot finish a controlled shutdown, so they are killed after
        ``timeout`` seconds; the page cache keeps what they wrote.
        """
        procs, self._procs = self._procs, []
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for p in procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.state = None
        if self.dir is None:
            return
        (self.dir / STATE_FILE).unlink(missing_ok=True)
        if self._own_dir and not keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------- accessors
    def _st(self) -> ClusterState:
        if self.state is None:
            raise ClusterError("cluster not started; call start() or use it as a context manager")
        return self.state

    @property
    def bootstrap_servers(self) -> str:
        return self._st().bootstrap_servers

    @property
    def brokers(self) -> tuple[BrokerInfo, ...]:
        return self._st().brokers

    @property
    def pids(self) -> list[int]:
        return self._st().pids

    @property
    def log_dirs(self) -> list[str]:
        """Each broker's Kafka data directory (``log.dirs``: the topic segments)."""
        return [b.data_dir for b in self._st().brokers]

    def client_props(self, **extra: str) -> dict[str, str]:
        """librdkafka properties to reach this cluster, plus ``extra``."""
        return {"bootstrap.servers": self.bootstrap_servers, **extra}


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
    return {b.node_id: _is_our_process(b.pid, b.config) for b in st.brokers}


def down(directory: Path | str, timeout: float = 15.0) -> list[int]:
    """Stop the processes recorded in ``directory``'s state file; returns the pids signalled."""
    st = read_state(directory)
    ours = [b for b in st.brokers if _is_our_process(b.pid, b.config)]
    for b in ours:
        os.kill(b.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for b in ours:
        while pid_alive(b.pid) and time.monotonic() < deadline:
            time.sleep(0.1)  # not our child: poll its liveness
        if pid_alive(b.pid) and _is_our_process(b.pid, b.config):
            os.kill(b.pid, signal.SIGKILL)
    (Path(directory) / STATE_FILE).unlink(missing_ok=True)
    return [b.pid for b in ours]
