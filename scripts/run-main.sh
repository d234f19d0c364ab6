#!/usr/bin/env bash
# The main job, set-up included: `kbench run quick` (local one-broker cluster, plan `quick`,
# tables A-D printed).  Extra arguments go to `kbench run quick`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >&2
exec "${PYTHON:-python3}" -m kbench run quick "$@"
