"""Producer and consumer drivers: Python configuration and results over the C loops.

The loops live in C (``kbench._native.Producer`` / ``Consumer``); each runs with the GIL
released from start to end.  This module only prepares inputs (corpus records as one buffer
plus an ``array('q')`` of offsets, librdkafka properties passed verbatim), runs the loops in
worker threads so Ctrl-C in the main thread reaches them as a clean ``stop()``, and turns
their dicts into dataclasses.

One message in ``header_sample`` (those whose sequence number is divisible by it) carries a
24-byte header ``kb``: three big-endian 64-bit values, the CLOCK_MONOTONIC ns at ``produce()``,
the sequence number from 0 and the run id, so a consumer on the same host measures end-to-end
latency on that sample.  The other records carry no header, so the stored bytes are a
header-less producer's within a fraction of a percent.  The producer keeps each message's
sequence number and send time in memory (the message opaque), so service, delay and corrected
latency cover every record.  The consumer detects loss and duplicates from the record count
(checked against the partitions' high watermarks) and the sampled sequence numbers
(docs/methodology.md).

The fixed-rate loop sleeps between ticks (``tick``, default 100 µs) and sends every message due
by then, each with its own intended send time; it never spins.  With ``cpu_skip`` >= 0 it reads
its process's CPU per thread from ``cpu_skip`` seconds after the first due time to the end of the
flush: the client library's threads (librdkafka's ``rdk:*``) apart from the rest (the load
generator), and the loop thread alone.
"""

from __future__ import annotations

import math
import os
import threading
from array import array
from collections.abc import Callable, Mapping, Sequence
from itertools import accumulate
from typing import Any

from kbench import _native
from kbench._native import Histogram, KafkaError
from kbench.kafka.drivers_spec import (
    DEFAULT_HEADER_SAMPLE,
    DEFAULT_TICK_S,
    KEY_POLICIES,
    MODES,
    SERIES_INTERVAL_S,
    ConsumerResult,
    ProducerResult,
    ProducerSpec,
    RunPair,
)
from kbench.kafka.secret import redact_props

__all__ = [
    "Background",
    "DEFAULT_HEADER_SAMPLE",
    "DEFAULT_TICK_S",
    "Histogram",
    "KEY_POLICIES",
    "MODES",
    "SERIES_INTERVAL_S",
    "ConsumerResult",
    "KafkaError",
    "ProducerResult",
    "ProducerSpec",
    "RunPair",
    "consume",
    "first_seq_due_after",
    "new_run_id",
    "librdkafka_version",
    "new_consumer",
    "run_consumer",
    "produce",
    "produce_and_consume",
    "records_buffer",
    "redact",
    "client_level_range",
    "client_properties_table",
    "client_property_known",
    "client_version",
]


def redact(props: Mapping[str, str]) -> dict[str, str]:
    """A copy of librdkafka properties safe for logs and CSVs (the secret rule of :mod:`kbench.kafka.secret`)."""
    return redact_props(props)


def librdkafka_version() -> str:
    """The version of the librdkafka the C loops are linked against (``rd_kafka_version_str()``)."""
    return str(_native.rdkafka_version)


def client_level_range(codec: str) -> tuple[int, int]:
    """The ``compression.level`` values the linked librdkafka accepts for ``codec``, asked of
    librdkafka itself (ValueError with its message when it does not know the codec)."""
    lo, hi = _native.client_level_range(codec)
    return int(lo), int(hi)


def client_property_known(name: str) -> bool:
    """Whether the linked librdkafka knows property ``name`` (a conf set of an unknown name fails)."""
    return bool(_native.client_property_known(name))


def client_properties_table() -> str:
    """librdkafka's own table of every property it knows (``rd_kafka_conf_properties_show``)."""
    return str(_native.client_properties_table())


def client_version() -> str:
    """The linked client library, e.g. ``librdkafka 2.0.2``."""
    return f"librdkafka {_native.rdkafka_version}"


def records_buffer(records: Sequence[bytes]) -> tuple[bytes, array]:
    """Records back to back plus n+1 int64 offsets, the layout the C producer cycles through."""
    if not records:
        raise ValueError("the corpus has no records")
    return b"".join(records), array("q", accumulate(map(len, records), initial=0))


