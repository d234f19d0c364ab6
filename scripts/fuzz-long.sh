#!/usr/bin/env bash
# Long fuzzing, outside CI: every libFuzzer harness in tests/fuzz/ (codec decoders, batch
# decoder, segment reader) under ASan + UBSan for RUNS executions each (default 10 million),
# from the same seed corpus the suite uses (tests/test_native_sanitized.py) plus frames of
# every codec.  CPU-bound: run it under `nice -n 19` on a shared machine.
#
#   scripts/fuzz-long.sh [OUT_DIR]        RUNS=10000000 JOBS=1 by default
#
# Per harness it leaves OUT_DIR/<harness>.log (libFuzzer's output), the grown corpus and any
# crash-*/leak-*/timeout-* artifact, and prints one summary line:
#   fuzz <harness>: <N> runs in <S> s, <C> corpus inputs, <K> findings
# Exit status 1 if any harness reported a finding or did not finish its runs.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${1:-/tmp/kbench-fuzz-long}
RUNS=${RUNS:-10000000}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}

# Build the harnesses and write the seed corpora with the suite's own helpers.
$PY - "$OUT" <<'PYEOF'
import sys
from pathlib import Path

sys.path.insert(0, "tests")
import test_native_sanitized as t

from kbench.model import codecs

out = Path(sys.argv[1])
samples = [b"", b"a", b"hello kafka " * 40, bytes(range(256)) * 8, b'{"id": 1, "v": "x"}\n' * 300]
seeds = {
    "batch": t._batch_seeds() + t.REGRESSIONS["batch"],
    "segment": t._segment_seeds() + t.REGRESSIONS["segment"],
    "codecs": [
        bytes([codec_id | (nib << 4)]) + codecs.compress(s, name)
        for codec_id, name in enumerate(["none", "gzip", "snappy", "lz4", "zstd"])
        for s in samples
        for nib in (0, 4, 12)
    ],
}
for harness, inputs in seeds.items():
    t._clang(out / f"fuzz_{harness}", t.ROOT / "tests" / "fuzz" / f"fuzz_{harness}.c", "fuzzer,address,undefined")
    corpus = out / f"corpus_{harness}"
    corpus.mkdir(exist_ok=True)
    for i, s in enumerate(inputs):
        (corpus / f"seed{i:03d}").write_bytes(s)
PYEOF

status=0
for exe in "$OUT"/fuzz_*; do
  h=${exe##*/fuzz_}
  start=$(date +%s)
  set +e
  "$exe" -runs="$RUNS" -rss_limit_mb=2048 -timeout=10 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$OUT/$h-" "$OUT/corpus_$h" >"$OUT/$h.log" 2>&1
  rc=$?
  set -e
  secs=$(( $(date +%s) - start ))
  done_runs=$(grep -o 'Done [0-9]* runs' "$OUT/$h.log" | awk '{print $2}' | tail -1)
  findings=$(find "$OUT" -maxdepth 1 -name "$h-*" | wc -l)
  ncorpus=$(find "$OUT/corpus_$h" -type f | wc -l)
  echo "fuzz $h: ${done_runs:-0} runs in $secs s, $ncorpus corpus inputs, $findings findings (exit $rc)"
  if [ "$rc" -ne 0 ] || [ "$findings" -ne 0 ] || [ "${done_runs:-0}" -lt "$RUNS" ]; then status=1; fi
done
exit $status
