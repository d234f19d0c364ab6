"""``kbench --version``: kbench's version and every library version a measurement depends on.

The librdkafka the extension links and each librdkafka a ``librdkafka@V`` client runs (with their
``builtin.features``, as ``kcat -V`` prints them), the codec libraries (``kbench codecs list``),
the pinned Kafka, and the Java and Go drivers' client libraries, read from their pin files
(``pom.xml``, ``go.mod``): no JVM is started and nothing is built, so it takes a fraction of a
second.
"""

from __future__ import annotations

import re
from importlib import resources

__all__ = ["go_pins", "lines", "pom_kafka_version"]

#: The Go driver's client modules, by the client name kbench gives them.
GO_MODULES = {"kafka-go": "github.com/segmentio/kafka-go", "sarama": "github.com/IBM/sarama"}


def go_pins(go_mod: str) -> dict[str, str]:
    """The versions ``go.mod`` requires of the Go driver's clients, by client name."""
    out = {}
    for client, module in GO_MODULES.items():
        m = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", go_mod, re.MULTILINE)
        if m:
            out[client] = m.group(1)
    return out


def pom_kafka_version(pom: str) -> str | None:
    """The kafka-clients version the Java driver's ``pom.xml`` builds against by default."""
    m = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", pom)
    return m.group(1).strip() if m else None


def _read(*parts: str) -> str:
    return resources.files("kbench").joinpath(*parts).read_text()


def lines() -> list[str]:
    """The report, one library per line."""
    from kbench import __version__, _native
    from kbench.kafka import rdk_versions
    from kbench.kafka.kafka_dist import KAFKA_VERSION

    out = [f"kbench {__version__}"]
    out.append(f"librdkafka {_native.rdkafka_version} (linked; features {_native.rdkafka_features})")
    for w in rdk_versions.wheel_libraries().values():
        try:
            version, features = rdk_versions.library_info(w.path)
            out.append(f"{w.client}: librdkafka {version} ({rdk_versions.WHEEL_DIST} wheel; features {features})")
        except OSError as e:
            out.append(f"{w.client}: unusable ({e})")
    codec = _native.codec_library_versions()
    out.append("codecs: " + ", ".join(f"{k} {codec[k]}" for k in ("zstd", "lz4", "snappy", "zlib") if k in codec))
    out.append(f"kafka {KAFKA_VERSION} (pinned broker)")
    pom = pom_kafka_version(_read("kafka", "java", "pom.xml"))
    # the Java driver is built against the plan's Kafka version, the pinned one by default
    java = f"java driver: kafka-clients {KAFKA_VERSION}"
    out.append(java if pom == KAFKA_VERSION else f"{java} (pom.xml default {pom})")
    pins = go_pins(_read("kafka", "go", "go.mod"))
    out.append("go driver: " + ", ".join(f"{c} {v}" for c, v in pins.items()))
    return out
