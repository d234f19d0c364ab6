"""librdkafka@V: the C driver on the librdkafka of the confluent-kafka wheel (docs/drivers.md section 8),
and ``kbench --version``.  Every test but the last needs no Kafka; confluent-kafka 2.16.1 comes with
requirements-dev.txt (the ``librdkafka-current`` extra)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from kbenv import KBENCH_PATH

from kbench import _native
from kbench.engine.plan import PlanError, parse
from kbench.kafka import clients, rdk_versions
from kbench.kafka.rdk_launch import preload_env
from kbench.versions import go_pins, lines, pom_kafka_version

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([KBENCH_PATH, os.environ.get("PYTHONPATH", "")])}
WHEEL = "2.16.1"  # the pin of requirements-dev.txt and of the librdkafka-current extra


def test_client_names_split_into_family_and_version() -> None:
    assert rdk_versions.split("librdkafka@2.16.1") == ("librdkafka", "2.16.1")
    assert rdk_versions.split("librdkafka") == ("librdkafka", None)
    assert clients.family("librdkafka@2.16.1") == "librdkafka" and clients.family("java") == "java"
    assert clients.client_problem(f"librdkafka@{WHEEL}") is None
    assert clients.client_problem("librdkafka") is None and clients.client_problem("sarama") is None


def test_an_unknown_version_is_refused_in_one_line_listing_the_available_ones() -> None:
    why = clients.client_problem("librdkafka@1.9.9")
    assert why is not None and "\n" not in why
    assert "librdkafka@1.9.9" in why and f"available are librdkafka, librdkafka@{WHEEL}" in why
    assert "java@1.0" in (clients.client_problem("java@1.0") or "")  # only librdkafka takes a version
    assert "unknown client 'kcat'" in (clients.client_problem("kcat") or "")


def test_the_plan_takes_a_versioned_client_and_refuses_an_unknown_one() -> None:
    sweep = {"name": "v", "experiments": ["A"], "codec": ["none"], "corpus": ["json"], "rate": [1000]}
    plan = parse({"sweep": [{**sweep, "client": ["librdkafka", f"librdkafka@{WHEEL}"]}]})
    assert plan.sweeps[0].client == ("librdkafka", f"librdkafka@{WHEEL}")
    with pytest.raises(PlanError, match=r"sweep\[0\]\.client: unknown client 'librdkafka@0\.1\.0': available are"):
        parse({"sweep": [{**sweep, "client": ["librdkafka@0.1.0"]}]})


def test_produce_refuses_an_unknown_version_before_connecting() -> None:
    cmd = [sys.executable, "-m", "kbench", "produce", "--client", "librdkafka@0.0.1", "--topic", "t"]
    p = subprocess.run(cmd + ["--bootstrap", "127.0.0.1:1"], env=ENV, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stdout == ""
    assert len(p.stderr.strip().splitlines()) == 1 and "librdkafka@0.0.1" in p.stderr and "available are" in p.stderr


def test_the_wheel_library_is_found_without_importing_confluent_kafka() -> None:
    code = "from kbench.kafka import rdk_versions; import sys; "
    code += "print(rdk_versions.available(), 'confluent_kafka' in sys.modules)"
    p = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == f"('librdkafka', 'librdkafka@{WHEEL}') False"
    lib = rdk_versions.locate(WHEEL)
    assert lib.path.parent.name == "confluent_kafka.libs" and lib.path.name.startswith("librdkafka")


def test_the_preloaded_library_is_the_one_the_extension_binds() -> None:
    """LD_PRELOAD puts the wheel's librdkafka in the global scope ahead of the extension's own
    DT_NEEDED librdkafka (whatever its name: the system's, or one bundled in kbench's wheel), so
    the version and features the extension reports are the wheel library's, exactly."""
    lib = rdk_versions.locate(WHEEL)
    version, features = rdk_versions.library_info(lib.path)
    assert rdk_versions.same_series(version, WHEEL) and "zstd" in features.split(",")
    code = "from kbench import _native; print(_native.rdkafka_version); print(_native.rdkafka_features)"
    env = preload_env(ENV, str(lib.path))
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [version, features]
    assert version != _native.rdkafka_version  # without the preload the linked library answers


def _driver(argv: list[str], job: dict[str, Any], env: dict[str, str]) -> str:
    p = subprocess.run(argv, input=json.dumps(job) + "\n", env=env, capture_output=True, text=True, timeout=60)
    return p.stdout.strip()


