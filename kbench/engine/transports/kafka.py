"""The real Kafka transport: a local cluster started by kbench, or an existing one.

Per run: a fresh topic (partitions, replication factor, ``compression.type`` as planned,
read back); a consumer process assigned at the start offsets, then a producer process
(:mod:`kbench.kafka.worker`: one process per role, so each role's CPU is its own);
broker CPU from ``/proc/<pid>/stat`` of each local broker and system steal (the request's
steal source, by default ``/proc/stat``) over the steady window (from ``steady_skip_s`` after
the producer starts to the end of the run); each role's CPU window's payload from the
producer's schedule (:mod:`kbench.engine.transports.window`); stored bytes, stored codecs and batch fill from the partitions' segment
files (one replica each) read by :mod:`kbench.model.segment`; bytes on the wire from the
producer's librdkafka statistics.  The topic is deleted after it is measured.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from kbench.engine.plan import TransportDef
from kbench.engine.transports import distributed, remote
from kbench.engine.transports.base import (
    BatchFill,
    BrokerInfo,
    RunRequest,
    RunResult,
    TransportError,
    TransportInfo,
)
from kbench.engine.transports.distributed import DaskPool
from kbench.engine.transports.local_pool import JAVA_PARITY, LocalPool
from kbench.engine.transports.measure import DriverPool, JobInputs, Jobs, StoredInfo, Window, assemble
from kbench.experiments import registry
from kbench.kafka import admin, clients, drivers, procstat
from kbench.model.segment import topic_dirs

__all__ = ["KafkaTransport", "LOCAL_CLUSTER_KINDS"]

#: Transport kinds whose cluster kbench starts on this machine.
LOCAL_CLUSTER_KINDS = ("local", "testbed")
T = TypeVar("T")

#: A broker log dir with less free space than this is reported as full.
LOG_DIR_FULL_BYTES = 1 << 20


@dataclass
class KafkaTransport:
    defn: TransportDef
    kind: str = "kafka"
    cluster: Any = None
    bootstrap: str = ""
    brokers: tuple[BrokerInfo, ...] = ()
    #: the local brokers' log dirs a deleted topic is waited out of (await_removed): only when the
    #: cluster deletes files at once (log.segment.delete.delay.ms <= 1 s; a --broker-config that
    #: delays deletion is not waited for)
    deleted_from: tuple[Path, ...] = ()
    _tmp: tempfile.TemporaryDirectory[str] | None = None
    _local: LocalPool | None = None  # the local driver pool (transports/local_pool.py)
    dask: DaskPool | None = None  # when the plan names Dask workers (transports/distributed.py)
    _probe: remote.MetricsProbe | None = None  # broker metrics over Prometheus (--broker-metrics)
    #: the plan's client properties (with -X): the first contact with a --bootstrap cluster uses its
    #: security properties (security.protocol, sasl.*, ssl.*), as every later client does
    client: Mapping[str, str] = field(default_factory=dict)

    # ------------------------------------------------------------------ lifecycle
    def open(self) -> TransportInfo:
        self._tmp = tempfile.TemporaryDirectory(prefix="kbench-run-")
        self._local = self._make_pool(Path(self._tmp.name))
        if self.defn.kind in LOCAL_CLUSTER_KINDS:
            from kbench.kafka.cluster_state import ClusterError
            from kbench.kafka.kafka_dist import KafkaDistError

            state = None
            for attempt in (1, 2):
                # A second attempt only for a failed storage format: a random cluster id that
                # starts with '-' is taken for an option by kafka-storage (about 1 start in 64).
                self.cluster = self._make_cluster()
                try:
                    state = self.cluster.start()
                    break
                except ClusterError as e:
                    self.cluster.stop()
                    self.cluster = None
                    if attempt == 2 or "kafka-storage format failed" not in str(e):
                        raise TransportError(str(e)) from None
                except KafkaDistError as e:  # Java, Maven or Kafka's jars missing: one line naming what and how
                    self.cluster.stop()
                    self.cluster = None
                    raise TransportError(str(e)) from None
            assert state is not None and self.cluster is not None
            self.bootstrap = state.bootstrap_servers
            default = self.cluster.broker_config.get("compression.type")
            delay = str(self.cluster.broker_config.get("log.segment.delete.delay.ms", "60000"))
            self._local.log_dirs = tuple(Path(b.data_dir) for b in state.brokers)
            if delay.isdigit() and int(delay) <= 1000:
                self.deleted_from = self._local.log_dirs
            self.brokers = tuple(
                BrokerInfo(b.node_id, state.kafka_version, b.pid, b.data_dir, default) for b in state.brokers
            )
            kafka_version = state.kafka_version
        else:
            self.bootstrap = str(self.defn.bootstrap)
            try:
                md = admin.metadata(self._admin_props(self.client), timeout=15.0)
            except Exception as e:  # noqa: BLE001 - KafkaError carries librdkafka's message
                # the C message names the servers: unreachable, or reached but the handshake failed
                msg = str(e)
                raise TransportError(
                    msg if self.bootstrap in msg else f"cannot reach {self.bootstrap}: {msg}"
                ) from None
            pids = list(self.defn.broker_pids)
            ids = [int(b[0]) for b in sorted(md["brokers"])]
            if self.defn.broker_metrics:
                self._probe = remote.MetricsProbe.open(self.defn.broker_metrics, ids)
            probe = self._probe
            given = self.defn.broker_version
            self.brokers = tuple(
                BrokerInfo(
                    bid,
                    (probe.version(bid) if probe else None) or given,
                    pids[i] if i < len(pids) else None,
                    None,
                    None,
                    probe.display_url(bid) if probe else None,
                    "metrics" if probe and probe.version(bid) else ("--broker-version" if given else ""),
                )
                for i, bid in enumerate(ids)
            )
            versions = {b.version for b in self.brokers if b.version}
            kafka_version = versions.pop() if len(versions) == 1 else None
        extra: dict[str, str] = {}
        if not self.defn.workers and (
            self.defn.producers != 1 or (self.defn.consumers != 1 and not self.defn.consumer_group)
        ):
            raise TransportError(
                "transport.producers/consumers: several drivers per cell run on Dask workers; give --workers SCHEDULER"
            )
        if self._probe:
            extra["metrics_matching"] = self._probe.matching
        d = self.defn
        if d.workers:
            self.dask = DaskPool(d.workers, d.producers, d.consumers, d.drivers_per_worker)
            extra["dask"] = json.dumps(self.dask.open(), sort_keys=True)
        return TransportInfo(
            kind=self.defn.kind,
            bootstrap=self.bootstrap,
            brokers=self.brokers,
            kafka_version=kafka_version,
            client=f"librdkafka {drivers.librdkafka_version()}",
            extra=extra,
        )

    def close(self) -> None:
        if self.dask is not None:
            self.dask.close()
            self.dask = None
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    # ------------------------------------------------------------------ what a testbed changes
    def _make_cluster(self) -> Any:
        """The local cluster this transport starts (transport kind local)."""
        from kbench.kafka.cluster import LocalCluster

        return LocalCluster(brokers=self.defn.brokers)

    def _make_pool(self, tmp: Path) -> LocalPool:
        return LocalPool(tmp, self.defn.header_sample)

    def _reach(self, fn: Callable[[], T]) -> T:
        """Call ``fn`` (an admin request) from where the clients run: here, this machine's network."""
        return fn()

    def _window(self, req: RunRequest) -> Window:
        roles = {f"broker-{b.broker_id}": b.pid for b in self.brokers if b.pid}
        return Window(self._snapshot, req.steal_source or procstat.system_cpu, self._probe, roles=roles)

    # ------------------------------------------------------------------ helpers
    def _admin_props(self, client: Mapping[str, str]) -> dict[str, str]:
        """kbench's own admin client is librdkafka: it takes the client properties librdkafka knows
        (security, timeouts), never another client's (a Java plan's ``sasl.jaas.config``)."""
        known = set(clients.librdkafka_property_names())
        own = {k: v for k, v in client.items() if k in known}
        return {**own, "bootstrap.servers": self.bootstrap}

    def _producer_props(self, req: RunRequest) -> dict[str, str]:
        spec, c = req.cell.spec, req.cell
        parity = JAVA_PARITY if clients.family(c.client) == "librdkafka" else {}
        base = {**parity, **req.client_properties, "bootstrap.servers": self.bootstrap}
        return clients.producer_props(c.client, base, spec.codec, spec.level, c.batch_size, c.linger_ms, c.acks)

    def _segments(
        self, topic: str, partitions: int
    ) -> tuple[int | None, int | None, int | None, tuple[str, ...], BatchFill | None]:
        from kbench.model import segment

        dirs = []
        for p in range(partitions):
            for b in self.brokers:
                if b.log_dir and (Path(b.log_dir) / f"{topic}-{p}").is_dir():
                    dirs.append(Path(b.log_dir) / f"{topic}-{p}")
                    break
        if not dirs:
            return None, None, None, (), None
        try:
            rows = segment.scan_paths(dirs, decompress=True, verify_crc=True)
        except segment.SegmentError as e:
            # a partition directory without its segment (a broker killed while creating it, a log dir
            # taken offline): the stored bytes cannot be measured, so the repetition fails with why
            raise TransportError(f"stored bytes not measurable: {e}") from None
        s = segment.summarize(rows)
        fill = BatchFill(
            s.batches,
            s.records_per_batch["p50"],
            s.records_per_batch["p90"],
            s.records_per_batch["max"],
            s.stored_size["p50"],
            s.stored_size["p90"],
            s.stored_size["max"],
            "inspector (segment files)",
        )
        unc = s.uncompressed_batch_bytes if s.batches and not s.problems else None
        return s.stored_bytes, s.batches, unc, tuple(sorted(s.codecs)), fill

    def _snapshot(self) -> procstat.Snapshot:
        """Broker pids' and the system's CPU counters (C /proc sampler)."""
        return procstat.snapshot([b.pid for b in self.brokers if b.pid])

    # ------------------------------------------------------------------ faults
    def _alive(self) -> dict[int, bool]:
        from kbench.kafka.cluster_state import pid_alive

        return {b.broker_id: bool(b.pid and pid_alive(int(b.pid))) for b in self.brokers}

    def _faults(self, alive_before: Mapping[int, bool], settle_s: float = 0.0) -> str:
        """What went wrong with the cluster during a run, in words: a broker that died, a log
        dir whose disk is full ("" when neither).  ``settle_s``: after a failure, how long a
        broker that is still exiting (killed, not yet reaped) is given to show as gone."""
        now = self._alive()
        deadline = time.monotonic() + settle_s
        while all(now.values()) and time.monotonic() < deadline:
            time.sleep(0.05)  # polling the brokers' state until a deadline
            now = self._alive()
        why = [
            f"broker {b.broker_id} (pid {b.pid}) died during the run"
            for b in self.brokers
            if alive_before.get(b.broker_id) and not now.get(b.broker_id)
        ]
        for b in self.brokers:
            if not b.log_dir:
                continue
            try:
                st = os.statvfs(b.log_dir)
            except OSError:
                continue
            free = st.f_bavail * st.f_frsize
            if free < LOG_DIR_FULL_BYTES:
                why.append(
                    f"broker {b.broker_id}'s log dir {b.log_dir} is full ({free} bytes free): Kafka takes a "
                    "log dir offline when a write fails; free disk space there"
                )
        return "; ".join(why)

    # ------------------------------------------------------------------ one run
    def run(self, req: RunRequest) -> RunResult:
        """One run; a broker that died or a full log-dir disk during it fails the repetition with
        that reason (its figures are not measurements)."""
        alive = self._alive()
        if self.brokers and all(b.pid for b in self.brokers) and not any(alive.values()):
            # every broker is gone (killed, or halted on a full disk): fail now, not after timeouts
            gone = ", ".join(f"broker {b.broker_id} (pid {b.pid})" for b in self.brokers)
            full = self._faults({})
            raise TransportError(f"no broker is alive: {gone} gone" + (f"; {full}" if full else ""))
        try:
            res = self._run(req)
        except TransportError as e:
            why = self._faults(alive, settle_s=2.0)
            raise TransportError(f"{why}; {e}" if why else str(e)) from None
        why = self._faults(alive, settle_s=2.0 if res.delivery_errors else 0.0)
        if why:
            raise TransportError(
                f"{why} ({res.delivery_errors} delivery errors, {res.messages_acked} of {res.messages_sent} acked)"
            )
        return res

    def _run(self, req: RunRequest) -> RunResult:
        cell = req.cell
        admin_props = self._admin_props(req.client_properties)
        configs = {**cell.topic_config, "compression.type": cell.topic_compression}
        if req.min_insync_replicas:
            configs["min.insync.replicas"] = str(req.min_insync_replicas)
        try:
            self._reach(
                lambda: admin.create_topic(
                    admin_props,
                    req.topic,
                    partitions=cell.partitions,
                    replication_factor=req.replication_factor,
                    configs=configs,
                    timeout=60.0,
                )
            )
            # retried while a broker's metadata has not caught up with the new topic (many partitions, RF 3)
            readback = self._reach(lambda: admin.describe_topic_configs(admin_props, req.topic, timeout=30.0)).get(
                "compression.type", (None, "")
            )[0]
        except Exception as e:  # noqa: BLE001 - KafkaError
            raise TransportError(f"topic {req.topic}: {e}") from None
        try:
            return self._measure(req, readback)
        finally:
            try:
                self._reach(lambda: admin.delete_topic(admin_props, req.topic, timeout=30.0))
                await_removed(self.deleted_from, req.topic)
            except Exception:  # noqa: BLE001 - a leftover topic is harmless
                pass

    def _jobs(self, req: RunRequest) -> Jobs:
        """The repetition's driver jobs (docs/drivers.md); each pool adds its own fields."""
        own = registry.own_jobs(req, JobInputs(self._producer_props(req), self.bootstrap, self.defn.header_sample))
        if own is not None:  # an experiment's own jobs (G's backlog and drain)
            return own
        fixed = req.rate is not None
        run_id = drivers.new_run_id()
        count = int(round(req.rate * req.duration_s)) if fixed and req.rate else 0
        consumer = None
        if fixed:
            consumer = {
                "props": {**req.client_properties, "bootstrap.servers": self.bootstrap},
                "topic": req.topic,
                "run_id": run_id,
                "expected": count,
                "header_sample": self.defn.header_sample,
                "timeout": req.duration_s + distributed.START_LEAD_S + 30.0,
                "skip_s": req.steady_skip_s,
                "latency_skip_s": req.steady_skip_s,
                # one producer at a fixed rate: the window by sequence number, exactly the producer's
                # (several producers on Dask: distributed.py falls back to the send-time rule)
                "latency_from_seq": drivers.first_seq_due_after(req.rate or 0.0, req.steady_skip_s),
                "interval_s": drivers.SERIES_INTERVAL_S,
                "group": self.defn.consumer_group,
            }
        producer = {
            "props": self._producer_props(req),
            "topic": req.topic,
            "run_id": run_id,
            "mode": "fixed-rate" if fixed else "saturated",
            "count": count,
            "duration": 0.0 if fixed else req.duration_s,
            "keys": req.cell.key_policy,
            "nkeys": 0 if req.cell.key_policy == "none" else 1024,
            "skip_s": req.steady_skip_s,
            "latency_skip_s": req.steady_skip_s,
            "header_sample": self.defn.header_sample,
            "tick_s": drivers.DEFAULT_TICK_S,
            "interval_s": drivers.SERIES_INTERVAL_S,
        }
        return Jobs(producer, consumer, count, consumers=self.defn.consumers)

    def _stored(self, req: RunRequest, readback: str | None) -> StoredInfo:
        """Stored bytes, codecs and batch fill from the partitions' segment files; on a remote
        cluster (no segment files) stored bytes from DescribeLogDirs when an experiment needs them."""
        stored, batches, unc, codecs_, fill = self._segments(req.topic, req.cell.partitions)
        if stored is not None:
            return StoredInfo(stored, batches, unc, codecs_, fill, "segment files (kbench inspector)")
        if not req.warmup and registry.needs_stored(req.cell.experiments):
            r = remote.stored_from_log_dirs(
                self.bootstrap, req.topic, req.cell.partitions, req.client_properties, req.cell.codec, readback
            )
            return StoredInfo(r.stored_bytes, batches, unc, r.stored_codecs, fill, r.source)
        return StoredInfo(stored, batches, unc, codecs_, fill, None)

    def _measure(self, req: RunRequest, readback: str | None) -> RunResult:
        assert self._local is not None
        pool: DriverPool = self.dask if self.dask is not None else self._local
        window = self._window(req)
        out = pool.run(req, self._jobs(req), window)
        return assemble(
            req, readback, out, window, self.brokers, self._stored(req, readback), req.steal_source is not None
        )


def await_removed(log_dirs: Sequence[Path], topic: str, timeout: float = 30.0) -> bool:
    """Wait until a deleted topic's partition directories are gone from the local brokers'
    ``log_dirs`` (Kafka renames each to ``<topic>-<p>.<id>-delete``, then removes it: at once with
    the local cluster's ``log.segment.delete.delay.ms`` 0), so that the removal of its segments and of their
    page cache is not inside the next repetition.  True once gone (at once without local log dirs);
    False after ``timeout`` (the next repetition runs anyway)."""
    deadline = time.monotonic() + timeout
    while any(topic_dirs(d, topic) for d in log_dirs):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)  # polling the condition: the broker's deletion gives no signal
    return True
