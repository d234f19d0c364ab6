#!/usr/bin/env bash
# Install what kbench needs on a fresh Debian machine, then build kbench's wheel and install it the
# way users do (not editable).  Idempotent: skips what is already there.
#
#   bash scripts/setup.sh           # the main job (scripts/run-main.sh): build tools, the codec and
#                                   # Kafka client libraries, Java + Maven for the local broker
#   bash scripts/setup.sh --test    # the above, plus what the test suite needs: sanitizer, valgrind,
#                                   # cross-architecture and browser tools, the test Python packages,
#                                   # the Java and Go drivers (scripts/test.sh calls this)
#   bash scripts/setup.sh --test-fast   # --test without building the Java and Go drivers, which
#                                   # only the slow tiers use (scripts/test.sh --fast calls this)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TEST=0 DRIVERS=0
case "${1:-}" in
  "") ;;
  --test) TEST=1 DRIVERS=1 ;;
  --test-fast) TEST=1 ;;
  *) echo "setup: unknown argument '$1'; use: bash scripts/setup.sh [--test | --test-fast]" >&2; exit 2 ;;
esac

# What the main job runs: build the extension, run a local broker (Java 17+, Maven for its jars).
MAIN_PACKAGES=(
  pkg-config gcc
  libzstd-dev liblz4-dev libsnappy-dev zlib1g-dev librdkafka-dev
  default-jdk-headless maven
)
# What only the tests use (docs/testing.md): codec and Kafka command-line tools for the oracles,
# GNU time and perf for the CPU oracles, procps's vmstat for the disk-read oracle, clang's sanitizers, valgrind, an aarch64 cross compiler
# and qemu for the CRC32C ports, chromium for the report's rendering.
TEST_PACKAGES=(
  zstd lz4 kcat
  time linux-perf procps
  clang libclang-rt-14-dev
  valgrind
  chromium tmux
  gcc-aarch64-linux-gnu qemu-user
)

packages=("${MAIN_PACKAGES[@]}")
((TEST)) && packages+=("${TEST_PACKAGES[@]}")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# kbench's wheel (scripts/build-wheel.sh), rebuilt only when the sources changed since it was made:
# dist/ of this checkout, else the build cache (~/.cache/kbench/wheels/<digest of the sources>, what
# an earlier checkout of the same sources built; scripts/source_digest.py lists what the digest covers).
digest=$("$PY" scripts/source_digest.py)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/kbench/wheels/$digest"
wheel=$(ls dist/kafka_kbench-*manylinux*.whl 2>/dev/null | head -n 1 || true)
if [[ -z $wheel || ! -f dist/SOURCES.sha256 || $(cat dist/SOURCES.sha256) != "$digest" ]]; then
  if [[ -f $cache/SOURCES.sha256 ]] && ls "$cache"/kafka_kbench-*manylinux*.whl >/dev/null 2>&1; then
    echo "setup: kbench's wheel of these sources from the build cache ($cache)"
    mkdir -p dist
    rm -f dist/kafka_kbench-*.whl dist/kafka_kbench-*.tar.gz dist/SOURCES.sha256
    cp "$cache"/kafka_kbench-* dist/
    cp "$cache/SOURCES.sha256" dist/  # last: the stamp says the copy is whole
  else
    echo "setup: building kbench's wheel (scripts/build-wheel.sh)"
    bash scripts/build-wheel.sh dist >/dev/null
    tmp=$(mktemp -d "${cache%/*}/.tmp-XXXXXX" 2>/dev/null || { mkdir -p "${cache%/*}" && mktemp -d "${cache%/*}/.tmp-XXXXXX"; })
    cp dist/kafka_kbench-* dist/SOURCES.sha256 "$tmp"/
    rm -rf "$cache" && mv "$tmp" "$cache" || rm -rf "$tmp"
  fi
  wheel=$(ls dist/kafka_kbench-*manylinux*.whl | head -n 1)
fi
echo "setup: installing $wheel"
# an editable install of kbench made before the distribution was renamed kafka-kbench
if "$PY" -m pip show -q kbench >/dev/null 2>&1; then
  "$PY" -m pip uninstall -q -y kbench
fi
"$PY" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$wheel"
# its dependencies and, for the tests, the development tools: one pip run (one resolution)
if ((TEST)); then
  "$PY" -m pip install -q --disable-pip-version-check "$wheel[test]" -r requirements-dev.txt
else
  "$PY" -m pip install -q --disable-pip-version-check "$wheel[testbed]"
fi
# -P: the installed kbench, never the source tree's (which has no built extension)
"$PY" -P -c "import kbench; print('setup: kbench', kbench.__version__, 'from', kbench.__path__[0], 'codecs:', ', '.join(kbench.codecs.available()))"

if ((DRIVERS)); then
  # The Java driver (docs/drivers.md): built with Maven against kafka-clients of the pinned Kafka
  # version, cached under ~/.cache/kbench/java-driver-<version>-<hash of its sources>.
  "$PY" -P -c "from kbench.kafka import java_driver; print('setup: java driver', java_driver.build().jar)"
  # The Go driver (docs/drivers.md: kafka-go and sarama): built with the Go toolchain (PATH or
  # /usr/local/go/bin), cached under ~/.cache/kbench/go-driver-<hash of its sources and go version>.
  "$PY" -P -c "from kbench.kafka import go_driver; print('setup: go driver', go_driver.build().binary)"
fi
