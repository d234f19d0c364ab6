#!/usr/bin/env bash
# The whole test suite, set-up included: installs what a fresh Debian machine lacks
# (scripts/setup.sh), then runs pytest.  Tests that need Kafka start their own local
# cluster from the Maven-resolved jars.  Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
PY=${PYTHON:-python3}
# kbench is installed from its wheel (scripts/setup.sh): never import the source tree's copy (it has
# no built extension), in this script, pytest or any Python the tests start.
export PYTHONSAFEPATH=1
# Resolve the Kafka jars once up front so the first Kafka test does not pay for it.
$PY -P -c "from kbench.kafka import kafka_dist; d = kafka_dist.find(); print('test: Kafka', d.version, 'from', d.source)"
exec $PY -P -m pytest -ra --durations=30 "$@"
