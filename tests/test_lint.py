"""The code style is part of the suite: ruff's lint and format rules and mypy's type check
(all configured in pyproject.toml) hold."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _ruff() -> str:
    exe = shutil.which("ruff")
    if exe is None:
        pytest.fail("ruff is not installed; scripts/setup.sh installs it from requirements-dev.txt")
    return exe


def test_ruff_check() -> None:
    r = subprocess.run([_ruff(), "check", "."], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_ruff_format() -> None:
    r = subprocess.run([_ruff(), "format", "--check", "."], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy() -> None:
    if importlib.util.find_spec("mypy") is None:
        pytest.fail("mypy is not installed; scripts/setup.sh installs it from requirements-dev.txt")
    r = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
