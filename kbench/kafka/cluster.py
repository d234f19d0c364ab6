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

import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kbench.kafka import admin, kafka_dist
from kbench.kafka.cluster_state import (
    DEFAULT_BROKER_CONFIG,
    DEFAULT_HEAP,
    JVM_OPTS,
    LOG4J2_CONFIG,
    LOOPBACK,
    STATE_FILE,
    BrokerInfo,
    ClusterError,
    ClusterState,
    Launcher,
    call_here,
    die_with_parent,
    free_ports,
    is_our_process,
    new_cluster_id,
    parse_heap,
    parse_hosts,
    popen_here,
    port_free,
    read_state,
    tail_of,
)

__all__ = ["LocalCluster"]  # its facts, state file and errors: kbench.kafka.cluster_state


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
        self.hosts = parse_hosts(hosts, brokers)
        self.launcher: Launcher = launcher or popen_here
        self.reach: Callable[[Callable[[], Any]], Any] = reach or call_here
        self.n = brokers
        self._own_dir = directory is None
        self.heap = parse_heap(heap)
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
            ports = free_ports(2 * self.n)
            return ports[: self.n], ports[self.n :]
        if not 1024 <= self.port_base <= 65535 - 300:
            raise ClusterError(f"port base {self.port_base} out of range; use 1024..65235, or 0 for free ports")
        client = [self.port_base + i for i in range(self.n)]
        ctrl = [self.port_base + 100 + i for i in range(self.n)]
        for p in client + ctrl:
            if not port_free(p):
                raise ClusterError(
                    f"port {p} on 127.0.0.1 is already in use; stop what listens there "
                    f"(kbench cluster down?) or choose other ports with --port-base N (0 = free ports)"
                )
        return client, ctrl

    def _metrics_ports(self, taken: Sequence[int]) -> list[int]:
        """The JMX exporter's port per node: BASE+200+i-1 with pinned ports, else free ones (none of
        ``taken``, the listeners' ports)."""
        if not self.port_base:
            return free_ports(self.n, exclude=taken)
        ports = [self.port_base + 200 + i for i in range(self.n)]
        for p in ports:
            if not port_free(p):
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
            assert self.dir is not None  # existing is set only when dir is
            st = read_state(self.dir)
            if any(is_our_process(b.pid, b.config) for b in st.brokers):
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
        metrics_ports = self._metrics_ports(client + ctrl) if self.metrics else [0] * self.n
        self.dir.mkdir(parents=True, exist_ok=True)
        for old in self.dir.glob("node-*"):
            shutil.rmtree(old)
        voters = ",".join(f"{i}@{self.hosts[i - 1]}:{ctrl[i - 1]}" for i in range(1, self.n + 1))
        log4j = self.dir / "log4j2.xml"
        log4j.write_text(LOG4J2_CONFIG)
        exporter_conf = self.dir / "jmx-exporter.yaml"
        if agent is not None:
            exporter_conf.write_text(kafka_dist.jmx_exporter_config())
        cid = new_cluster_id()
        nodes = [self._write_node(i, client[i - 1], ctrl[i - 1], voters) for i in range(1, self.n + 1)]

        def jcmd(
            main: str, args: Sequence[str], logs: Path, heap: str, metrics_port: int = 0, host: str = LOOPBACK
        ) -> list[str]:
            exporter = [f"-javaagent:{agent}={host}:{metrics_port}:{exporter_conf}"] if metrics_port else []
            return [
                java,
                f"-Xmx{heap}",
                f"-Xms{heap}",
                *JVM_OPTS,
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

        preexec = die_with_parent if self.die_with_parent else None
        brokers: list[BrokerInfo] = []
        try:
            for i, (conf, data, logs) in enumerate(nodes, start=1):
                stdout_log = open(logs / "stdout.log", "wb")
                try:
                    proc = self.launcher(
                        i,
                        jcmd("kafka.Kafka", [str(conf)], logs, self.heap, metrics_ports[i - 1], self.hosts[i - 1]),
                        {
                            "stdout": stdout_log,
                            "stderr": subprocess.STDOUT,
                            "stdin": subprocess.DEVNULL,
                            "start_new_session": True,
                            "preexec_fn": preexec,
                            "cwd": self.dir,
                        },
                    )
                finally:
                    stdout_log.close()
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
                        f"{tail_of(Path(b.log_dir) / 'stdout.log') or tail_of(Path(b.log_dir) / 'server.log')} "
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
