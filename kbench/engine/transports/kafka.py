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

import dataclasses
import json
import os
import select
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbench.engine.plan import TransportDef
from kbench.engine.transports import remote
from kbench.engine.transports.base import (
    BatchFill,
    BrokerInfo,
    CpuSample,
    LatencySummary,
    RunRequest,
    RunResult,
    TransportError,
    TransportInfo,
)
from kbench.engine.transports.window import Schedule
from kbench.kafka import admin, clients, drivers, procstat
from kbench.kafka import stats as stats_mod
from kbench.model.corpus import Corpus, write_lenprefixed

__all__ = ["KafkaTransport"]

#: Seconds a worker may take to start (imports, corpus) and a consumer to be assigned.
WORKER_START_TIMEOUT = 60.0
#: librdkafka properties set for producer and consumer where librdkafka's default differs from
#: the Java client's (docs/methodology.md); a plan's [client] table may override them.
_JAVA_PARITY = {"socket.nagle.disable": "true"}  # the Java client sends with TCP_NODELAY


def _lat(d: Mapping[str, Any] | None) -> LatencySummary | None:
    if not d or not d.get("count"):
        return None
    return LatencySummary(
        int(d["count"]), d["p50_us"], d["p95_us"], d["p99_us"], d["p999_us"], d["max_us"], int(d.get("out_of_range", 0))
    )


@dataclass
class _Worker:
    proc: subprocess.Popen[str]
    role: str
    stderr_path: Path

    def expect(self, word: str, timeout: float) -> None:
        line = self._line(timeout)
        if line.strip() != word:
            self.proc.kill()
            raise TransportError(f"{self.role} worker: {self._error(line)}")

    def _line(self, timeout: float) -> str:
        out = self.proc.stdout
        assert out is not None
        ready, _, _ = select.select([out], [], [], timeout)
        if not ready:
            self.proc.kill()
            raise TransportError(f"{self.role} worker did not answer within {timeout:.0f} s")
        return out.readline()

    def _error(self, line: str) -> str:
        if line.startswith("ERROR "):
            try:
                return str(json.loads(line[6:]))
            except ValueError:
                return line[6:].strip()
        if line.strip():
            return line.strip()
        try:
            self.proc.wait(timeout=10)
            tail = self.stderr_path.read_text(errors="replace").strip().splitlines()[-1:]
        except (OSError, subprocess.TimeoutExpired):
            tail = []
        return tail[0] if tail else f"exited with status {self.proc.poll()}"

    def result(self, timeout: float) -> dict[str, Any]:
        line = self._line(timeout)
        self.proc.wait(timeout=30)
        if not line.startswith("RESULT "):
            raise TransportError(f"{self.role} worker: {self._error(line)}")
        return dict(json.loads(line[7:]))


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """SIGTERM this worker when kbench dies (even by SIGKILL): no orphaned clients."""
    import ctypes
    import signal

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _spawn(role: str, job: Mapping[str, Any], stderr_path: Path, client: str = "librdkafka") -> _Worker:
    """Start the driver process of ``client`` for ``role`` and send it its job (docs/drivers.md)."""
    try:
        argv = clients.driver_command(client)
    except Exception as e:  # noqa: BLE001 - KafkaDistError: Maven/Java missing or the build failed
        raise TransportError(f"{client} driver: {e}") from None
    env = clients.driver_env(os.environ, str(Path(__file__).resolve().parents[3]))
    with stderr_path.open("w") as err:  # a file, not a pipe: a chatty client never blocks on it
        p = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=env,
            preexec_fn=_die_with_parent,
        )
    assert p.stdin is not None
    p.stdin.write(
        json.dumps(dict(job, role=role, protocol=clients.PROTOCOL)) + "\n"
    )  # secrets travel on a pipe, never argv
    p.stdin.close()
    return _Worker(p, role, stderr_path)


