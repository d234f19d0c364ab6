"""The Apache Kafka distribution kbench runs: jars resolved by Maven, or an existing KAFKA_HOME.

``classpath()`` resolves the pinned Kafka version's jars once (``mvn dependency:build-classpath``
on the pom shipped in ``kbench/data/kafka-pom.xml``) and caches the classpath under
``$KBENCH_CACHE`` (default ``~/.cache/kbench``).  With ``KAFKA_HOME`` set, its ``libs/*.jar``
are used instead.  ``java_command()`` builds a command line for a Kafka main class.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kbench.model.paths import cache_dir

__all__ = [
    "JMX_EXPORTER_VERSION",
    "KAFKA_VERSION",
    "KafkaDistError",
    "KafkaDist",
    "classpath",
    "find",
    "java_command",
    "jmx_exporter_agent",
    "jmx_exporter_config",
    "run_tool",
]

#: The pinned Apache Kafka version (keep in sync with kbench/data/kafka-pom.xml).
KAFKA_VERSION = "4.1.2"
#: The pinned Prometheus JMX exporter agent (keep in sync with kbench/data/jmx-exporter-pom.xml).
JMX_EXPORTER_VERSION = "1.0.1"


class KafkaDistError(RuntimeError):
    """The Kafka jars, Java or Maven could not be found or resolved."""


@dataclass(frozen=True)
class KafkaDist:
    """Where Kafka's jars come from and the resulting Java classpath."""

    version: str
    source: str  # "maven:<cache dir>" or "KAFKA_HOME:<dir>"
    classpath: str


def cache_root() -> Path:
    """kbench's cache directory (:func:`kbench.model.paths.cache_dir`)."""
    return cache_dir()


def require_tool(tool: str, package: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise KafkaDistError(f"'{tool}' not found on PATH; install it with: apt-get install -y {package}")
    return path


def java() -> str:
    """Path of the java executable (``$JAVA_HOME/bin/java`` first)."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    return require_tool("java", "default-jdk-headless")


def _from_kafka_home(home: Path) -> KafkaDist:
    libs = sorted((home / "libs").glob("*.jar"))
    if not libs:
        raise KafkaDistError(
            f"KAFKA_HOME={home} has no libs/*.jar; point it at an unpacked Kafka distribution or unset it"
        )
    version = "unknown"
    for jar in libs:
        if jar.name.startswith("kafka-clients-"):
            version = jar.name[len("kafka-clients-") : -len(".jar")]
    return KafkaDist(version=version, source=f"KAFKA_HOME:{home}", classpath=":".join(map(str, libs)))


def _from_maven() -> KafkaDist:
    d, cp = _maven_classpath("kafka-pom.xml", f"kafka-{KAFKA_VERSION}", f"Apache Kafka {KAFKA_VERSION}")
    return KafkaDist(KAFKA_VERSION, f"maven:{d}", cp)


def _maven_classpath(pom_name: str, stem: str, what: str) -> tuple[Path, str]:
    """Resolve the pom ``kbench/data/<pom_name>`` once; returns (cache dir, classpath)."""
    from importlib import resources  # only here: a slow import every command would pay

    pom_text = resources.files("kbench").joinpath(f"data/{pom_name}").read_text()
    # the cache is keyed by the pom's content, so editing the pom re-resolves the jars
    d = cache_root() / f"{stem}-{hashlib.sha256(pom_text.encode()).hexdigest()[:10]}"
    cp_file = d / "classpath.txt"
    if cp_file.exists():
        cp = cp_file.read_text().strip()
        if cp and all(Path(j).exists() for j in cp.split(":")):
            return d, cp
    mvn = require_tool("mvn", "maven")
    require_tool("java", "default-jdk-headless")
    d.mkdir(parents=True, exist_ok=True)
    pom = d / "pom.xml"
    pom.write_text(pom_text)
    tmp = d / "classpath.txt.tmp"
    proc = subprocess.run(
        [mvn, "-q", "-B", "-f", str(pom), "dependency:build-classpath", f"-Dmdep.outputFile={tmp}"],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    if proc.returncode != 0 or not tmp.exists():
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
        raise KafkaDistError(f"Maven could not resolve {what}: {' | '.join(tail)}")
    tmp.replace(cp_file)
    return d, cp_file.read_text().strip()


def jmx_exporter_agent() -> Path:
    """The Prometheus JMX exporter java agent jar (Maven, cached like the Kafka jars).

    ``$KBENCH_JMX_EXPORTER_JAR`` names an existing jar instead (e.g. with ``KAFKA_HOME``).
    """
    env = os.environ.get("KBENCH_JMX_EXPORTER_JAR")
    if env:
        if not Path(env).is_file():
            raise KafkaDistError(f"KBENCH_JMX_EXPORTER_JAR={env} is not a file; point it at the agent jar or unset it")
        return Path(env)
    _, cp = _maven_classpath(
        "jmx-exporter-pom.xml", f"jmx-exporter-{JMX_EXPORTER_VERSION}", f"the JMX exporter {JMX_EXPORTER_VERSION}"
    )
    jars = [Path(j) for j in cp.split(":") if Path(j).name.startswith("jmx_prometheus_javaagent")]
    if not jars:
        raise KafkaDistError(f"the JMX exporter pom resolved no jmx_prometheus_javaagent jar ({cp[:200]})")
    return jars[0]


def jmx_exporter_config() -> str:
    """kbench's exporter config (``kbench/data/jmx-exporter.yaml``): what kbench.kafka.metrics reads."""
    from importlib import resources

    return resources.files("kbench").joinpath("data/jmx-exporter.yaml").read_text()


def find() -> KafkaDist:
    """The Kafka distribution to use: ``$KAFKA_HOME`` if set, else the Maven-resolved jars."""
    home = os.environ.get("KAFKA_HOME")
    if home:
        return _from_kafka_home(Path(home))
    return _from_maven()


def classpath() -> str:
    """The Java classpath holding Kafka's broker and tools."""
    return find().classpath


def java_command(
    main_class: str, args: Sequence[str] = (), heap: str = "256m", jvm_opts: Sequence[str] = ()
) -> list[str]:
    """A command line running ``main_class`` from Kafka's jars."""
    return [java(), f"-Xmx{heap}", f"-Xms{heap}", *jvm_opts, "-cp", classpath(), main_class, *args]


def run_tool(
    main_class: str, args: Sequence[str] = (), timeout: float = 300, heap: str = "256m"
) -> subprocess.CompletedProcess[str]:
    """Run a Kafka tool to completion and return its output; raises KafkaDistError on failure."""
    cmd = java_command(main_class, args, heap=heap, jvm_opts=["-Dlog4j2.level=WARN"])
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise KafkaDistError(f"{main_class} exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    return proc
