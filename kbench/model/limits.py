"""Bounds on every count, size, rate and duration a user can give, and why each holds.

One table for plans (``kbench.engine.plan``) and command-line flags (``kbench.commands``):
each bound is derived from what Kafka, librdkafka or this machine can do, and a refused
value's message names the limit and the reason.  NaN and infinities are refused everywhere.
Checked before anything is created, so a refused input leaves no run directory behind.
The table is documented in ``docs/plan-format.md`` (section "Limits").
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

__all__ = [
    "BOUNDS",
    "Bound",
    "LimitError",
    "MAX_CORPUS_RECORDS",
    "MAX_PLAN_S",
    "MAX_RECORD_BYTES",
    "RECORD_MEMORY_BYTES",
    "check",
    "check_corpus_records",
    "check_corpus_size",
    "check_record_size",
    "corpus_bytes_limit",
    "memory_available",
]


class LimitError(ValueError):
    """A value outside its bound; the message is one line with the limit and the reason."""


@dataclass(frozen=True)
class Bound:
    low: float
    high: float
    integer: bool
    reason: str
    low_open: bool = False  # low itself is refused (e.g. a rate must be > 0)


#: Each quantity's bound (inclusive unless ``low_open``) and the reason for it.
BOUNDS: dict[str, Bound] = {
    "repetitions": Bound(1, 1000, True, "each repetition is a full run of duration_s; 1000 per cell is days of work"),
    "duration_s": Bound(
        0.01, 86_400, False, "below one 10 ms tick no CPU counter moves; above a day, split the plan into runs"
    ),
    "warmup_s": Bound(0.01, 86_400, False, "a warm-up is a run: one 10 ms tick at least, at most a day"),
    "steady_skip_s": Bound(0, 86_400, False, "seconds left out of a repetition's CPU window"),
    "rate": Bound(
        0,
        10_000_000,
        False,
        "one producer peaks at a few million small messages/s; a higher target cannot be paced",
        low_open=True,
    ),
    "batch_size": Bound(
        1, 1_000_000_000, True, "librdkafka caps message.max.bytes at 1000000000: no batch can be bigger"
    ),
    "block_size": Bound(
        64,
        1_000_000_000,
        True,
        "a block stands for a batch: at least its 61-byte header and a record, at most librdkafka's 1000000000 bytes",
    ),
    "linger_ms": Bound(0, 900_000, False, "librdkafka's linger.ms range is 0..900000"),
    "partitions": Bound(1, 4096, True, "each partition costs every local broker open files and the producer a buffer"),
    "brokers": Bound(1, 3, True, "a local cluster has 1 or 3 brokers"),
    "replication_factor": Bound(1, 32767, True, "Kafka's replication factor is a 16-bit count"),
    "min_insync_replicas": Bound(1, 32767, True, "Kafka's min.insync.replicas is at most the replication factor"),
    "seed": Bound(0, 2**63 - 1, True, "seeds are recorded as 64-bit integers and passed to the C generators"),
    "auto_rate_fraction": Bound(0, 1, False, "a fraction of the saturated rate", low_open=True),
    "min_time": Bound(0.001, 3600, False, "a timed figure needs at least 1 ms; above an hour per figure is a mistake"),
    "repeats": Bound(1, 1000, True, "timed repetitions per figure; each lasts at least --min-time"),
    "keys": Bound(0, 100_000_000, True, "distinct keys are held in memory"),
    "gate_sample_s": Bound(0, 600, False, "seconds over which the gate samples steal (0: no sampling)"),
    "count": Bound(1, 10**12, True, "messages to send: 10^12 is days at the highest rate one producer reaches"),
    "timeout_s": Bound(0.01, 3600, False, "seconds to wait: at least 10 ms, at most an hour"),
    "pid": Bound(1, 4_194_304, True, "Linux pids are at most 4194304 (pid_max)"),
    "port": Bound(0, 65535, True, "a TCP port (0: any free one, printed when the server starts)"),
    "header_sample": Bound(1, 10**9, True, "one record in N carries the latency header; N >= 1"),
    "drivers": Bound(1, 1024, True, "producer/consumer drivers of one cell on Dask workers, each a process"),
    "topic_rate": Bound(
        0,
        10_000_000,
        False,
        "advise models four windows of the longest linger.ms of records at this rate in memory (2.5 M records at 10^7/s)",
        low_open=True,
    ),
    "retention_h": Bound(0, 876_000, False, "hours of retention: above 100 years is a mistake", low_open=True),
    "rows": Bound(0, 1_000_000, True, "rows of a table to print"),
    "retries": Bound(0, 1000, True, "extra attempts per cell, each a full repetition: 1000 is days of work"),
    "backlog_bytes": Bound(
        0, 100_000_000_000, True, "a catch-up backlog is produced before the drain and written to the brokers' disks"
    ),
    "p99_budget_ms": Bound(0, 3_600_000, False, "milliseconds kbench may add at p99: at most an hour", low_open=True),
}

#: Longest a whole plan may be planned to take (cells x (repetitions x duration + warm-up)).
MAX_PLAN_S = 7 * 86_400
#: A corpus is held in memory about this many times over (records, payload, compressed copies).
CORPUS_MEMORY_FACTOR = 4
#: Largest record a corpus may hold: librdkafka caps ``message.max.bytes`` at 10^9 bytes, so no
#: Kafka client kbench drives can send a bigger one (and the Java client's limit is lower).
MAX_RECORD_BYTES = 1_000_000_000
#: Most records a corpus may hold.  A corpus is cycled through, so 10^7 distinct records is more
#: than any measurement needs, and each costs memory beyond its bytes (below).
MAX_CORPUS_RECORDS = 10_000_000
#: Memory one record costs beyond its bytes, across the pipeline (Python objects, offsets, batch
#: bookkeeping): 100 MiB of 2-byte lines (52 M records) peaked at 5.37 GB RSS in ``kbench sim``.
RECORD_MEMORY_BYTES = 100


def memory_available() -> int:
    """Bytes of memory available to a new process (MemAvailable), or physical memory."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def corpus_bytes_limit() -> int:
    """Largest corpus this machine can hold: a quarter of the available memory."""
    return max(1, memory_available() // CORPUS_MEMORY_FACTOR)


def _fmt(v: float) -> str:
    if isinstance(v, int):
        return str(v) if abs(v) < 10**40 else f"a {len(str(abs(v)))}-digit number"
    return f"{int(v)}" if v.is_integer() and abs(v) < 1e18 else f"{v:g}"


def check(where: str, value: object, kind: str, high: float | None = None, reason: str | None = None) -> float | int:
    """``value`` checked against ``BOUNDS[kind]`` (``high``/``reason`` override its top);
    returns it as int or float, raises :class:`LimitError` naming ``where``."""
    b = BOUNDS[kind]
    top, why = (b.high, b.reason) if high is None else (high, reason or b.reason)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise LimitError(f"{where}: {value!r} is not a number; write a {'whole ' if b.integer else ''}number")
    if isinstance(value, float) and not math.isfinite(value):
        raise LimitError(f"{where}: {value} is not a finite number; give a value between {_fmt(b.low)} and {_fmt(top)}")
    if b.integer and isinstance(value, float) and not value.is_integer():
        raise LimitError(f"{where}: {value!r} must be a whole number")
    too_low = value <= b.low if b.low_open else value < b.low
    if too_low or value > top:
        rng = f"{'above' if b.low_open else 'at least'} {_fmt(b.low)} and at most {_fmt(top)}"
        raise LimitError(f"{where}: {_fmt(value)} is out of range; give a value {rng} ({why})")
    return int(value) if b.integer else float(value)


def check_corpus_size(where: str, value: object) -> int:
    """A built-in corpus size: a whole number of bytes that fits this machine's memory."""
    limit = corpus_bytes_limit()
    why = (
        f"a quarter of the {memory_available() >> 20} MiB of available memory: "
        f"a corpus is held in memory about {CORPUS_MEMORY_FACTOR} times over"
    )
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise LimitError(f"{where}: {value!r} is not a number; write bytes as a whole number")
    if isinstance(value, float) and not math.isfinite(value):
        raise LimitError(f"{where}: {value} is not a finite number; give bytes between 1 and {limit}")
    if not float(value).is_integer() or value < 1 or value > limit:
        raise LimitError(f"{where}: {_fmt(value)} bytes is out of range; give 1 to {limit} bytes ({why})")
    return int(value)


def check_record_size(where: str, which: str, size: int, at_least: bool = False) -> None:
    """A corpus record that no Kafka client could send is refused (``where``: the corpus,
    ``which``: the record, e.g. "the record at byte 0"; ``at_least``: ``size`` is a lower bound)."""
    if size > MAX_RECORD_BYTES:
        shown = f"over {MAX_RECORD_BYTES} bytes long" if at_least else f"{size} bytes"
        raise LimitError(
            f"{where}: {which} is {shown}, above the {MAX_RECORD_BYTES} bytes librdkafka's message.max.bytes "
            "allows (no Kafka client kbench drives could send it); split the data into records (one per line, "
            "or --corpus-format lenprefixed)"
        )


def check_corpus_records(
    where: str,
    records: int,
    payload: int,
    max_records: int = MAX_CORPUS_RECORDS,
    at_least: bool = False,
    fix: str = "use a smaller sample",
) -> None:
    """A corpus of ``records`` records (``at_least``: a lower bound) and ``payload`` bytes must stay
    under the record-count limit and fit this machine's memory (bytes x CORPUS_MEMORY_FACTOR +
    records x RECORD_MEMORY_BYTES)."""
    if records > max_records:
        shown = f"more than {max_records}" if at_least else str(records)
        raise LimitError(
            f"{where}: {shown} records, above the limit of {max_records} records (a corpus is cycled through, "
            f"and each record costs about {RECORD_MEMORY_BYTES} bytes of memory besides its own); {fix}"
        )
    need = payload * CORPUS_MEMORY_FACTOR + records * RECORD_MEMORY_BYTES
    have = memory_available()
    if need > have:
        raise LimitError(
            f"{where}: {records} records of {payload} bytes need about {need >> 20} MiB of memory "
            f"({CORPUS_MEMORY_FACTOR} x the bytes + {RECORD_MEMORY_BYTES} B per record), above the {have >> 20} MiB "
            f"available; {fix}"
        )
