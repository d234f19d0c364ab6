"""The real Kafka transport: a local cluster started by kbench, or an existing one.

Per run: a fresh topic (partitions, replication factor, ``compression.type`` as planned,
read back); a consumer process assigned at the start offsets, then a producer process
(:mod:`kbench.kafka.worker`: one process per role, so each role's CPU is its own);
broker CPU from ``/proc/<pid>/stat`` of each local broker and system steal from
``/proc/stat`` over the steady window (from ``steady_skip_s`` after the producer starts to
the end of the run); stored bytes, stored codecs and batch fill from the partitions' segment
files (one replica each) read by :mod:`kbench.model.segment`; bytes on the wire from the
producer's librdkafka statistics.  The topic is deleted after it is measured.
"""

from __future__ import annotations

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

from kbench import _native
from kbench.engine.plan import TransportDef
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
from kbench.kafka import clients, procstat
from kbench.model import codecs
from kbench.model.corpus import Corpus

__all__ = ["KafkaTransport"]

#: Seconds a worker may take to start (imports, corpus) and a consumer to be assigned.
WORKER_START_TIMEOUT = 60.0


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
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[3]), env.get("PYTHONPATH", "")])
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


def _client_fill(stats: Mapping[str, Any]) -> BatchFill | None:
    """Records and bytes per batch as the client saw them (the driver's client_stats.batch_fill)."""
    f = stats.get("batch_fill")
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