class Background:
    """``obj.run()`` in a daemon thread; ``done`` is set when it returns or raises, and
    :meth:`result` hands back its return value or raises its exception in the caller."""

    def __init__(self, obj: Any, name: str) -> None:
        self._obj = obj
        self._box: dict[str, Any] = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._target, name=name, daemon=True)
        self.thread.start()

    def _target(self) -> None:
        try:
            self._box["result"] = self._obj.run()
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            self._box["error"] = e
        finally:
            self.done.set()

    @property
    def error(self) -> BaseException | None:
        return self._box.get("error")

    def result(self) -> Any:
        """Wait for the thread; its return value, or its exception raised here."""
        self.thread.join()
        if "error" in self._box:
            raise self._box["error"]
        return self._box["result"]


def run_consumer(c: _native.Consumer, expected: int = 0) -> ConsumerResult:
    """Run a consumer made by :func:`new_consumer` to its end (Ctrl-C: it stops cleanly, ``stopped`` set)."""
    return _consumer_result(_run_native(c), expected)


def _run_native(obj: Any) -> Any:
    """Run obj.run() in a worker thread; Ctrl-C in this thread becomes obj.stop().

    The loop then finishes cleanly (the producer purges what is still queued) and its partial
    result comes back with ``stopped`` True and ``interrupted`` set.
    """
    bg = Background(obj, "kbench-native")
    interrupted = False
    # wait on an Event, not Thread.join: in CPython 3.11 a join interrupted by Ctrl-C can mark
    # the thread finished while it still runs
    while not bg.done.is_set():
        try:
            bg.done.wait(0.2)
        except KeyboardInterrupt:
            obj.stop()
            interrupted = True
    result = bg.result()
    if interrupted:
        result["interrupted"] = True
    return result


def new_run_id() -> int:
    """A random non-zero 63-bit id stamped into every record of one run (tells its records apart)."""
    return int.from_bytes(os.urandom(8), "big") & ((1 << 63) - 1) or 1


def _producer(spec: ProducerSpec, records: Sequence[bytes], run_id: int) -> Any:
    payload, offsets = records_buffer(records)
    return _native.Producer(
        dict(spec.props),
        spec.topic,
        payload,
        offsets,
        mode=spec.mode,
        rate=float(spec.rate),
        count=int(spec.count),
        duration=float(spec.duration),
        keys=spec.keys,
        nkeys=int(spec.nkeys),
        partition=int(spec.partition),
        run_id=run_id,
        stats_path=str(spec.stats_path) if spec.stats_path else None,
        flush_timeout=float(spec.flush_timeout),
        connect_timeout=float(spec.connect_timeout),
        header_sample=spec.effective_header_sample,
        tick=float(spec.tick),
        cpu_skip=float(spec.cpu_skip),
        seq_base=int(spec.seq_base),
        interval=float(spec.interval),
        latency_skip=float(spec.latency_skip),
    )


def _producer_result(d: dict[str, Any], spec: ProducerSpec) -> ProducerResult:
    d = dict(d)
    d.pop("interrupted", None)
    return ProducerResult(rate=spec.rate if spec.mode == "fixed-rate" else 0.0, **d)


def first_seq_due_after(rate: float, skip_s: float) -> int:
    """The first sequence number a fixed-rate producer's latency window holds: the least i whose due
    time t0 + (int)(i x 1e9/rate) ns (``kb_pace_due``, the same double arithmetic in every driver)
    is at or after t0 + (int)(skip_s x 1e9) ns; 0 without a skip."""
    if skip_s <= 0 or rate <= 0:
        return 0
    period, skip_ns = 1e9 / rate, int(skip_s * 1e9)
    i = max(0, math.ceil(skip_s * rate) - 2)
    while int(i * period) < skip_ns:
        i += 1
    return i


def produce(spec: ProducerSpec, records: Sequence[bytes], run_id: int | None = None) -> ProducerResult:
    """Run the C producer loop to completion; KafkaError carries librdkafka's message."""
    rid = run_id if run_id is not None else new_run_id()
    return _producer_result(_run_native(_producer(spec, records, rid)), spec)


