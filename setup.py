"""Build kbench._native from csrc/core/*.c (pure C) and csrc/python/*.c (CPython bindings) against the system codec libraries and librdkafka.

Every library is located with pkg-config; a missing one stops the build with one line
naming the Debian package that provides it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup

# pkg-config module -> Debian package that ships it
LIBRARIES: dict[str, str] = {
    "libzstd": "libzstd-dev",
    "liblz4": "liblz4-dev",
    "snappy": "libsnappy-dev",
    "zlib": "zlib1g-dev",
    "rdkafka": "librdkafka-dev",
}


def _die(msg: str) -> None:
    sys.stderr.write(f"kbench build error: {msg}\n")
    raise SystemExit(1)


def _pkg_config(*args: str) -> str:
    return subprocess.run(["pkg-config", *args], check=True, capture_output=True, text=True).stdout.strip()


def _flags() -> tuple[list[str], list[str], list[tuple[str, str]]]:
    if shutil.which("pkg-config") is None:
        _die("pkg-config not found; install it with: apt-get install -y pkg-config")
    cflags: list[str] = []
    libs: list[str] = []
    for module, package in LIBRARIES.items():
        try:
            cflags += _pkg_config("--cflags", module).split()
            libs += _pkg_config("--libs", module).split()
        except subprocess.CalledProcessError:
            _die(f"library '{module}' not found by pkg-config; install it with: apt-get install -y {package}")
    snappy_version = _pkg_config("--modversion", "snappy")
    rdkafka_version = _pkg_config("--modversion", "rdkafka")
    defines = [("KB_SNAPPY_VERSION", f'"{snappy_version}"'), ("KB_RDKAFKA_PC_VERSION", f'"{rdkafka_version}"')]
    return cflags, libs, defines


def _extension() -> Extension:
    cflags, libs, defines = _flags()
    sources = sorted(str(p) for p in Path("csrc").glob("*/*.c"))
    return Extension(
        "kbench._native",
        sources=sources,
        depends=sorted(str(p) for p in Path("csrc").glob("*/*.h")),
        include_dirs=["csrc/core", "csrc/python"],
        define_macros=defines,
        extra_compile_args=["-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-pthread", *cflags],
        extra_link_args=["-pthread", *libs, "-lm"],
    )


setup(ext_modules=[_extension()])