def test_the_worker_refuses_a_library_that_is_not_the_requested_one() -> None:
    """Without the preload the worker binds the linked librdkafka: it refuses the repetition in one line."""
    argv = [sys.executable, "-m", "kbench.kafka.worker", "--librdkafka", WHEEL]
    out = _driver(argv, {"role": "producer", "protocol": 1}, {k: v for k, v in ENV.items() if k != "LD_PRELOAD"})
    assert out.startswith("ERROR ") and len(out.splitlines()) == 1
    msg = json.loads(out[6:])
    assert f"librdkafka@{WHEEL} asked for but the driver runs librdkafka {_native.rdkafka_version}" in msg


def test_the_launcher_passes_the_library_check_and_answers_an_unknown_version() -> None:
    # the check comes first: an ERROR about the protocol means the library was the requested one
    out = _driver(clients.driver_command(f"librdkafka@{WHEEL}"), {"role": "producer", "protocol": 99}, ENV)
    assert out == 'ERROR "this driver speaks protocol 1"'
    out = _driver([sys.executable, "-m", "kbench.kafka.rdk_launch", "0.0.1"], {"role": "producer"}, ENV)
    assert out.startswith("ERROR ") and "unknown client 'librdkafka@0.0.1': available are" in out


def test_version_lists_every_library_without_a_jvm_or_a_build() -> None:
    t0 = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-m", "kbench", "--version"], env=ENV, capture_output=True, text=True, timeout=60
    )
    took = time.monotonic() - t0
    assert p.returncode == 0, p.stderr
    out = p.stdout.splitlines()
    assert out == lines()
    from kbench import __version__
    from kbench.kafka.kafka_dist import KAFKA_VERSION

    assert out[0] == f"kbench {__version__}"
    assert out[1].startswith(f"librdkafka {_native.rdkafka_version} (linked; features ") and "zstd" in out[1]
    wheel_version, wheel_features = rdk_versions.library_info(rdk_versions.locate(WHEEL).path)
    assert f"librdkafka@{WHEEL}: librdkafka {wheel_version} (confluent-kafka wheel; features {wheel_features})" in out
    codec = _native.codec_library_versions()
    assert f"codecs: zstd {codec['zstd']}, lz4 {codec['lz4']}, snappy {codec['snappy']}, zlib {codec['zlib']}" in out
    assert f"kafka {KAFKA_VERSION} (pinned broker)" in out
    assert f"java driver: kafka-clients {KAFKA_VERSION}" in out
    pins = go_pins((ROOT / "kbench/kafka/go/go.mod").read_text())
    assert f"go driver: kafka-go {pins['kafka-go']}, sarama {pins['sarama']}" in out
    # no JVM, no Go build, no command module: a few interpreter starts' worth, not seconds
    assert took < 5.0, took
    code = "import sys\nfrom kbench.cli import main\ntry:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
    code += (
        "print(sorted(m for m in sys.modules if m.startswith(('kbench.commands', 'pandas', 'numpy', 'distributed'))))"
    )
    p = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1] == "[]"


def test_pins_are_read_from_the_drivers_files() -> None:
    gomod = "module x\n\nrequire (\n\tgithub.com/IBM/sarama v1.2.3\n\tgithub.com/segmentio/kafka-go v0.4.1\n)\n"
    assert go_pins(gomod) == {"kafka-go": "v0.4.1", "sarama": "v1.2.3"}
    assert go_pins("require github.com/IBM/sarama v9.0.0\n") == {"sarama": "v9.0.0"}
    assert pom_kafka_version("<properties><kafka.version> 4.0.0 </kafka.version></properties>") == "4.0.0"


@pytest.mark.kafka
def test_produce_with_the_wheel_librdkafka_reports_its_version(kafka1: Any, tmp_path: Path) -> None:
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "kbench", "produce", "--client", f"librdkafka@{WHEEL}"]
    cmd += ["--bootstrap", kafka1.bootstrap_servers, "--topic", "rdk-wheel", "--create", "--rate", "1000"]
    cmd += ["--count", "500", "--codec", "zstd", "--consume", "-o", str(out)]
    p = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr
    assert "sent 500, delivered 500, failed 0" in p.stdout and "lost 0, duplicates 0" in p.stdout
    r = json.loads((out / "produce.json").read_text())
    info = r["producer"]["client"]
    version, features = rdk_versions.library_info(rdk_versions.locate(WHEEL).path)
    assert r["client"] == f"librdkafka@{WHEEL}" and info["name"] == f"librdkafka@{WHEEL}"
    assert info["version"] == version and info["version"].startswith("2.16.") and info["features"] == features
