#!/usr/bin/env bash
# Install everything kbench needs on a fresh Debian machine, then build and install kbench.
# Idempotent: skips what is already there.  Used by the README's commands and by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  pkg-config gcc
  libzstd-dev liblz4-dev libsnappy-dev zlib1g-dev librdkafka-dev
  zstd lz4 kcat
  time linux-perf
  clang libclang-rt-14-dev
  default-jdk-headless maven
  valgrind
  chromium
  gcc-aarch64-linux-gnu qemu-user
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
echo "setup: installing Python dependencies and kbench"
$PY -m pip install -q --disable-pip-version-check -r requirements-dev.txt
$PY -m pip install -q --disable-pip-version-check --no-build-isolation -e .
$PY -c "import kbench; print('setup: kbench', kbench.__version__, 'codecs:', ', '.join(kbench.codecs.available()))"
# The Java driver (docs/drivers.md): built with Maven against kafka-clients of the pinned Kafka
# version, cached under ~/.cache/kbench/java-driver-<version>-<hash of its sources>.
$PY -c "from kbench.kafka import java_driver; print('setup: java driver', java_driver.build().jar)"
# The Go driver (docs/drivers.md: kafka-go and sarama): built with the Go toolchain (PATH or
# /usr/local/go/bin), cached under ~/.cache/kbench/go-driver-<hash of its sources and go version>.
$PY -c "from kbench.kafka import go_driver; print('setup: go driver', go_driver.build().binary)"
