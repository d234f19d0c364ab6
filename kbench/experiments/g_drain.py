"""Experiment G's driver jobs and their schedule on the local pool: a saturated producer writes
the backlog (not timed), its dirty pages are written to disk (os.sync, not timed) and its segment
files read once into the page cache (not timed), then a consumer group drains it from the start
offsets; the drain's span and each member's CPU (RunResult.drain).
The transport asks for the jobs through the registry (Experiment.jobs); the local pool runs them
by ``Jobs.schedule``.  The Dask pool does not run a drain: a plan with one on Dask workers is
refused (engine.plan_expand.check_local_only)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kbench.engine.live import LiveFigures
from kbench.engine.transports.base import CpuSample, RunRequest
from kbench.engine.transports.local_pool import WORKER_START_TIMEOUT, LocalPool, kill_all, schedule_fields, watched
from kbench.engine.transports.measure import JobInputs, Jobs, PoolResult, Window, delivered
from kbench.experiments.g_axes import axis, catch_up, fetch_props
from kbench.kafka import drivers, merge, procstat
from kbench.kafka.clients import family as client_family
from kbench.kafka.driver_client import results
from kbench.model.segment import topic_dirs

__all__ = [
    "HOLD",
    "LIBRDKAFKA_MEMBER_DEFAULTS",
    "LIBRDKAFKA_MEMBER_MALLOC",
    "MEMBER_DEFAULTS",
    "member_defaults",
    "member_malloc",
    "catch_up_jobs",
    "drain",
    "disk_read_bytes",
    "drain_summary",
    "page_in",
    "write_back",
]

#: A drain's members' client settings unless the plan's client properties set them
#: (benchmarks/README.md, "catch_up_members.py", has the drains behind each):
#:
#: - ``heartbeat.interval.ms`` 100 (the clients' default 3000).  Members start together, but on a
#:   broker without an initial rebalance delay (kbench pins group.initial.rebalance.delay.ms = 0) a
#:   group of one forms at once, and a member that joins a moment later makes the group rebalance
#:   only at the first member's next heartbeat: at 3 s that member read nothing for 3.0 s in 2 of 8
#:   two-member drains (-12 % and -4 % records/s); at 100 ms it waited 0.1-0.5 s.
#: - librdkafka's members only: ``queued.min.messages`` 1,000,000 and ``queued.max.messages.kbytes``
#:   1,048,576 (its defaults 100,000 and 65,536).  librdkafka 2.0.2 stops fetching a partition whose
#:   pre-fetch queue holds either, and looks again only at its broker thread's next wake, up to 1 s
#:   later (the ``fetch.queue.backoff.ms`` that bounds it came in a later release).  A drain's
#:   member takes its whole queue at each call (csrc/core/consumer.c), but two members, their
#:   librdkafka threads and the broker share two vCPUs: a loop thread held off the CPU for a few
#:   tens of milliseconds lets the queue reach 100,000 records, and the member then reads nothing
#:   for up to a second.  At the defaults, members of an lz4 two-member drain stood still 0.3-0.9 s,
#:   0-3 times each in an 8 s drain, and drains ran at 2.81-3.86 M records/s (-21 % / +8 % of the
#:   median, 10 drains); with these marks no member stood still and drains ran at 3.41-4.03 M
#:   (4 drains).  The queue is a prefetch limit, not a fetch size: requests stay the client's (or
#:   the cell's axes).
MEMBER_DEFAULTS = {"heartbeat.interval.ms": "100"}

#: A drain's members are held after READY and released together (the job's ``hold``,
#: docs/drivers.md): each subscribes once every member is assigned its start offsets, so that the
#: group forms from members that join at one instant, not one process start-up apart.  Without it,
#: on a broker without an initial rebalance delay, a two-member group sometimes formed twice
#: (rebalances 3, not 2): the first member read both partitions alone, pre-fetched the other's
#: records and dropped them at the second rebalance, inside the drain's span.  In the catch-up
#: runs catch-up-2026-12-04e and -05c (since replaced) the group formed twice in 10 of the 30
#: two-member repetitions, and 8 of those 10 were their cell's slowest (4) or second slowest (4),
#: down to 16 % below its median (were their ranks among the cell's five random, a rank sum as
#: low: p = 0.006).  Held, 8 of 8 lz4 two-member drains formed once (released as ready, the same
#: script: 6 of 8; benchmarks/results/catch_up_members-lz4-2-{hold,no-hold}-2026-12-05.jsonl), and
#: all 15 two-member repetitions of catch-up-2026-12-05d and -05e (since replaced) and of
#: catch-up-2026-12-06.
HOLD = True
LIBRDKAFKA_MEMBER_DEFAULTS = {"queued.min.messages": "1000000", "queued.max.messages.kbytes": "1048576"}

#: glibc malloc's thresholds for G's librdkafka members, set in the member before its client starts
#: (the job's ``mallopt``, docs/drivers.md): the heap is not handed back to the kernel (trim 1 GiB)
#: and blocks up to 32 MiB come from the heap, not from mmap.  With glibc's own thresholds, which
#: move with what the process happens to free first, a member's freed heap goes back to the kernel
#: (madvise) and is faulted in again as the queue refills: kernel time that is the allocator's,
#: not the codec's, and not the same from one repetition to the next.  Attached to members by
#: ``perf stat -e syscalls:sys_enter_madvise,page-faults`` (zstd:3, one member, 5.45 GB): with
#: these, 5 madvise calls and 2,000-20,000 page faults per drain; with glibc's starting thresholds
#: 1,427-1,482 and 140,000-192,000 (+0.3-0.5 s of kernel time); with glibc's own, 9-23 calls and
#: 6,000-31,000 faults in 8 drains, and 263,000 faults in one drain of 16 (+0.55 s).  In the
#: catch-up run before this setting one repetition of that cell spent 4x the kernel time of the
#: other four (0.57 vs 0.13-0.16 CPU-s/GB, its user time unchanged) and drained 16 % below their
#: median.  The Java client allocates in its own heap: its members get none.
LIBRDKAFKA_MEMBER_MALLOC = {"M_TRIM_THRESHOLD": 1 << 30, "M_MMAP_THRESHOLD": 32 << 20}


def member_defaults(client: str) -> dict[str, str]:
    """The settings a drain's member gets from G unless the plan's client properties set them."""
    own = LIBRDKAFKA_MEMBER_DEFAULTS if client_family(client) == "librdkafka" else {}
    return {**MEMBER_DEFAULTS, **own}


def member_malloc(client: str) -> dict[str, int]:
    """The glibc malloc parameters a drain's member sets before its client starts (none: glibc's own)."""
    return dict(LIBRDKAFKA_MEMBER_MALLOC) if client_family(client) == "librdkafka" else {}


def catch_up_jobs(req: RunRequest, inputs: JobInputs) -> Jobs | None:
    """A catch-up repetition: a saturated producer writes the backlog (``backlog_bytes`` of the
    corpus, not timed), then ``consumers`` group members drain it from the start offsets; None for
    a cell without a backlog."""
    cell = req.cell
    if not catch_up(cell):
        return None
    run_id = drivers.new_run_id()
    mean = req.corpus.size / max(1, len(req.corpus.records))
    count = max(1, int(round(axis(cell, "backlog_bytes") / mean)))
    producer = {
        "props": dict(inputs.producer_props),
        "topic": req.topic,
        "run_id": run_id,
        "mode": "saturated",
        "count": count,
        "duration": 0.0,
        "keys": cell.key_policy,
        "nkeys": 0 if cell.key_policy == "none" else 1024,
        "skip_s": 0.0,
        "header_sample": inputs.header_sample,
        "tick_s": drivers.DEFAULT_TICK_S,
    }
    consumer = {
        "props": {
            **member_defaults(cell.client),
            **req.client_properties,
            **fetch_props(cell),
            "bootstrap.servers": inputs.bootstrap,
        },
        "topic": req.topic,
        "run_id": run_id,
        "expected": 0,  # every record stored when the drain starts
        "header_sample": inputs.header_sample,
        "timeout": req.duration_s + 120.0,
        "skip_s": 0.0,
        "group": True,
        "from_beginning": True,
        # the members subscribe together once all are READY (LocalPool.spawn_consumers), not one
        # process start-up apart: see HOLD
        "hold": HOLD,
    }
    if malloc := member_malloc(cell.client):
        consumer["mallopt"] = malloc
    return Jobs(producer, consumer, count, consumers=axis(cell, "consumers"), schedule=drain)


def drain_summary(parts: Sequence[Mapping[str, Any]], merged: Mapping[str, Any]) -> dict[str, Any]:
    """A catch-up repetition's drain (RunResult.drain) from every member's RESULT and their merge:
    the span from the first record any member read to the last, and per member its CPU."""
    recv = [(p.get("windows") or {}).get("receive") for p in parts]
    spans = [r for r in recv if r]
    members = []
    for i, p in enumerate(parts):
        c = p.get("cpu") or {}
        members.append(
            {
                "name": f"consumer-{i + 1}",
                "records": int(p["records"]),
                "bytes": int(p["bytes"]),
                "usr_s": c.get("usr_s"),
                "sys_s": c.get("sys_s"),
                "wall_s": float(c.get("wall_s") or 0.0),
                "app_s": c.get("loadgen_s"),
                "client_s": c.get("client_s"),
                "rebalances": int(p.get("rebalances") or 0),
                "note": str(c.get("note") or ""),
            }
        )
    first = min(int(r["start_mono_ns"]) for r in spans) if spans else None
    last = max(int(r["end_mono_ns"]) for r in spans) if spans else None
    return {
        "consumers": len(parts),
        "records": int(merged["records"]),
        "unique": int(merged["unique"]),
        "bytes": int(merged["bytes"]),
        "lost": int(merged["lost"]),
        "duplicated": int(merged["duplicates"]),
        "stored_records": int(merged["stored_records"]),
        "span_s": (last - first) / 1e9 if first is not None and last is not None else None,
        "members": members,
    }


def write_back() -> float:
    """Write every dirty page to disk (os.sync) and return the seconds it took.  A saturated
    producer leaves gigabytes of the backlog dirty (the kernel's dirty_ratio: 20 % of memory); their
    writeback would otherwise run during the drain, on the CPUs the group and the broker share, and
    differ from one repetition to the next."""
    t0 = time.monotonic()
    os.sync()
    return time.monotonic() - t0


def page_in(log_dirs: Sequence[Path], topic: str) -> int:
    """Read every segment file of ``topic`` in ``log_dirs`` once, so that the drain reads the
    backlog from memory; the bytes read.  The drain is meant to measure the group reading from the
    broker's page cache (the backlog is sized to fit in it: g_backlog.backlog_cap), but a host may
    evict file pages nobody has read for a while: this VM's DAMON ``pageout`` scheme evicts pages
    idle for 60 s at up to 2 GiB/s, and a 12.6 GB backlog takes longer than that to produce, so
    its first segments were gone when the drain began.  Uncompressed two-member drains then read
    170-1,713 MB back from disk and ran the slower the more they read (12 drains, 2.78-4.65 M
    records/s: benchmarks/README.md)."""
    n = 0
    for d in log_dirs:
        for f in sorted(f for name in topic_dirs(d, topic) for f in (d / name).glob("*.log")):
            with f.open("rb", buffering=0) as fh:
                while chunk := fh.read(8 << 20):
                    n += len(chunk)
    return n


def disk_read_bytes(vmstat: Path = Path("/proc/vmstat")) -> int | None:
    """Bytes the host has read from block devices since boot (/proc/vmstat ``pgpgin``, KiB), or
    None where unreadable."""
    try:
        kib = procstat.parse_vmstat(vmstat.read_text()).get("pgpgin")
    except OSError:
        return None
    return None if kib is None else kib * 1024


def drain(pool: LocalPool, req: RunRequest, jobs: Jobs, window: Window) -> PoolResult:
    """Produce the backlog (saturated, not timed), write it back to disk (:func:`write_back`, its
    seconds in the drain's ``writeback_s``), read it into the page cache where the cluster's log
    dirs are on this machine (:func:`page_in`: ``page_in_bytes``, ``page_in_s``), then drain it
    with the consumer group; the broker window and the NIC counters span the drain: from every
    member assigned its start offsets and released (READY, then the hold's release, before it
    joins the group) to the last member's result.  The live status names the stage in progress (backlog, write-back, page-in, drain) with its figures; the drain
    record's ``disk_read_bytes`` is what the host read from disk from the window's opening to the
    last member's result."""
    stats = pool.tmp / f"{req.topic}.stats.jsonl"
    with watched(req, window, stats, "backlog") as sampler:
        producer = pool.spawn_producer(req, jobs, stats)
        sampler.add("producer", producer.proc.pid)
        try:
            producer.expect("STARTED", WORKER_START_TIMEOUT)
            pres = schedule_fields(producer.result(req.duration_s + 300.0))
        except BaseException:
            kill_all([producer])
            raise
    n_delivered = delivered(pres)[0]
    if req.live is not None:
        req.live(LiveFigures(stage="write-back", source="os.sync"))
    writeback_s = write_back()
    paged, page_in_s = 0, 0.0
    if pool.log_dirs:
        if req.live is not None:
            req.live(LiveFigures(stage="page-in", source="the backlog's segment files"))
        t0 = time.monotonic()
        paged = page_in(pool.log_dirs, req.topic)
        page_in_s = time.monotonic() - t0
    timeout = req.duration_s + 120.0
    window.nic_start()
    with watched(req, window, None, "drain") as sampler:
        consumers = pool.spawn_consumers(req, jobs, timeout, sampler)
        try:
            window.open()
            read0 = disk_read_bytes()
            parts = [schedule_fields(r) for r in results(consumers, timeout + 60.0)]
            read1 = disk_read_bytes()
            window.close()
            window.nic_end()
        except BaseException:
            kill_all(consumers)
            raise
    cres = {**parts[0], **merge.merge_consumers(parts, n_delivered)}
    drain = {
        **drain_summary(parts, cres),
        "writeback_s": round(writeback_s, 3),
        "page_in_bytes": paged,
        "page_in_s": round(page_in_s, 3),
        # what the host read from disk while the group drained: the check that it read memory
        "disk_read_bytes": None if read0 is None or read1 is None else read1 - read0,
    }
    cpu = tuple(
        CpuSample(
            m["name"],
            m["usr_s"],
            m["sys_s"],
            m["wall_s"],
            regressed=(m["usr_s"] or 0) < 0 or (m["sys_s"] or 0) < 0,
            note=m["note"],
            loadgen_s=m["app_s"],
            client_s=m["client_s"],
            window_payload_bytes=m["bytes"],
        )
        for m in drain["members"]
    )
    return PoolResult(
        producer=pres,
        consumer=cres,
        client_cpu=cpu,
        broker_window_bytes=int(drain["bytes"]),
        drain=drain,
    )