def new_consumer(
    props: Mapping[str, str],
    topic: str,
    run_id: int,
    expected: int,
    timeout: float,
    max_records: int = 0,
    connect_timeout: float = 10.0,
    header_sample: int = DEFAULT_HEADER_SAMPLE,
    interval: float = 0.0,
    group: bool = False,
    from_beginning: bool = False,
    latency_skip: float = 0.0,
    latency_from_seq: int = 0,
    start: str = "end",
    start_value: int = 0,
    cpu_window: bool = False,
    hold: bool = False,
) -> _native.Consumer:
    """The C consumer loop, not started: ``run()`` blocks (GIL released), ``ready`` turns true once
    partitions are assigned at their end offsets, ``stop()`` ends it from another thread.

    ``group``: join the consumer group ``group.id`` (default ``kbench-<run id>``) and read the
    partitions the group assigns to this member (consumer.h), starting where the group has committed
    or, where it has not, at the partitions' end (``from_beginning``: their start, the catch-up drain);
    ``expected`` 0 then means every record stored when the run began.

    ``latency_skip``: e2e records only records sent this many seconds or more after the first
    ``kb`` header's send time (the latency window; the interval histograms keep every record);
    ``latency_from_seq`` > 0 instead: only records whose sequence number is at least it (one
    producer at a fixed rate: :func:`first_seq_due_after`, exactly the producer's window).

    ``start`` (assign mode only): where every partition starts: ``end`` (the default), ``beginning``,
    ``offset`` (``start_value``, within every partition's watermarks) or ``timestamp``
    (``start_value`` ms since the epoch: the first record at or after it; none: the end).
    ``cpu_window``: measure the steady window's CPU (``ConsumerResult.win_*``).
    ``hold`` (group only): after ``ready`` the member waits for ``release()`` before it subscribes,
    so that the members of a group join at one instant (G's drain, docs/drivers.md ``hold``)."""
    return _native.Consumer(
        dict(props),
        topic,
        run_id=run_id,
        expected=expected,
        max_records=max_records,
        timeout=timeout,
        connect_timeout=connect_timeout,
        header_sample=header_sample,
        interval=interval,
        group=group,
        from_beginning=from_beginning,
        latency_skip=latency_skip,
        latency_from_seq=latency_from_seq,
        start=start,
        start_value=start_value,
        cpu_window=cpu_window,
        hold=hold,
    )


def _consumer_result(d: dict[str, Any], expected: int) -> ConsumerResult:
    d = dict(d)
    d.pop("interrupted", None)
    return ConsumerResult(expected=expected, **d)


def consume(
    props: Mapping[str, str],
    topic: str,
    expected: int,
    run_id: int = 0,
    timeout: float = 60.0,
    max_records: int = 0,
    connect_timeout: float = 10.0,
    header_sample: int = DEFAULT_HEADER_SAMPLE,
) -> ConsumerResult:
    """Consume from the topic's current end offsets (standalone use)."""
    c = new_consumer(props, topic, run_id, expected, timeout, max_records, connect_timeout, header_sample)
    return _consumer_result(_run_native(c), expected)


def produce_and_consume(
    spec: ProducerSpec,
    records: Sequence[bytes],
    consumer_props: Mapping[str, str] | None = None,
    consume_timeout: float | None = None,
    on_started: Callable[[], None] | None = None,
) -> RunPair:
    """Start a consumer at the topic's end, then the producer; wait for both.

    The consumer expects exactly the producer's messages (``spec.count`` of them: by count, and
    the sampled ones by sequence number and run id) and stops when it has seen all of them or
    after ``consume_timeout`` (default: the producer's expected duration + 30 s).
    """
    if spec.count <= 0:
        raise ValueError("produce_and_consume needs a message count (spec.count > 0)")
    run_id = new_run_id()
    cprops = (
        dict(consumer_props) if consumer_props is not None else {"bootstrap.servers": spec.props["bootstrap.servers"]}
    )
    expected_s = spec.count / spec.rate if spec.mode == "fixed-rate" else 0.0
    timeout = consume_timeout if consume_timeout is not None else expected_s + 30.0
    cons = new_consumer(
        cprops, spec.topic, run_id, spec.count, timeout, 0, spec.connect_timeout, spec.effective_header_sample
    )
    prod = _producer(spec, records, run_id)
    cb = Background(cons, "kbench-consumer")
    try:
        # the consumer flips `ready` once assigned at the end offsets (or on failure)
        while not cons.ready and not cb.done.is_set():
            cb.done.wait(0.01)
        if cb.error is not None:
            raise cb.error
        if on_started:
            on_started()
        try:
            pres = _run_native(prod)
        except BaseException:
            cons.stop()
            raise
        if pres.get("interrupted"):
            cons.stop()
        while not cb.done.is_set():
            try:
                cb.done.wait(0.2)
            except KeyboardInterrupt:
                cons.stop()
        cb.thread.join()
    except KeyboardInterrupt:
        prod.stop()
        cons.stop()
        cb.done.wait()
        raise
    return RunPair(_producer_result(pres, spec), _consumer_result(cb.result(), spec.count))
