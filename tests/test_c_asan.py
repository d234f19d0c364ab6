"""Build the C tests with AddressSanitizer + UBSan (and leak checking) and run them."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.sanitizer

ROOT = Path(__file__).resolve().parent.parent
LIBS = ["libzstd", "liblz4", "snappy", "zlib"]


def _pkg(*args: str) -> list[str]:
    return subprocess.run(["pkg-config", *args, *LIBS], check=True, capture_output=True, text=True).stdout.split()


def build_and_run(test: str, sources: list[str], tmp_path: Path) -> str:
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler is required"
    exe = tmp_path / test
    cmd = [
        cc,
        "-std=c11",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-O1",
        "-g",
        "-fno-omit-frame-pointer",
        "-fsanitize=address,undefined",
        "-fno-sanitize-recover=all",
        f"-I{ROOT / 'csrc' / 'core'}",
        *_pkg("--cflags"),
        str(ROOT / "tests" / "c" / f"{test}.c"),
        *[str(ROOT / "csrc" / "core" / s) for s in sources],
        "-o",
        str(exe),
        *_pkg("--libs"),
        "-lm",
    ]
    subprocess.run(cmd, check=True)
    env = dict(
        os.environ,
        ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1",
        UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1",
    )
    proc = subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.mark.slow
def test_codecs_under_asan_ubsan(tmp_path: Path) -> None:
    out = build_and_run("test_codecs_asan", ["codecs.c", "error.c"], tmp_path)
    assert out.strip().endswith(", 0 failed")


def test_pacing_schedule_under_asan_ubsan(tmp_path: Path) -> None:
    """The fixed-rate schedule on a fake clock: every message once, in order, never early, wakes a tick apart."""
    out = build_and_run("test_pacing", ["pacing.c"], tmp_path)
    assert out.strip().endswith(", 0 failed"), out


def test_thread_cpu_split_under_asan_ubsan(tmp_path: Path) -> None:
    """A thread named like librdkafka's is counted as the client's; the classes sum to the process total."""
    out = build_and_run("test_threadcpu", ["threadcpu.c", "clock.c", "error.c"], tmp_path)
    assert out.strip().endswith(", 0 failed"), out


def test_intervals_under_asan_ubsan(tmp_path: Path) -> None:
    """The drivers' interval series on a fake clock: whole-width cuts, a stall as empty intervals, growth."""
    out = build_and_run("test_intervals", ["intervals.c", "histogram.c", "clock.c", "error.c"], tmp_path)
    assert out.strip().endswith(", 0 failed"), out