def _driver_fill(f: Mapping[str, Any] | None) -> BatchFill | None:
    """Records and bytes per batch as another client saw them (its driver's client_stats.batch_fill)."""
    if not f:
        return None
    return BatchFill(
        int(f["batches"]),
        float(f["records_p50"]),
        float(f["records_p90"]),
        float(f["records_max"]),
        float(f["bytes_p50"]),
        float(f["bytes_p90"]),
        float(f["bytes_max"]),
        str(f.get("source", "client statistics")),
    )


def _schedule_fields(res: dict[str, Any]) -> dict[str, Any]:
    """A driver result with the librdkafka driver's schedule and CPU-split fields, filled from the
    protocol's ``windows`` and ``cpu.threads`` (docs/drivers.md) when the driver gave only those:
    ``t0_ns``/``first_send_ns`` = the send window's start, ``last_send_ns`` its end,
    ``cpu.window_start_ns`` = the CPU window's start, ``cpu.loadgen_s`` = the ``app`` thread group,
    ``cpu.client_s`` = the ``client`` group (the rest, JIT/GC/VM threads, is in the process total only)."""
    out = dict(res)
    win = res.get("windows") or {}
    send = win.get("send") or {}
    if "t0_ns" not in out and send:
        out["t0_ns"] = out["first_send_ns"] = int(send["start_mono_ns"])
        out["last_send_ns"] = int(send["end_mono_ns"])
    cpu = dict(res.get("cpu") or {})
    if "window_start_ns" not in cpu and win.get("cpu"):
        cpu["window_start_ns"] = int(win["cpu"]["start_mono_ns"])
    threads = cpu.get("threads") or {}
    for group, key in (("app", "loadgen_s"), ("client", "client_s")):
        t = threads.get(group)
        if key not in cpu and t and t.get("usr_s") is not None and t.get("sys_s") is not None:
            cpu[key] = float(t["usr_s"]) + float(t["sys_s"])
    out["cpu"] = cpu
    return out


def _broker_proc_cpu(
    b: BrokerInfo, deltas: Mapping[int, procstat.CpuDelta], elapsed_s: float, payload: int | None, no_pid: str
) -> CpuSample:
    """A broker's CPU over a window from its /proc counters; ``no_pid``: the note when it has no local pid."""
    d = deltas.get(b.pid) if b.pid else None
    note = "" if b.pid else no_pid
    if b.pid and (d is None or d.status == procstat.NA):
        note = f"pid {b.pid} unreadable or gone"
    return CpuSample(
        f"broker-{b.broker_id}",
        d.user_s if d is not None else None,
        d.sys_s if d is not None else None,
        elapsed_s,
        regressed=d is not None and d.status == procstat.NEGATIVE,
        pid=b.pid,
        note=note,
        source=f"/proc/{b.pid}/stat" if b.pid else "",
        window_payload_bytes=payload,
    )


def _delivered(pres: Mapping[str, Any]) -> tuple[int, int, int]:
    """From a producer RESULT: delivered messages, their payload bytes, and delivery errors (failed
    or reported, plus messages never reported)."""
    delivered, sent = int(pres["delivered"]), int(pres["sent"])
    payload = int(pres["bytes"]) if delivered == sent else int(pres["bytes"] * delivered / max(1, sent))
    reported = sum(int(v) for v in pres.get("delivery_errors", {}).values())
    return delivered, payload, max(int(pres["failed"]), reported) + int(pres["undelivered"])


def _phases(path: Path, req: RunRequest) -> dict[str, float | None]:
    """Queue wait, compression and request medians (µs) of one fixed-rate run: the first and last
    from librdkafka's statistics, compression timed here on a block of the median batch's size."""
    from kbench.model import microbench

    ph = stats_mod.latency_phases(path, req.topic)
    if ph is None:
        return {}
    compress = None
    if ph.batch_records_p50:
        per_record = req.corpus.size / max(1, len(req.corpus.records))
        compress = microbench.batch_compress_us(req.corpus, req.cell.spec, int(ph.batch_records_p50 * per_record))
    return {"queue_p50_us": ph.queue_p50_us, "compress_p50_us": compress, "request_p50_us": ph.request_p50_us}


