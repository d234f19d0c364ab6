"""The simulated transport over :mod:`kbench.model.simulator`: producer batching + codec, a broker stage
that validates / recompresses / appends to a real segment file, and a consumer stage, on
three native threads with per-thread CPU.

Mapping to the engine's measurements (documented in ``docs/methodology.md``):

- the whole corpus is sent once per run (``duration_s`` does not apply); the simulated
  clock runs at the cell's rate, so a fixed-rate cell's achieved rate is its target;
- a saturated cell's throughput is records / the slowest stage's wall time (the pipeline's
  bottleneck), simulated at an arrival rate high enough to fill every batch;
- CPU per role is thread CPU (``CLOCK_THREAD_CPUTIME_ID``), usr+sys together (``usr_pct``
  and ``sys_pct`` are NA, ``cpu_s`` is measured) over the whole run, so each role's window
  payload is the whole corpus;
- steal from the request's steal source (default ``/proc/stat``) around the run;
- stored bytes, stored codecs and batch fill come from the segments the broker stage wrote;
- the client model is librdkafka's (kbench's real producer is librdkafka).
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass

from kbench.engine.transports.base import BatchFill, CpuSample, RunRequest, RunResult, TransportError, TransportInfo
from kbench.kafka import clients, procstat
from kbench.model import codecs
from kbench.model import simulator as sim_mod
from kbench.model.stats import distribution

__all__ = ["SimTransport"]

#: Arrival rate simulated for a saturated cell: far above any real producer.
SATURATED_SIM_RATE = 1e9


@dataclass
class SimTransport:
    kind: str = "sim"
    client: str = "librdkafka"

    def open(self) -> TransportInfo:
        return TransportInfo(kind="sim", client=f"kbench.model.simulator ({self.client} batching model)")

    def close(self) -> None:
        return None

    def run(self, req: RunRequest) -> RunResult:
        cell = req.cell
        spec = cell.spec
        tc = None if cell.topic_compression == "producer" else codecs.stored_codec(cell.topic_compression, spec)
        keys = 0 if cell.key_policy == "none" else 1024
        cfg = sim_mod.SimConfig(
            codec=spec.codec,
            level=spec.level,
            topic_compression=tc,
            client=clients.family(cell.client)
            if clients.family(cell.client) != "librdkafka"
            else self.client,  # a plan's client axis wins
            batch_size=cell.batch_size,
            linger_ms=cell.linger_ms,
            partitions=cell.partitions,
            rate=req.rate if req.rate is not None else SATURATED_SIM_RATE,
            keys=keys,
            partitioner="round-robin" if cell.key_policy == "round-robin" else "default",
            topic=req.topic[:200],
        )
        steal_source = req.steal_source or procstat.system_cpu
        before = steal_source()
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="kbench-sim-") as tmp:
            try:
                res = sim_mod.run(req.corpus, cfg, tmp)
            except (ValueError, codecs.CodecError) as e:
                raise TransportError(f"sim: {e}") from None
        wall = time.monotonic() - t0
        after = steal_source()
        n = res.stages["producer"].records
        if req.rate is not None:
            achieved, elapsed = req.rate, n / req.rate
        else:
            bottleneck = max(s.wall_s for s in res.stages.values()) or wall
            achieved, elapsed = n / bottleneck, bottleneck
        cpu = tuple(
            CpuSample(
                role=("broker-0" if role == "broker" else role),
                usr_s=None,
                sys_s=None,
                wall_s=st.wall_s,
                total_s=st.cpu_s,
                note="thread CPU, usr+sys together",
                window_payload_bytes=res.payload_bytes,
            )
            for role, st in res.stages.items()
        )
        rec = distribution([b.records for b in res.batches])
        size = distribution([b.stored_bytes for b in res.batches])
        return RunResult(
            messages_sent=n,
            messages_acked=n,
            payload_bytes=res.payload_bytes,
            elapsed_s=elapsed,
            target_rate=req.rate,
            achieved_rate=achieved,
            consumed=res.verified,
            lost=max(0, n - res.verified),
            duplicated=0,
            cpu=cpu,
            steal_pct=procstat.steal_pct(before, after),
            producer_wire_bytes=res.produced_bytes,
            consumer_wire_bytes=res.stages["consumer"].bytes_in,
            stored_bytes=res.stored_bytes,
            stored_batches=len(res.batches),
            stored_uncompressed_bytes=res.raw_batch_bytes,
            stored_codecs=tuple(sorted(res.stored_codecs)),
            topic_compression_readback=cell.topic_compression,
            batch_fill=BatchFill(
                len(res.batches),
                rec["p50"],
                rec["p90"],
                rec["max"],
                size["p50"],
                size["p90"],
                size["max"],
                "sim segments",
            ),
            notes=(f"sim: {res.mismatches} record mismatches",) if res.mismatches else (),
        )
