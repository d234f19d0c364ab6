#!/usr/bin/env bash
# The main job, set-up included.  Where the testbed can run (root, network namespaces, tbf, pyroute2)
# and no argument is given, it runs `kbench run seed000-testbed`: seed 000's five hosts emulated on
# this machine (docs/testbed.md) where it has a CPU per host, else one broker (fit_topology: the run
# says which and why), A at half the pipeline's knee (probed with the consumer running) with every
# repetition's premise checked, and an A/A control measuring the host's noise.  Otherwise (or with arguments, e.g. --bootstrap host:9092) it runs
# `kbench run quick` on a local one-broker cluster.  Either prints the tables A-D.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >&2
PY=${PYTHON:-python3}
plan=quick
if [[ $# -eq 0 && $(id -u) -eq 0 ]] && "$PY" -P -m kbench.testbed.probe 2>/dev/null | grep -q '"tbf": true'; then
  plan=seed000-testbed
fi
echo "main job: kbench run $plan $*" >&2
exec "$PY" -P -m kbench run "$plan" "$@"
