"""The Go driver (``kbench/kafka/go``): one binary over two Go clients, built once, cached.

``build()`` runs ``go build`` on the driver's module (``go.mod`` pins segmentio/kafka-go and
IBM/sarama; ``go.sum`` pins their hashes) and caches the binary under
``$KBENCH_CACHE/go-driver-<hash>`` (default ``~/.cache/kbench``), the hash covering ``go.mod``,
``go.sum``, every ``.go`` file and the toolchain's ``go version``, so an edited source, another
pin or another toolchain builds anew.  Modules come from Go's module cache (``go env
GOMODCACHE``), filled by ``go`` itself on the first build.  ``command(client)`` is the command
line of one driver process for ``kafka-go`` or ``sarama`` (docs/drivers.md).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

from kbench.kafka.kafka_dist import KafkaDistError, cache_root

__all__ = ["GO_CLIENTS", "GoDriver", "build", "command", "go", "source_hash"]

#: The client ids the Go driver serves (its ``-client`` flag).
GO_CLIENTS = ("kafka-go", "sarama")
#: Where the Go toolchain is looked for after ``$KBENCH_GO`` and ``PATH``.
GO_FALLBACK = Path("/usr/local/go/bin/go")
BINARY = "kbench-go-driver"


@dataclass(frozen=True)
class GoDriver:
    binary: Path
    cache_dir: Path
    go_version: str


def go() -> str:
    """Path of the ``go`` tool: ``$KBENCH_GO``, else ``go`` on PATH, else /usr/local/go/bin/go."""
    env = os.environ.get("KBENCH_GO")
    if env:
        if not Path(env).is_file():
            raise KafkaDistError(f"KBENCH_GO={env} is not a file; point it at the go tool or unset it")
        return env
    found = shutil.which("go")
    if found:
        return found
    if GO_FALLBACK.is_file():
        return str(GO_FALLBACK)
    raise KafkaDistError(
        "the Go toolchain ('go') is not on PATH nor at /usr/local/go/bin/go; install Go >= 1.26 "
        "(or set KBENCH_GO) to use client = kafka-go or sarama"
    )


def _sources() -> list[tuple[str, Traversable]]:
    root = resources.files("kbench.kafka").joinpath("go")
    out = [
        (e.name, e)
        for e in root.iterdir()
        if e.is_file() and (e.name in ("go.mod", "go.sum") or e.name.endswith(".go"))
    ]
    return sorted(out, key=lambda x: x[0])


def _go_version(tool: str) -> str:
    p = subprocess.run([tool, "version"], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise KafkaDistError(f"'{tool} version' failed: {(p.stderr or p.stdout).strip()[:300]}")
    return p.stdout.strip()


def source_hash(go_version: str) -> str:
    """sha256 of the driver's go.mod, go.sum, sources and the toolchain version (the cache key)."""
    h = hashlib.sha256(go_version.encode())
    for rel, f in _sources():
        h.update(rel.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _why(output: str) -> str:
    """The lines of go's output that name the cause (a compile error, a module it cannot get)."""
    lines = [ln.strip() for ln in output.strip().splitlines() if ln.strip()]
    causes = [ln for ln in lines if not ln.startswith("#")]
    return " | ".join((causes or lines)[:4])[:1200]


def build() -> GoDriver:
    """The Go driver, built with ``go build`` unless cached.  Raises KafkaDistError."""
    tool = go()
    version = _go_version(tool)
    d = cache_root() / f"go-driver-{source_hash(version)[:12]}"
    binary = d / BINARY
    if binary.is_file() and os.access(binary, os.X_OK):
        return GoDriver(binary, d, version)
    src = d / "build"
    if src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    for rel, f in _sources():
        (src / rel).write_bytes(f.read_bytes())
    tmp = d / f"{BINARY}.tmp"
    flags = " ".join([os.environ.get("GOFLAGS", ""), "-mod=readonly"]).strip()  # go.mod and go.sum as committed
    env = {**os.environ, "GOFLAGS": flags, "CGO_ENABLED": "0"}
    try:
        proc = subprocess.run(
            [tool, "build", "-trimpath", "-o", str(tmp), "."],
            cwd=src,
            capture_output=True,
            text=True,
            timeout=1200,
            env=env,
        )
    except subprocess.TimeoutExpired as e:
        raise KafkaDistError(
            f"go build of the Go driver took over {e.timeout:.0f} s; is the module cache reachable?"
        ) from e
    if proc.returncode != 0 or not tmp.is_file():
        raise KafkaDistError(
            f"go build could not build the Go driver ({version}; modules from the module cache or "
            f"go's module proxy): {_why(proc.stdout + proc.stderr)}"
        )
    tmp.replace(binary)
    return GoDriver(binary, d, version)


def command(client: str) -> list[str]:
    """The command line of one Go driver process for ``client`` (kafka-go or sarama)."""
    if client not in GO_CLIENTS:
        raise ValueError(f"the Go driver serves {', '.join(GO_CLIENTS)}, not '{client}'")
    return [str(build().binary), "-client", client]
