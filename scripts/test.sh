#!/usr/bin/env bash
# The test suite, set-up included (docs/testing.md lists the tiers and their times).
#
#   bash scripts/test.sh          every test: the fast tier first (fails fast), then the rest
#   bash scripts/test.sh --fast   the fast tier only: no broker, JVM, Go toolchain, sanitizer
#                                 build, browser, testbed or Dask, and nothing marked slow
#
# Extra arguments go to pytest (after --fast when both are given).  The set-up
# (scripts/setup.sh --test) is idempotent and reuses what is already installed.  pytest runs with
# `python -P` so that the installed kbench is imported, not the source tree; the tests' own helper
# modules (tests/*.py) are found through tests/conftest.py's directory, as pytest puts it on
# sys.path.  Tests that need Kafka start their own local cluster from the Maven-resolved jars.
set -euo pipefail
cd "$(dirname "$0")/.."
FAST="not kafka and not go and not sanitizer and not browser and not testbed and not dask and not slow"
fast=0
if [[ ${1:-} == --fast ]]; then
  fast=1
  shift
fi
# A -m among the extra arguments narrows each pass instead of replacing its selection.
want="" args=()
while (($#)); do
  case $1 in
    -m) want=$2; shift 2 ;;
    -m*) want=${1#-m}; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
both() { if [[ -n $want ]]; then echo "($1) and ($want)"; else echo "$1"; fi; }
if ((fast)); then bash scripts/setup.sh --test-fast; else bash scripts/setup.sh --test; fi
PY=${PYTHON:-python3}
# kbench is installed from its wheel (scripts/setup.sh): never import the source tree's copy (it has
# no built extension), in this script, pytest or any Python the tests start.
export PYTHONSAFEPATH=1
pytest=($PY -P -m pytest -ra --durations=30)
# The fast tier spreads over one worker more than the CPUs (pytest-xdist): many of its tests wait
# (dry runs' repetitions, deadlines), so a third worker on 2 CPUs took it from 143 s to 121 s; the
# other tiers run one test at a time, as their clusters and CPU figures need.
workers=$(($(nproc) + 1))
if ((fast)); then
  exec "${pytest[@]}" -n "$workers" -m "$(both "$FAST")" "${args[@]}"
fi
# Both passes: exit 5 (nothing selected) is fine for one of them when the arguments pick tests.
ran=0
pass() {
  local rc=0
  "${pytest[@]}" "$@" || rc=$?
  if ((rc == 0)); then ran=1; elif ((rc != 5)); then exit "$rc"; fi
}
echo "test: the fast tier (-m \"$(both "$FAST")\")"
pass -n "$workers" -m "$(both "$FAST")" "${args[@]}"
# Resolve the Kafka jars once up front so the first Kafka test does not pay for it.
$PY -P -c "from kbench.kafka import kafka_dist; d = kafka_dist.find(); print('test: Kafka', d.version, 'from', d.source)"
echo "test: the other tiers (-m \"$(both "not ($FAST)")\")"
pass -m "$(both "not ($FAST)")" "${args[@]}"
((ran)) || exit 5
