"""kbench advise --verify on a real local cluster: the model's predictions against measurements.

Run under ``flock /tmp/kbench-kafka.lock`` (one Kafka at a time on the shared machine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbench.engine import advise_verify as av
from kbench.kafka.procstat import FixedSteal
from kbench.model import advise as adv
from kbench.model import mtable
from kbench.model.codecs import parse_spec

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def test_verify_stored_bytes_within_3pct_and_producer_cpu_within_30pct(tmp_path: Path) -> None:
    work = adv.Workload(rate=10_000, partitions=6, replication_factor=1, client="librdkafka")
    specs = [parse_spec(s) for s in ("none", "lz4", "zstd:3")]
    corpus, _ = adv.corpus_for("json", work, [5.0])
    # M measured here, in this serial tier, into a cache of this test's own: the user's cache may
    # hold figures timed while the fast tier loaded both CPUs (CI: zstd:3 5x slow, +48 % predicted)
    # (5 timed repetitions of 50 ms each, the median: a burst of other load moves one, not the figure)
    m = mtable.measure_m(corpus, specs, cache_dir=tmp_path / "m-cache", min_time=0.05, repeats=5)
    advice = adv.advise(corpus, work, adv.Prices(), specs=specs, batch_sizes=[64 << 10], lingers=[5.0], m=m)
    # steal injected at 0 %: the gate and the rows must not depend on this host's hypervisor
    vs = av.run_verify(advice, tmp_path / "run", duration_s=5.0, m=m, steal_source=FixedSteal(0.0))
    print("\n".join(av.format_checks(vs)))
    assert [v.role for v in vs] == ["recommendation", "runner-up", "none"]
    assert {v.candidate.codec for v in vs} >= {"none", advice.best.codec}
    for v in vs:
        assert v.status == "OK", (v.role, v.reason)
        judged = {c.quantity: c for c in v.checks if c.tolerance is not None}
        stored = next(c for q, c in judged.items() if q.startswith("stored bytes"))
        assert stored.measured
        assert abs(stored.error) <= av.STORED_TOLERANCE, (v.role, stored)
        # the judged figure is at the run's batch count; the model's count is an upper bound: a
        # linger timer fires late on a loaded host, never early (CI: 691-898 batches against 1,000)
        batches = next(c for c in v.checks if c.quantity == "stored batches")
        assert batches.predicted and batches.measured and batches.measured <= batches.predicted * 1.02, batches
        if v.candidate.codec == "none":  # none's producer CPU calibrates the per-record cost: not judged
            assert not any(q.startswith("producer CPU") for q in judged)
            continue
        cpu = next(c for q, c in judged.items() if q.startswith("producer CPU"))
        assert cpu.measured
        assert abs(cpu.error) <= av.PRODUCER_CPU_TOLERANCE, (v.role, cpu)
