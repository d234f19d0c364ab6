"""The librdkafka versions the C driver can run against (docs/drivers.md section 8).

``librdkafka`` is the library the extension links (Debian's 2.0.2 on the reference machine).
``librdkafka@V`` is the librdkafka that the installed confluent-kafka wheel of version ``V``
carries (``confluent_kafka.libs/librdkafka-*.so.1``: the same soname and ABI, built by Confluent
with its codecs and TLS inside, linking only the C library).  Its driver process is the same
worker with that library in ``LD_PRELOAD`` (:mod:`kbench.kafka.rdk_launch`): every ``rd_kafka_*``
symbol of the extension binds to it, before the extension's own ``DT_NEEDED`` librdkafka, and the
worker checks with ``rd_kafka_version_str()`` that it did.

confluent-kafka's version follows librdkafka's major.minor (the 2.16.1 wheel carries librdkafka
2.16.0), so ``librdkafka@2.16.1`` runs any librdkafka 2.16.x and nothing else.

Standard library only, and confluent_kafka is never imported: the wheel is found from its
installed files, so ``kbench --version`` and plan checks stay fast.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "SYSTEM",
    "WHEEL_DIST",
    "WheelLibrary",
    "available",
    "library_info",
    "locate",
    "same_series",
    "split",
    "wheel_libraries",
]

#: The client name of the librdkafka the extension links.
SYSTEM = "librdkafka"
#: The distribution whose wheel carries a librdkafka (the ``librdkafka-current`` extra pins it).
WHEEL_DIST = "confluent-kafka"


@dataclass(frozen=True)
class WheelLibrary:
    """One librdkafka carried by an installed wheel."""

    version: str  # the wheel's version: the client is librdkafka@<version>
    path: Path

    @property
    def client(self) -> str:
        return f"{SYSTEM}@{self.version}"


def split(client: str) -> tuple[str, str | None]:
    """``librdkafka@2.16.1`` -> (``librdkafka``, ``2.16.1``); a name without ``@`` -> (name, None)."""
    name, sep, version = client.partition("@")
    return name, (version if sep else None)


def wheel_libraries() -> dict[str, WheelLibrary]:
    """The librdkafka of the installed confluent-kafka wheel, by the wheel's version (empty when
    none is installed, or when it was built from source and carries no library of its own)."""
    from importlib import metadata  # only here: a slow import every command would pay

    try:
        dist = metadata.distribution(WHEEL_DIST)
    except metadata.PackageNotFoundError:
        return {}
    for f in dist.files or ():
        parts = Path(str(f)).parts
        if len(parts) == 2 and parts[0] == "confluent_kafka.libs" and parts[1].startswith("librdkafka"):
            path = Path(str(dist.locate_file(f)))
            if path.is_file():
                return {dist.version: WheelLibrary(dist.version, path)}
    return {}


def available() -> tuple[str, ...]:
    """Every librdkafka client name this installation can run, the linked one first."""
    return (SYSTEM, *sorted(w.client for w in wheel_libraries().values()))


def locate(version: str) -> WheelLibrary:
    """The library of ``librdkafka@version``; ValueError naming the available ones otherwise."""
    libs = wheel_libraries()
    if version in libs:
        return libs[version]
    have = ", ".join(available())
    raise ValueError(
        f"unknown client '{SYSTEM}@{version}': available are {have}; the librdkafka of another version "
        f"comes with pip install '{WHEEL_DIST}=={version}' (docs/drivers.md section 8)"
    )


def same_series(reported: str, requested: str) -> bool:
    """Whether a library reporting ``reported`` is what ``librdkafka@requested`` asks for: the
    same major.minor (confluent-kafka X.Y.z carries librdkafka X.Y.w)."""
    return reported.split(".")[:2] == requested.split(".")[:2]


def library_info(path: Path) -> tuple[str, str]:
    """(``rd_kafka_version_str()``, ``builtin.features``) of the librdkafka at ``path``, asked of
    the library itself, loaded on its own (RTLD_LOCAL: nothing else in this process binds to it).
    OSError when it cannot be loaded or is no librdkafka."""
    import ctypes

    lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_LOCAL)
    try:
        version_str, conf_new, conf_get, conf_destroy = (
            lib.rd_kafka_version_str,
            lib.rd_kafka_conf_new,
            lib.rd_kafka_conf_get,
            lib.rd_kafka_conf_destroy,
        )
    except AttributeError as e:
        raise OSError(f"{path} is not a librdkafka ({e})") from None
    version_str.restype = ctypes.c_char_p
    conf_new.restype = ctypes.c_void_p
    conf_get.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t))
    conf_get.restype = ctypes.c_int
    conf_destroy.argtypes = (ctypes.c_void_p,)
    conf_destroy.restype = None
    conf = conf_new()
    if not conf:
        raise OSError(f"{path}: rd_kafka_conf_new failed")
    buf = ctypes.create_string_buffer(1024)
    size = ctypes.c_size_t(len(buf))
    try:
        ok = conf_get(conf, b"builtin.features", buf, ctypes.byref(size)) == 0  # RD_KAFKA_CONF_OK
    finally:
        conf_destroy(conf)
    return version_str().decode(), buf.value.decode() if ok else ""