#: A broker log dir with less free space than this is reported as full.
LOG_DIR_FULL_BYTES = 1 << 20


@dataclass
class KafkaTransport:
    defn: TransportDef
    kind: str = "kafka"
    cluster: Any = None
    bootstrap: str = ""
    brokers: tuple[BrokerInfo, ...] = ()
    _tmp: tempfile.TemporaryDirectory[str] | None = None
    _corpus_files: dict[str, Path] = field(default_factory=dict)
    dask: Any = None  # a DaskPool when the plan names Dask workers (transports/distributed.py)
    _probe: remote.MetricsProbe | None = None  # broker metrics over Prometheus (--broker-metrics)

    # ------------------------------------------------------------------ lifecycle
    def open(self) -> TransportInfo:
        self._tmp = tempfile.TemporaryDirectory(prefix="kbench-run-")
        if self.defn.kind == "local":
            from kbench.kafka.cluster import ClusterError, LocalCluster

            state = None
            for attempt in (1, 2):
                # A second attempt only for a failed storage format: a random cluster id that
                # starts with '-' is taken for an option by kafka-storage (about 1 start in 64).
                self.cluster = LocalCluster(brokers=self.defn.brokers)
                try:
                    state = self.cluster.start()
                    break
                except ClusterError as e:
                    self.cluster.stop()
                    self.cluster = None
                    if attempt == 2 or "kafka-storage format failed" not in str(e):
                        raise TransportError(str(e)) from None
            assert state is not None and self.cluster is not None
            self.bootstrap = state.bootstrap_servers
            default = self.cluster.broker_config.get("compression.type")
            self.brokers = tuple(
                BrokerInfo(b.node_id, state.kafka_version, b.pid, b.data_dir, default) for b in state.brokers
            )
            kafka_version = state.kafka_version
        else:
            self.bootstrap = str(self.defn.bootstrap)
            try:
                md = admin.metadata({"bootstrap.servers": self.bootstrap}, timeout=15.0)
            except Exception as e:  # noqa: BLE001 - KafkaError carries librdkafka's message
                raise TransportError(f"cannot reach {self.bootstrap}: {e}") from None
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
        if not self.defn.workers and (self.defn.producers, self.defn.consumers) != (1, 1):
            raise TransportError(
                "transport.producers/consumers: several drivers per cell run on Dask workers; give --workers SCHEDULER"
            )
        if self._probe:
            extra["metrics_matching"] = self._probe.matching
        if self.defn.workers:
            from kbench.engine.transports.distributed import DaskPool

            d = self.defn
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

    # ------------------------------------------------------------------ helpers
    def _corpus_file(self, corpus: Corpus) -> Path:
        key = corpus.sha256
        if key not in self._corpus_files:
            assert self._tmp is not None
            self._corpus_files[key] = write_lenprefixed(corpus.records, Path(self._tmp.name) / f"corpus-{key[:16]}.bin")
        return self._corpus_files[key]

    def _admin_props(self, client: Mapping[str, str]) -> dict[str, str]:
        return {**client, "bootstrap.servers": self.bootstrap}

    def _producer_props(self, req: RunRequest) -> dict[str, str]:
        spec, c = req.cell.spec, req.cell
        parity = _JAVA_PARITY if c.client == "librdkafka" else {}
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
        rows = segment.scan_paths(dirs, decompress=True, verify_crc=True)
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
        from kbench.kafka.cluster import _pid_alive

        return {b.broker_id: bool(b.pid) and _pid_alive(int(b.pid)) for b in self.brokers}

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
            admin.create_topic(
                admin_props,
                req.topic,
                partitions=cell.partitions,
                replication_factor=req.replication_factor,
                configs=configs,
                timeout=60.0,
            )
            # retried while a broker's metadata has not caught up with the new topic (many partitions, RF 3)
            readback = admin.describe_topic_configs(admin_props, req.topic, timeout=30.0).get(
                "compression.type", (None, "")
            )[0]
        except Exception as e:  # noqa: BLE001 - KafkaError
            raise TransportError(f"topic {req.topic}: {e}") from None
        try:
            return self._measure(req, readback)
        finally:
            try:
                admin.delete_topic(admin_props, req.topic, timeout=30.0)
            except Exception:  # noqa: BLE001 - a leftover topic is harmless
                pass

    def _measure(self, req: RunRequest, readback: str | None) -> RunResult:
        assert self._tmp is not None
        if self.dask is not None:
            from kbench.engine.transports import distributed

            return distributed.measure(self, req, readback)
        fixed = req.rate is not None
        run_id = drivers.new_run_id()
        stats = Path(self._tmp.name) / f"{req.topic}.stats.jsonl"
        count = int(round(req.rate * req.duration_s)) if fixed and req.rate else 0
        consumer = None
        if fixed:
            consumer = _spawn(
                "consumer",
                {
                    "props": {
                        **(_JAVA_PARITY if req.cell.client == "librdkafka" else {}),
                        **req.client_properties,
                        "bootstrap.servers": self.bootstrap,
                    },
                    "topic": req.topic,
                    "run_id": run_id,
                    "expected": count,
                    "header_sample": self.defn.header_sample,
                    "timeout": req.duration_s + 60.0,
                    "skip_s": req.steady_skip_s,
                },
                Path(self._tmp.name) / f"{req.topic}.consumer.err",
                req.cell.client,
            )
            consumer.expect("READY", WORKER_START_TIMEOUT)
        producer = _spawn(
            "producer",
            {
                "props": self._producer_props(req),
                "topic": req.topic,
                "run_id": run_id,
                "corpus_file": str(self._corpus_file(req.corpus)),
                "mode": "fixed-rate" if fixed else "saturated",
                "rate": req.rate or 0.0,
                "count": count,
                "duration": 0.0 if fixed else req.duration_s,
                "keys": req.cell.key_policy,
                "nkeys": 0 if req.cell.key_policy == "none" else 1024,
                "stats_path": str(stats),
                "skip_s": req.steady_skip_s,
                "header_sample": self.defn.header_sample,
                "tick_s": drivers.DEFAULT_TICK_S,
            },
            Path(self._tmp.name) / f"{req.topic}.producer.err",
            req.cell.client,
        )
        try:
            producer.expect("STARTED", WORKER_START_TIMEOUT)
            t_start = time.monotonic()
            # Steady window: from steady_skip_s after the producer starts.
            pause = t_start + req.steady_skip_s - time.monotonic()
            if pause > 0:
                time.sleep(pause)  # a measurement schedule, not synchronisation
            steal_source = req.steal_source or procstat.system_cpu
            s0, sys0, t0, t0_ns = self._snapshot(), steal_source(), time.monotonic(), time.monotonic_ns()
            m0 = self._probe.edge() if self._probe else {}
            pres = _schedule_fields(producer.result(req.duration_s + 120.0))
            cres = _schedule_fields(consumer.result(req.duration_s + 120.0)) if consumer else None
            s1, sys1, t1 = self._snapshot(), steal_source(), time.monotonic()
            m1 = self._probe.edge() if self._probe else {}
        except BaseException:
            for w in (producer, consumer):
                if w is not None and w.proc.poll() is None:
                    w.proc.kill()
            raise
        stored, batches, unc, stored_codecs, fill = self._segments(req.topic, req.cell.partitions)
        stored_source = "segment files (kbench inspector)" if stored is not None else None
        if stored is None and not req.warmup and set(req.cell.experiments) & set("CDEF"):
            remote_stored = remote.stored_from_log_dirs(
                self.bootstrap, req.topic, req.cell.partitions, req.client_properties, req.cell.codec, readback
            )
            stored, stored_codecs, stored_source = (
                remote_stored.stored_bytes,
                remote_stored.stored_codecs,
                remote_stored.source,
            )
        sched = Schedule.of(
            [len(r) for r in req.corpus.records],
            int(pres["sent"]),
            int(pres["delivered"]),
            int(pres["t0_ns"] if fixed else pres["first_send_ns"]),
            int(pres["last_send_ns"]),
            req.rate,
        )

        def lag_ns(h: Mapping[str, Any] | None) -> int:
            return int(float(h["p50_us"]) * 1000) if h and h.get("count") else 0

        lags = {"producer": 0, "consumer": lag_ns(cres.get("e2e") if cres else None)}
        cpu = []
        for role, res in (("producer", pres), ("consumer", cres)):
            if res is None:
                continue
            c = res["cpu"]
            start = c.get("window_start_ns")
            cpu.append(
                CpuSample(
                    role,
                    c["usr_s"],
                    c["sys_s"],
                    c["wall_s"],
                    regressed=(c["usr_s"] or 0) < 0 or (c["sys_s"] or 0) < 0,
                    pid=None,
                    note=c.get("note", ""),
                    loadgen_s=c.get("loadgen_s"),
                    client_s=c.get("client_s"),
                    window_payload_bytes=None if start is None else sched.window_payload(int(start), lags[role]),
                )
            )
        broker_bytes = sched.window_payload(t0_ns, lag_ns(pres.get("service")))
        deltas = {d.pid: d for d in procstat.delta(s0, s1)}
        for b in self.brokers:
            if not b.pid and b.broker_id in m0:
                sample = remote.cpu_from_metrics(f"broker-{b.broker_id}", m0[b.broker_id], m1.get(b.broker_id))
                cpu.append(dataclasses.replace(sample, window_payload_bytes=broker_bytes))
                continue
            no_pid = "no local pid (give --broker-metrics or --broker-pid)"
            cpu.append(_broker_proc_cpu(b, deltas, t1 - t0, broker_bytes, no_pid))
        steal = procstat.steal_pct(sys0, sys1)
        if req.cell.client == "librdkafka":  # its statistics file: wire bytes, batch fill, latency phases
            raw = stats_mod.last_stats(stats) or {}
            wire = raw.get("tx_bytes")
            client_fill = _driver_fill(stats_mod.batch_fill(raw, req.topic))
            phases = _phases(stats, req) if fixed else {}
        else:  # the driver's client_stats (docs/drivers.md section 4.2)
            st = pres.get("client_stats") or {}
            wire = st.get("wire_bytes")
            client_fill = _driver_fill(st.get("batch_fill"))
            phases = {}
        delivered, payload, n_errors = _delivered(pres)
        return RunResult(
            messages_sent=int(pres["sent"]),
            messages_acked=delivered,
            payload_bytes=payload,
            elapsed_s=float(pres["send_seconds"]),
            target_rate=req.rate,
            achieved_rate=float(pres["achieved_rate"]) if fixed else float(pres["delivered_rate"]),
            delivery_errors=n_errors,
            latency_service=_lat(pres.get("service")),
            latency_delay=_lat(pres.get("delay")),
            latency_corrected=_lat(pres.get("corrected")),
            latency_e2e=_lat(cres.get("e2e")) if cres else None,
            consumed=int(cres["unique"]) if cres else None,
            lost=int(cres["lost"]) if cres else None,
            duplicated=int(cres["duplicates"]) if cres else None,
            cpu=tuple(cpu),
            steal_pct=steal,
            producer_wire_bytes=int(wire) if wire is not None else None,
            consumer_wire_bytes=None,
            stored_bytes=stored,
            stored_batches=batches,
            stored_uncompressed_bytes=unc,
            stored_codecs=stored_codecs,
            topic_compression_readback=readback,
            stored_source=stored_source,
            batch_fill=fill,
            client_fill=client_fill,
            latency_phases=phases,
            client=dict(pres.get("client") or {}),
            histograms={
                name: h["encoded"]
                for name, h in (
                    ("service", pres.get("service")),
                    ("delay", pres.get("delay")),
                    ("corrected", pres.get("corrected")),
                    ("e2e", cres.get("e2e") if cres else None),
                )
                if h and h.get("encoded")
            },
        )
