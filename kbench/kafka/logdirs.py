"""Stored bytes from Kafka itself: DescribeLogDirs through Kafka's own log-dirs tool.

A remote cluster gives no segment files to read, but every broker answers DescribeLogDirs
with the size of each partition replica it holds.  kbench runs Kafka's
``org.apache.kafka.tools.LogDirsCommand --describe`` from the resolved Kafka jars
(:mod:`kbench.kafka.kafka_dist`) and parses the JSON it prints.  Client security settings are
handed to the tool as a Java properties file on its standard input (``--command-config
/dev/stdin``): secrets never touch the disk or a command line.

The stored codec is not part of DescribeLogDirs; :func:`infer_stored_codec` says how it is
inferred instead (topic ``compression.type`` and the producer codec), and callers flag it.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kbench.kafka import kafka_dist

__all__ = [
    "LogDirsError",
    "PartitionSize",
    "SOURCE",
    "describe",
    "infer_stored_codec",
    "java_client_properties",
    "parse",
    "stored_bytes",
]

#: How stored bytes measured this way are named in results.
SOURCE = "DescribeLogDirs (Kafka LogDirsCommand)"
LOG_DIRS_TOOL = "org.apache.kafka.tools.LogDirsCommand"

#: Security settings both clients name alike, passed to the Java tool as they are.
_SHARED_PREFIXES = ("security.protocol", "sasl.mechanism", "sasl.jaas.config", "sasl.kerberos.service.name", "ssl.")
#: librdkafka-only settings: mapped below, never passed through.
_RDKAFKA_ONLY = (
    "sasl.mechanisms",
    "sasl.username",
    "sasl.password",
    "ssl.ca.location",
    "ssl.certificate.location",
    "ssl.key.location",
    "ssl.ca.pem",
    "ssl.certificate.pem",
    "ssl.key.pem",
    "ssl.sigalgs.list",
    "ssl.curves.list",
    "ssl.engine.location",
    "ssl.engine.id",
    "ssl.providers",
    "ssl.crl.location",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.cipher.suites",
    "ssl_engine_callback_data",
)


class LogDirsError(RuntimeError):
    """DescribeLogDirs could not be run or answered; the message says why."""


@dataclass(frozen=True)
class PartitionSize:
    broker: int
    topic: str
    partition: int
    size: int
    offset_lag: int
    log_dir: str


def _jaas_quote(v: str) -> str:
    return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'


def java_client_properties(props: Mapping[str, str]) -> dict[str, str]:
    """The Java client properties equivalent to librdkafka ``props`` (security settings only).

    - ``sasl.mechanisms`` becomes ``sasl.mechanism``; ``sasl.username``/``sasl.password`` become
      a ``sasl.jaas.config`` for PLAIN or SCRAM;
    - ``ssl.ca.location`` / ``ssl.ca.pem`` become a PEM truststore; ``ssl.certificate.*`` and
      ``ssl.key.*`` a PEM keystore (its key and chain inline, as Java reads them, KIP-651);
    - names both clients share (``security.protocol``, ``ssl.endpoint.identification.algorithm``,
      ``ssl.key.password`` ...) pass through.
    """
    out: dict[str, str] = {}
    for k, v in props.items():
        if k.startswith(_SHARED_PREFIXES) and k not in _RDKAFKA_ONLY:
            out[k] = v
    if "sasl.mechanisms" in props and "sasl.mechanism" not in out:
        out["sasl.mechanism"] = props["sasl.mechanisms"]
    user, pw = props.get("sasl.username"), props.get("sasl.password")
    if user is not None and "sasl.jaas.config" not in out:
        mech = out.get("sasl.mechanism", "PLAIN").upper()
        module = (
            "org.apache.kafka.common.security.scram.ScramLoginModule"
            if mech.startswith("SCRAM")
            else "org.apache.kafka.common.security.plain.PlainLoginModule"
        )
        out["sasl.jaas.config"] = f"{module} required username={_jaas_quote(user)} password={_jaas_quote(pw or '')};"
    if "ssl.ca.location" in props:
        out.update({"ssl.truststore.type": "PEM", "ssl.truststore.location": props["ssl.ca.location"]})
    elif "ssl.ca.pem" in props:
        out.update({"ssl.truststore.type": "PEM", "ssl.truststore.certificates": props["ssl.ca.pem"]})
    cert = props.get("ssl.certificate.pem") or _read_text(props.get("ssl.certificate.location"))
    key = props.get("ssl.key.pem") or _read_text(props.get("ssl.key.location"))
    if cert and key:
        out.update({"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": cert, "ssl.keystore.key": key})
    return out


def _read_text(path: str | None) -> str | None:
    if not path:
        return None
    try:
        return Path(path).read_text()
    except OSError as e:
        raise LogDirsError(f"cannot read {path} for the log-dirs tool's TLS keystore: {e.strerror}") from None


def parse(output: str) -> list[PartitionSize]:
    """Partition replica sizes from LogDirsCommand's output (its one JSON line)."""
    doc = None
    for line in output.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                doc = json.loads(line)
            except ValueError as e:
                raise LogDirsError(f"{LOG_DIRS_TOOL} printed unreadable JSON: {e}") from None
    if doc is None:
        raise LogDirsError(f"{LOG_DIRS_TOOL} printed no JSON: {output.strip()[-300:]}")
    out = []
    for b in doc.get("brokers", []):
        for d in b.get("logDirs", []):
            if d.get("error"):
                continue
            for p in d.get("partitions", []):
                if p.get("isFuture"):
                    continue
                topic, _, num = str(p["partition"]).rpartition("-")
                out.append(
                    PartitionSize(
                        int(b["broker"]), topic, int(num), int(p["size"]), int(p.get("offsetLag", 0)), d["logDir"]
                    )
                )
    return out


