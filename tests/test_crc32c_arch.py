"""CRC-32C on every code path, including the one this CPU does not have.

The native build checks the table and the host's hardware path (SSE4.2 on x86-64); the aarch64
build of the same test, cross-compiled and run under qemu-user, checks the ARMv8 CRC path.
"""

from __future__ import annotations

import platform
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = [str(ROOT / "tests" / "c" / "test_crc32c.c"), str(ROOT / "csrc" / "core" / "crc32c.c")]
FLAGS = ["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{ROOT / 'csrc' / 'core'}"]


def _need(tool: str, package: str) -> str:
    path = shutil.which(tool)
    assert path, f"{tool} not found; install it with: apt-get install -y {package} (scripts/setup.sh does)"
    return path


def test_native_paths(tmp_path: Path) -> None:
    exe = tmp_path / "crc"
    subprocess.run([_need("gcc", "gcc"), *FLAGS, *SRC, "-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok table")
    if platform.machine() == "x86_64":
        assert "sse4.2" in out.stdout.split() and "active=sse4.2" in out.stdout
    elif platform.machine() == "aarch64":
        assert "armv8" in out.stdout.split()


@pytest.mark.sanitizer
def test_armv8_path_under_qemu(tmp_path: Path) -> None:
    if platform.machine() == "aarch64":
        cc, runner = _need("gcc", "gcc"), []
    else:
        cc = _need("aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu")
        runner = [_need("qemu-aarch64", "qemu-user")]
    exe = tmp_path / "crc-aarch64"
    subprocess.run([cc, *FLAGS, "-static", *SRC, "-o", str(exe)], check=True)
    out = subprocess.run([*runner, str(exe)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[:3] == ["ok", "table", "armv8"] and "active=armv8" in out.stdout
