"""Output into a pipe whose reader has gone (``kbench plans --json | head``) ends quietly:
exit 0 or 141 (128 + SIGPIPE, as ``yes | head``), nothing on stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("args", [["plans", "--json"], ["plans"], ["--help"], ["codecs", "list"]], ids=" ".join)
def test_a_closed_pipe_ends_quietly(args: list[str], tmp_path: Path) -> None:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before kbench writes a byte: every write fails with EPIPE
    try:
        p = subprocess.run(
            [sys.executable, "-P", "-m", "kbench", *args],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            timeout=120,
        )
    finally:
        os.close(write)
    assert p.returncode in (0, 141), p.stderr
    assert p.stderr == ""


def test_the_same_commands_write_their_output_to_an_open_pipe(tmp_path: Path) -> None:
    p = subprocess.run(
        [sys.executable, "-P", "-m", "kbench", "plans", "--json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert p.returncode == 0 and p.stdout.startswith("{") and p.stderr == ""