def describe(
    bootstrap: str, topics: Sequence[str], client_props: Mapping[str, str] | None = None, timeout: float = 120.0
) -> list[PartitionSize]:
    """Every replica's size of ``topics`` as the brokers report it (DescribeLogDirs)."""
    conf = "".join(f"{k}={_escape(v)}\n" for k, v in java_client_properties(client_props or {}).items())
    cmd = kafka_dist.java_command(
        LOG_DIRS_TOOL,
        [
            "--describe",
            "--bootstrap-server",
            bootstrap,
            "--topic-list",
            ",".join(topics),
            "--command-config",
            "/dev/stdin",
        ],
        heap="128m",
        jvm_opts=["-Dlog4j2.level=WARN", "-XX:TieredStopAtLevel=1", "-Xshare:auto"],
    )
    try:
        proc = subprocess.run(cmd, input=conf, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise LogDirsError(f"{LOG_DIRS_TOOL} did not answer within {timeout:.0f} s (bootstrap {bootstrap})") from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        raise LogDirsError(f"{LOG_DIRS_TOOL} failed for {bootstrap}: {tail[0][:300]}")
    return parse(proc.stdout)


def _escape(v: str) -> str:
    """A value as a Java properties file line reads it back."""
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def stored_bytes(sizes: Sequence[PartitionSize], topic: str, partitions: int) -> tuple[int | None, str]:
    """Bytes stored for ``topic``: per partition the largest replica (followers copy the leader's
    batches byte for byte; the largest is the most complete), summed.  ``None`` when a partition
    has no replica reported.  The second value notes replicas that disagree."""
    per: dict[int, list[int]] = {}
    for s in sizes:
        if s.topic == topic:
            per.setdefault(s.partition, []).append(s.size)
    if any(p not in per for p in range(partitions)):
        missing = [p for p in range(partitions) if p not in per]
        return None, f"DescribeLogDirs reported no replica of partitions {missing[:8]}"
    lagging = [p for p, v in per.items() if len(set(v)) > 1]
    note = f"replicas of partitions {lagging[:8]} differ in size (largest used)" if lagging else ""
    return sum(max(v) for v in per.values()), note


def infer_stored_codec(topic_compression: str | None, producer_codec: str) -> tuple[str, str]:
    """The stored codec when no batch can be read, and how it was inferred.

    A topic ``compression.type`` naming a codec makes the broker store that codec (it
    recompresses any other); ``producer`` stores what the producer sent.  librdkafka may send a
    batch uncompressed when compressing made it larger: a ratio near 1 with a codec is that case.
    """
    tc = (topic_compression or "producer").lower()
    pc = producer_codec.split(":")[0].lower()
    if tc in ("producer", ""):
        return ("none" if pc in ("none", "uncompressed") else pc), (
            f"stored codec inferred: topic compression.type=producer stores the producer's codec ({pc})"
        )
    stored = "none" if tc in ("uncompressed", "none") else tc
    return stored, f"stored codec inferred: topic compression.type={tc} (the broker stores that codec)"
