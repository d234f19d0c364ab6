"""The Java driver (``kbench/kafka/java``): built once with Maven, cached, started per role.

``build()`` runs ``mvn package dependency:build-classpath`` on the driver's sources against
``kafka-clients`` of the given Kafka version and caches the jar and its classpath under
``$KBENCH_CACHE/java-driver-<version>-<hash>`` (default ``~/.cache/kbench``), the hash covering the
pom, every source file and the version, so an edited source or another version builds anew.
``command()`` is the command line of one driver process (docs/drivers.md).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from dataclasses import dataclass
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

from kbench.kafka.kafka_dist import KAFKA_VERSION, KafkaDistError, cache_root, java, require_tool

__all__ = ["JVM_FLAGS", "JavaDriver", "build", "command", "source_hash"]

MAIN_CLASS = "kbench.driver.Main"
#: The JVM flags of every driver process: Kafka's own kafka-run-class.sh performance options and
#: the heap of kafka-producer-perf-test.sh, so the driver and ProducerPerformance run alike.
JVM_FLAGS = (
    "-Xmx512m",
    "-Xms512m",
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
)


@dataclass(frozen=True)
class JavaDriver:
    kafka_version: str
    jar: Path
    classpath: str  # the jar and its dependencies
    cache_dir: Path


def _files(root: Traversable, prefix: str = "") -> list[tuple[str, Traversable]]:
    out: list[tuple[str, Traversable]] = []
    for e in sorted(root.iterdir(), key=lambda x: x.name):
        rel = f"{prefix}{e.name}"
        if e.is_dir():
            out += _files(e, rel + "/")
        elif e.name == "pom.xml" or e.name.endswith(".java"):
            out.append((rel, e))
    return out


def _sources() -> list[tuple[str, Traversable]]:
    return _files(resources.files("kbench.kafka").joinpath("java"))


def source_hash(kafka_version: str = KAFKA_VERSION) -> str:
    """sha256 of the driver's pom, sources and the Kafka client version (the cache key)."""
    h = hashlib.sha256(kafka_version.encode())
    for rel, f in _sources():
        h.update(rel.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def build(kafka_version: str = KAFKA_VERSION) -> JavaDriver:
    """The driver for ``kafka_version``, built with Maven unless cached.  Raises KafkaDistError."""
    d = cache_root() / f"java-driver-{kafka_version}-{source_hash(kafka_version)[:12]}"
    jar, cp_file = d / "kbench-java-driver.jar", d / "classpath.txt"
    if jar.exists() and cp_file.exists():
        cp = cp_file.read_text().strip()
        if all(Path(j).exists() for j in cp.split(":") if j):
            return JavaDriver(kafka_version, jar, f"{jar}:{cp}", d)
    mvn = require_tool("mvn", "maven")
    java()
    src = d / "build"
    if src.exists():
        shutil.rmtree(src)
    for rel, f in _sources():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(f.read_bytes())
    tmp = d / "classpath.txt.tmp"
    proc = subprocess.run(
        [
            mvn,
            "-q",
            "-B",
            "-f",
            str(src / "pom.xml"),
            f"-Dkafka.version={kafka_version}",
            "package",
            "dependency:build-classpath",
            f"-Dmdep.outputFile={tmp}",
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    built = src / "target" / "kbench-java-driver-1.jar"
    if proc.returncode != 0 or not built.exists() or not tmp.exists():
        lines = (proc.stdout + proc.stderr).strip().splitlines()
        # Maven's first [ERROR] lines name the cause (a compile error, an unresolved artifact); its last
        # ones are generic advice
        errors = [ln.split("[ERROR]", 1)[1].strip() for ln in lines if "[ERROR]" in ln]
        why = [e for e in errors if e and not e.startswith(("->", "Re-run", "For more", "[Help", "To see"))][:3]
        raise KafkaDistError(
            f"Maven could not build the Java driver against kafka-clients {kafka_version}: "
            f"{' | '.join(why or lines[-5:])}"
        )
    shutil.copyfile(built, jar)
    tmp.replace(cp_file)
    return JavaDriver(kafka_version, jar, f"{jar}:{cp_file.read_text().strip()}", d)


def command(kafka_version: str = KAFKA_VERSION) -> list[str]:
    """The command line of one Java driver process."""
    drv = build(kafka_version)
    return [java(), *JVM_FLAGS, "-cp", drv.classpath, MAIN_CLASS]
