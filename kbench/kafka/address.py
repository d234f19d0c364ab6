"""The one rule for a bootstrap address (``--bootstrap``, a plan's ``transport.bootstrap``).

``host:port[,host:port...]``, each optionally behind a listener name (``SASL_SSL://host:9093``,
as librdkafka and the Java client accept it).  Refused with one line, before anything connects
or is written: an empty address, an entry without a port or with a port outside 1–65535, a host
of characters no host name has, and credentials in the address (``user:password@host:9``): Kafka
clients do not read them there, and the password would be shown wherever the address is; the
message shows the address with them redacted and says where credentials go instead.
"""

from __future__ import annotations

import re

from kbench.kafka.secret import redact_url_credentials

__all__ = ["check_bootstrap"]

_LISTENER = re.compile(r"^(?P<proto>[A-Za-z][A-Za-z0-9_]*)://")
_HOST = re.compile(r"^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.\-]+)$")


def check_bootstrap(flag: str, text: object) -> str:
    """``text`` when it is a usable bootstrap address, else :class:`ValueError` naming ``flag``."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{flag}: empty; give host:port[,host:port] of a broker of the cluster")
    for raw in text.split(","):
        entry = raw.strip()
        shown = redact_url_credentials(entry)[:200]
        rest = _LISTENER.sub("", entry)
        if "@" in rest:
            raise ValueError(
                f"{flag}: '{shown}' holds credentials, which Kafka clients do not read from an address; "
                "give them as -X sasl.username=... -X sasl.password=... (or the plan's [client])"
            )
        host, sep, port = rest.rpartition(":")
        if not entry or not sep or not port.isdigit() or not 1 <= int(port) <= 65535:
            raise ValueError(f"{flag}: '{shown}' is not host:port (a port 1-65535); give e.g. broker-1:9092")
        if not _HOST.match(host):
            raise ValueError(f"{flag}: '{shown}' has no valid host name; give e.g. broker-1:9092")
    return text
