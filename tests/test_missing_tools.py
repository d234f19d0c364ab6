"""A Kafka experiment on a machine without Java, Maven or Go (the analysis side needs none of
them: README, "Install"): the first command that needs one says, in one line, which tool is
missing and how to get it, and exits 1 — no traceback.  Simulated with a PATH that holds none of
them and an empty kbench cache (so no jar or driver built earlier is found)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kbench import cli
from kbench.kafka import go_driver

LOCAL_PLAN = """\
name = "needs-a-broker"
repetitions = 1
duration_s = 4
warmup = false

[transport]
kind = "local"

[[sweep]]
name = "b"
experiments = ["B"]
codec = ["none"]
corpus = ["json"]
rate = "saturated"
"""


def _bare_env(tmp: Path, tools: dict[str, str] | None = None) -> dict[str, str]:
    """The environment with PATH holding only ``tools`` (name -> shell script), no JAVA_HOME,
    KAFKA_HOME or KBENCH_GO, and an empty cache."""
    bin_ = tmp / "bin"
    bin_.mkdir(exist_ok=True)
    for name, body in (tools or {}).items():
        (bin_ / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_ / name).chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "KAFKA_HOME", "KBENCH_GO")}
    env.update(PATH=str(bin_), KBENCH_CACHE=str(tmp / "cache"))
    return env


def _kbench(tmp: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kbench", *args], cwd=tmp, env=env, capture_output=True, text=True, timeout=120
    )


def _one_line(p: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kbench: error: "), p.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])


def test_a_local_broker_without_maven(tmp_path: Path) -> None:
    (tmp_path / "plan.toml").write_text(LOCAL_PLAN)
    p = _kbench(tmp_path, _bare_env(tmp_path), "run", "plan.toml", "-o", "run", "--gate-sample-s", "0")
    _one_line(p, "'mvn' not found", "apt-get install -y maven")


def test_a_local_broker_without_java(tmp_path: Path) -> None:
    (tmp_path / "plan.toml").write_text(LOCAL_PLAN)
    env = _bare_env(tmp_path, {"mvn": "exit 0"})  # Maven there, Java not
    p = _kbench(tmp_path, env, "run", "plan.toml", "-o", "run", "--gate-sample-s", "0")
    _one_line(p, "'java' not found", "apt-get install -y default-jdk-headless")


def test_a_cluster_without_maven(tmp_path: Path) -> None:
    p = _kbench(tmp_path, _bare_env(tmp_path), "cluster", "up", "--dir", str(tmp_path / "cluster"))
    _one_line(p, "'mvn' not found", "apt-get install -y maven")


def test_the_java_driver_without_maven(tmp_path: Path) -> None:
    args = ("produce", "--client", "java", "--bootstrap", "127.0.0.1:1", "--topic", "t")
    p = _kbench(tmp_path, _bare_env(tmp_path), *args, "--mode", "saturated", "--count", "10")
    _one_line(p, "'mvn' not found", "apt-get install -y maven")


@pytest.mark.parametrize("client", ["kafka-go", "sarama"])
def test_the_go_driver_without_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], client: str
) -> None:
    # in process: go_driver also looks at /usr/local/go/bin/go, which no PATH hides
    for k, v in _bare_env(tmp_path).items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("KBENCH_GO", raising=False)
    monkeypatch.setattr(go_driver, "GO_FALLBACK", tmp_path / "no-go" / "go")
    argv = ["produce", "--client", client, "--bootstrap", "127.0.0.1:1", "--topic", "t", "--mode", "saturated"]
    rc = cli.main([*argv, "--count", "10"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1, (rc, err)
    assert err[0].startswith("kbench: error: ") and "the Go toolchain ('go') is not on PATH" in err[0], err
    assert "install Go" in err[0]
