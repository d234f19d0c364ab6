#!/bin/sh
# How notebooks/example-runs/ was made: the same small plan (example-plan.toml: one local Kafka
# broker, Apache Kafka from the Maven-resolved jars, librdkafka clients) run twice on one VM, pinned
# with taskset to CPU 0 and to CPUs 0,1 (broker, producer and consumer all inside the pin) and
# labelled as two machines, each with an experiment-M CSV from kbench codecs bench pinned the same
# way.  A few minutes per "machine"; run it from anywhere (it starts Kafka: on a shared machine,
# under the Kafka lock), it rewrites the two run directories (or only those named: make.sh one-cpu).
set -eu
cd "$(dirname "$0")/../.."
d=notebooks/example-runs
# 3 s repetitions on a VM shared with other work: steal would refuse repetitions for reasons that
# have nothing to do with compression, so steal is injected at 0 % (the manifests and tables say
# so).  The example's steal column is not a measurement of this machine.
export KBENCH_INJECT_STEAL_PCT=0
only="${*:-one-cpu two-cpus}"
for spec in "one-cpu 0 vm-pinned-1cpu" "two-cpus 0,1 vm-pinned-2cpus"; do
    set -- $spec
    case " $only " in *" $1 "*) ;; *) continue ;; esac
    rm -rf "${d:?}/$1"
    taskset -c "$2" python3 -m kbench run "$d/example-plan.toml" -o "$d/$1" --label "$3"
    # each repetition's full latency histograms (histograms/*.json, ~125 KB each) are read by no
    # table, report or notebook: left out of the committed example (the small *.hlog interval
    # logs and series.csv stay)
    rm -f "$d/$1"/histograms/*.json
    taskset -c "$2" python3 -m kbench codecs bench --corpus json --corpus-size 256KiB --codecs lz4,zstd:1,zstd:3 \
        --block-sizes 16KiB,64KiB --min-time 0.01 --repeats 3 -o "$d/$1"
done
# The manifests record the plan file's absolute path: made relative to the repository, so the
# committed example names no directory of the machine that made it.
# The local broker's temporary directory (gone once the run ends) likewise.
sed -i -e "s|\"plan_source\": \"$(pwd)/|\"plan_source\": \"|" -e "s|/tmp/kbench-cluster-[A-Za-z0-9_]*/|<temporary cluster directory>/|g" \
    "$d"/one-cpu/manifest.json "$d"/two-cpus/manifest.json
