#!/usr/bin/env bash
# The whole test suite, set-up included: installs what a fresh Debian machine lacks
# (scripts/setup.sh), then runs pytest.  Tests that need Kafka start their own local
# cluster from the Maven-resolved jars.  Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
PY=${PYTHON:-python3}
# Resolve the Kafka jars once up front so the first Kafka test does not pay for it.
$PY -c "from kbench.kafka import kafka_dist; d = kafka_dist.find(); print('test: Kafka', d.version, 'from', d.source)"
exec $PY -m pytest -ra --durations=30 "$@"
