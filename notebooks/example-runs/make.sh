#!/bin/sh
# How notebooks/example-runs/ was made: the same small plan (example-plan.toml, sim transport, no
# Kafka) run twice, pinned to 1 CPU and to 2 CPUs and labelled as two machines, each with an
# experiment-M CSV from kbench codecs bench pinned the same way.  About a minute; run it from
# anywhere, it rewrites the two run directories.
set -eu
cd "$(dirname "$0")/../.."
d=notebooks/example-runs
# The sim transport's runs last a fraction of a second: too short to measure CPU steal, so steal
# is injected at 0 % (the manifests and tables say so).  Not a measurement of this machine.
export KBENCH_INJECT_STEAL_PCT=0
for spec in "one-cpu 0" "two-cpus 0,1"; do
    set -- $spec
    rm -rf "${d:?}/$1"
    # the sim transport measures no latency: experiment A's rows are NA (the notebooks show them so)
    taskset -c "$2" python3 -m kbench run "$d/example-plan.toml" -o "$d/$1" --label "sim-$1"
    taskset -c "$2" python3 -m kbench codecs bench --corpus json --corpus-size 256KiB --codecs lz4,zstd:1,zstd:3 \
        --block-sizes 16KiB,64KiB --min-time 0.01 --repeats 3 -o "$d/$1"
done
# The manifests record the plan file's absolute path: made relative to the repository, so the
# committed example names no directory of the machine that made it.
sed -i "s|\"plan_source\": \"$(pwd)/|\"plan_source\": \"|" "$d"/one-cpu/manifest.json "$d"/two-cpus/manifest.json
