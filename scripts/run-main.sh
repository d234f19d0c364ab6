#!/usr/bin/env bash
# The main job, set-up included: the codec micro-benchmark (experiment M) on the bundled
# corpora, printing the table.  Extra arguments go to `kbench codecs bench`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >&2
exec "${PYTHON:-python3}" -m kbench codecs bench "$@"