@dataclass
class KafkaTransport:
    defn: TransportDef
    kind: str = "kafka"
    cluster: Any = None
    bootstrap: str = ""
    brokers: tuple[BrokerInfo, ...] = ()
    _tmp: tempfile.TemporaryDirectory[str] | None = None
    _corpus_files: dict[str, Path] = field(default_factory=dict)

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
                md = _native.metadata({"bootstrap.servers": self.bootstrap}, timeout=15.0)
            except Exception as e:  # noqa: BLE001 - KafkaError carries librdkafka's message
                raise TransportError(f"cannot reach {self.bootstrap}: {e}") from None
            pids = list(self.defn.broker_pids)
            self.brokers = tuple(
                BrokerInfo(int(b[0]), None, pids[i] if i < len(pids) else None, None, None)
                for i, b in enumerate(sorted(md["brokers"]))
            )
            kafka_version = None
        return TransportInfo(
            kind=self.defn.kind,
            bootstrap=self.bootstrap,
            brokers=self.brokers,
            kafka_version=kafka_version,
            client=f"librdkafka {_native.rdkafka_version}",
        )

    def close(self) -> None:
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
            p = Path(self._tmp.name) / f"corpus-{key[:16]}.bin"
            with p.open("wb") as f:
                for r in corpus.records:
                    f.write(len(r).to_bytes(4, "big"))
                    f.write(r)
            self._corpus_files[key] = p
        return self._corpus_files[key]

    def _admin_props(self, client: Mapping[str, str]) -> dict[str, str]:
        return {**client, "bootstrap.servers": self.bootstrap}

    def _producer_props(self, req: RunRequest) -> dict[str, str]:
        spec = codecs.parse_spec(req.cell.codec)
        base = {**req.client_properties, "bootstrap.servers": self.bootstrap}
        c = req.cell
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

    # ------------------------------------------------------------------ one run
    def run(self, req: RunRequest) -> RunResult:
        cell = req.cell
        admin = self._admin_props(req.client_properties)
        tc = "uncompressed" if cell.topic_compression in ("none", "uncompressed") else cell.topic_compression
        configs = {**cell.topic_config, "compression.type": tc}
        if req.min_insync_replicas:
            configs["min.insync.replicas"] = str(req.min_insync_replicas)
        try:
            _native.create_topic(
                admin,
                req.topic,
                partitions=cell.partitions,
                replication_factor=req.replication_factor,
                configs=configs,
                timeout=60.0,
            )
            readback = _native.describe_topic_configs(admin, req.topic, timeout=30.0).get(
                "compression.type", (None, "")
            )[0]
        except Exception as e:  # noqa: BLE001 - KafkaError
            raise TransportError(f"topic {req.topic}: {e}") from None
        try:
            return self._measure(req, readback)
        finally:
            try:
                _native.delete_topic(admin, req.topic, timeout=30.0)
            except Exception:  # noqa: BLE001 - a leftover topic is harmless
                pass

    def _measure(self, req: RunRequest, readback: str | None) -> RunResult:
        assert self._tmp is not None
        fixed = req.rate is not None
        run_id = int.from_bytes(os.urandom(8), "big") & ((1 << 63) - 1) or 1
        stats = Path(self._tmp.name) / f"{req.topic}.stats.jsonl"
        count = int(round(req.rate * req.duration_s)) if fixed and req.rate else 0
        consumer = None
        if fixed:
            consumer = _spawn(
                "consumer",
                {
                    "props": {**req.client_properties, "bootstrap.servers": self.bootstrap},
                    "topic": req.topic,
                    "run_id": run_id,
                    "expected": count,
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
                "keys": {"roundrobin": "round-robin"}.get(req.cell.key_policy, req.cell.key_policy),
                "nkeys": 0 if req.cell.key_policy == "none" else 1024,
                "stats_path": str(stats),
                "skip_s": req.steady_skip_s,
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
            s0, t0 = self._snapshot(), time.monotonic()
            pres = producer.result(req.duration_s + 120.0)
            cres = consumer.result(req.duration_s + 120.0) if consumer else None
            s1, t1 = self._snapshot(), time.monotonic()
        except BaseException:
            for w in (producer, consumer):
                if w is not None and w.proc.poll() is None:
                    w.proc.kill()
            raise
        stored, batches, unc, stored_codecs, fill = self._segments(req.topic, req.cell.partitions)
        cpu = []
        for role, res in (("producer", pres), ("consumer", cres)):
            if res is None:
                continue
            c = res["cpu"]
            cpu.append(
                CpuSample(
                    role,
                    c["usr_s"],
                    c["sys_s"],
                    c["wall_s"],
                    regressed=(c["usr_s"] or 0) < 0 or (c["sys_s"] or 0) < 0,
                    pid=None,
                    note=c.get("note", ""),
                )
            )
            for group, t in (c.get("threads") or {}).items():  # the driver's thread groups (docs/drivers.md)
                cpu.append(
                    CpuSample(f"{role}.{group}", t["usr_s"], t["sys_s"], c["wall_s"], note=f"threads of the {role}")
                )
        deltas = {d.pid: d for d in procstat.delta(s0, s1)}
        for b in self.brokers:
            d = deltas.get(b.pid) if b.pid else None
            note = "" if b.pid else "no local pid (give --broker-pid)"
            if b.pid and (d is None or d.status == procstat.NA):
                note = f"pid {b.pid} unreadable or gone"
            usr = d.user_s if d is not None else None
            sys_ = d.sys_s if d is not None else None
            regressed = d is not None and d.status == procstat.NEGATIVE
            cpu.append(
                CpuSample(f"broker-{b.broker_id}", usr, sys_, t1 - t0, regressed=regressed, pid=b.pid, note=note)
            )
        steal = None
        if s0.system is not None and s1.system is not None and s1.system.total > s0.system.total:
            steal = 100.0 * (s1.system.steal - s0.system.steal) / (s1.system.total - s0.system.total)
        st = pres.get("client_stats") or {}
        delivered = int(pres["delivered"])
        payload = (
            int(pres["bytes"])
            if delivered == int(pres["sent"])
            else int(pres["bytes"] * delivered / max(1, int(pres["sent"])))
        )
        n_errors = max(int(pres["failed"]), sum(int(v) for v in pres.get("delivery_errors", {}).values())) + int(
            pres["undelivered"]
        )
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
            producer_wire_bytes=int(st["wire_bytes"]) if st.get("wire_bytes") is not None else None,
            consumer_wire_bytes=None,
            stored_bytes=stored,
            stored_batches=batches,
            stored_uncompressed_bytes=unc,
            stored_codecs=stored_codecs,
            topic_compression_readback=readback,
            batch_fill=fill,
            client_fill=_client_fill(st),
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
