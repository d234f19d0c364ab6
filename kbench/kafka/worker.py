"""One client role in its own process, so that its CPU is its own: ``python -m
kbench.kafka.worker`` is the librdkafka driver of the driver protocol (docs/drivers.md): it
reads a JSON job on stdin, prints ``READY`` (consumer assigned) or ``STARTED`` (producer about
to send), then one ``RESULT <json>`` line (or one ``ERROR <json string>`` line).

The consumer process measures its own CPU (``getrusage(RUSAGE_SELF)``, in microseconds: the loop thread and
librdkafka's threads, live and exited) from ``skip_s`` after it starts working to the end of its run.  The
producer's loop reads its process's CPU itself (C: the total from ``getrusage``, each thread from
``/proc/self/task/<tid>``), from
``skip_s`` after its first due time to the end of its flush: the whole process, librdkafka's threads
(``rdk:*``: the client) and every other thread (the load generator, nearly all of it the loop thread).
It reports where its CPU window starts (``window_start_ns``, CLOCK_MONOTONIC) with the producer's
schedule (``t0_ns``, first and last send), so the parent takes the payload of exactly that window.
"""

from __future__ import annotations

import base64
import ctypes
import json
import os
import resource
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kbench import _native
from kbench.kafka import drivers, merge, rdk_versions, rdstats
from kbench.kafka.clients import PROTOCOL
from kbench.model.corpus import read_records
from kbench.model.stats import histogram_us


def _hist(h: Any) -> dict[str, Any] | None:
    out = histogram_us(h)
    if out is not None:
        out["encoded"] = base64.b64encode(h.encode()).decode()
    return out


def _self_cpu() -> resource.struct_rusage:
    """This process's user and system CPU (every thread, live and exited) from ``getrusage``: the
    same counters as ``/proc/self/stat`` in microseconds instead of 10 ms ticks, so that a consumer's
    20 ms over a short window does not read 0 (the kernel scales the exact runtime by the ticks'
    user/system split)."""
    return resource.getrusage(resource.RUSAGE_SELF)


class _Window:
    """CPU of this process from ``skip_s`` after :meth:`start` to :meth:`stop`."""

    def __init__(self, skip_s: float) -> None:
        self.skip_s = skip_s
        self.a: resource.struct_rusage | None = None
        self.t_a = 0.0
        self.t_a_ns: int | None = None
        self._timer: threading.Timer | None = None

    def _mark(self) -> None:
        self.a, self.t_a = _self_cpu(), time.monotonic()
        self.t_a_ns = time.monotonic_ns()

    def start(self) -> None:
        if self.skip_s <= 0:
            self._mark()
        else:
            self._timer = threading.Timer(self.skip_s, self._mark)
            self._timer.daemon = True
            self._timer.start()

    def stop(self) -> dict[str, Any]:
        if self._timer is not None:
            self._timer.cancel()
        b, t_b = _self_cpu(), time.monotonic()
        if self.a is None:
            return {"usr_s": None, "sys_s": None, "wall_s": 0.0, "note": "run shorter than the steady-window skip"}
        return {
            "usr_s": b.ru_utime - self.a.ru_utime,
            "sys_s": b.ru_stime - self.a.ru_stime,
            "wall_s": t_b - self.t_a,
            "window_start_ns": self.t_a_ns,
            "note": "",
        }


def _intervals(ivs: list[dict[str, Any]] | None, off_ns: int) -> list[dict[str, Any]] | None:
    """The loop's time series in the protocol's shape (docs/drivers.md section 4.4)."""
    if ivs is None:
        return None
    return [
        {"truncated": True}
        if iv.get("truncated")
        else {
            "start_mono_ns": iv["start_ns"],
            "end_mono_ns": iv["end_ns"],
            "start_wall_ns": iv["start_ns"] + off_ns,
            "count": iv["sent"],
            "acked": iv["acked"],
            "failed": iv["failed"],
            "bytes": iv["bytes"],
            "latency": _hist(iv["hist"]),
        }
        for iv in ivs
    ]


def _client_info(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "library": "librdkafka",
        "version": drivers.librdkafka_version(),
        "features": str(_native.rdkafka_features),
        "runtime": f"CPython {sys.version.split()[0]}",
        "runtime_flags": [],
    }


def _window(start_ns: int, end_ns: int) -> dict[str, int]:
    """Monotonic ns (the C loops' clock) and the matching wall-clock ns."""
    off = time.time_ns() - time.monotonic_ns()
    return {
        "start_mono_ns": start_ns,
        "end_mono_ns": end_ns,
        "start_wall_ns": start_ns + off,
        "end_wall_ns": end_ns + off,
    }


def _client_stats(path: str | None, topic: str) -> dict[str, Any]:
    """Bytes on the wire and batch fill from librdkafka's last statistics line."""
    st = (rdstats.last_stats(Path(path)) if path else None) or {}
    fill = rdstats.batch_fill(st, topic)
    return {"wire_bytes": int(st["tx_bytes"]) if "tx_bytes" in st else None, "batch_fill": fill, "raw": {}}


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _wait_until(start_at_unix: float | None) -> None:
    """Sleep until a wall-clock instant (several producers on several hosts start together)."""
    while start_at_unix is not None and (left := float(start_at_unix) - time.time()) > 0:
        time.sleep(min(left, 0.05) if left > 0.002 else left)


def producer(job: dict[str, Any]) -> dict[str, Any]:
    records = read_records(job["corpus_file"], "lenprefixed")
    spec = drivers.ProducerSpec(
        topic=job["topic"],
        props=job["props"],
        mode=job["mode"],
        rate=float(job.get("rate") or 0.0),
        count=int(job.get("count") or 0),
        duration=float(job.get("duration") or 0.0),
        keys=job.get("keys", "none"),
        nkeys=int(job.get("nkeys", 0)),
        stats_path=Path(job["stats_path"]) if job.get("stats_path") else None,
        header_sample=int(job.get("header_sample", drivers.DEFAULT_HEADER_SAMPLE)),
        tick=float(job.get("tick_s", drivers.DEFAULT_TICK_S)),
        cpu_skip=float(job.get("skip_s", 0.0)),
        seq_base=int(job.get("seq_base", 0)),
        interval=float(job.get("interval_s") or 0.0),
        latency_skip=float(job.get("latency_skip_s") or 0.0),
    )
    _wait_until(job.get("start_at_unix"))
    _say("STARTED")
    r = drivers.produce(spec, records, run_id=int(job["run_id"]))
    return {
        **r.counts(),
        "send_seconds": r.send_seconds,
        "delivery_errors": r.delivery_errors,
        "client_errors": r.client_errors,
        "service": _hist(r.service),
        "delay": _hist(r.delay),
        "corrected": _hist(r.corrected),
        "sampled": r.sampled,
        "wakes": r.wakes,
        "cpu": _producer_cpu(r.cpu),
        "t0_ns": r.t0_ns,
        "first_send_ns": r.first_send_ns,
        "last_send_ns": r.last_send_ns,
        "windows": {
            "run": _window(r.t0_ns - 1_000_000, r.end_ns),
            "send": _window(r.t0_ns if r.mode == "fixed-rate" else r.first_send_ns, r.last_send_ns),
            "last_due_mono_ns": r.last_due_ns if r.mode == "fixed-rate" else None,
        },
        "client_stats": _client_stats(job.get("stats_path"), job["topic"]),
        "intervals": _intervals(r.intervals, time.time_ns() - time.monotonic_ns()),
        "intervals_latency": "corrected" if r.mode == "fixed-rate" else "service",
    }


def _producer_cpu(c: dict[str, Any] | None) -> dict[str, Any]:
    """The producer's CPU window in the shape the transport reads, with the per-thread split."""
    if c is None:
        return {"usr_s": None, "sys_s": None, "wall_s": 0.0, "note": "run shorter than the steady-window skip"}
    return {
        "usr_s": c["usr_s"],
        "sys_s": c["sys_s"],
        "wall_s": c["wall_s"],
        "window_start_ns": c["start_ns"],
        "loadgen_s": c["loadgen_usr_s"] + c["loadgen_sys_s"],
        "client_s": c["client_usr_s"] + c["client_sys_s"],
        "loop_s": c["loop_usr_s"] + c["loop_sys_s"],
        "client_threads": c["client_threads"],
        "note": "",
    }


#: mallopt(3) parameters a job's ``mallopt`` may set (glibc's malloc.h numbers).
MALLOPT = {"M_TRIM_THRESHOLD": -1, "M_MMAP_THRESHOLD": -3}


def set_malloc(params: Mapping[str, Any]) -> None:
    """Set glibc malloc parameters (a job's ``mallopt``, docs/drivers.md) before the client starts;
    ValueError naming one that is unknown or that glibc refuses."""
    libc = ctypes.CDLL(None)
    for name, value in params.items():
        if name not in MALLOPT:
            raise ValueError(f"mallopt {name}: unknown; the driver sets {', '.join(MALLOPT)}")
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**31:
            raise ValueError(f"mallopt {name}={value!r}: give an int from 0 to 2147483647")
        if libc.mallopt(MALLOPT[name], value) != 1:
            raise ValueError(f"mallopt {name}={value}: glibc refused it")


def consumer(job: dict[str, Any]) -> dict[str, Any]:
    set_malloc(job.get("mallopt") or {})
    c = drivers.new_consumer(
        dict(job["props"]),
        job["topic"],
        run_id=int(job["run_id"]),
        expected=int(job["expected"]),
        max_records=0,
        timeout=float(job["timeout"]),
        connect_timeout=float(job.get("connect_timeout", 10.0)),
        header_sample=int(job.get("header_sample", drivers.DEFAULT_HEADER_SAMPLE)),
        interval=float(job.get("interval_s") or 0.0),
        group=bool(job.get("group", False)),
        from_beginning=bool(job.get("from_beginning", False)),
        latency_skip=float(job.get("latency_skip_s") or 0.0),
        latency_from_seq=int(job.get("latency_from_seq") or 0),
        hold=bool(job.get("hold", False)),
    )
    bg = drivers.Background(c, "kbench-consumer")
    while not c.ready and not bg.done.is_set():
        bg.done.wait(0.005)
    w = _Window(float(job.get("skip_s", 0.0)))
    _say("READY")
    if job.get("hold"):
        sys.stdin.read()  # held: the runner closes stdin to release every member of the group at once
        c.release()
    w.start()
    bg.thread.join()
    cpu = w.stop()
    res = bg.result()  # raises the consumer's error, reported to the parent
    r = drivers.ConsumerResult(expected=int(job["expected"]), **{k: v for k, v in res.items() if k != "interrupted"})
    group = merge.group_counts([r.parts], r.expected) if r.parts is not None else None
    if float(job.get("skip_s", 0.0)) <= 0 and cpu.get("usr_s") is not None and cpu.get("sys_s") is not None:
        # the window spans the loop: its thread is the application, the rest librdkafka's threads
        # (fetch, decompression, group coordination) and the idle interpreter
        cpu["loadgen_s"] = r.loop_cpu_ns / 1e9
        cpu["client_s"] = max(0.0, cpu["usr_s"] + cpu["sys_s"] - r.loop_cpu_ns / 1e9)
    return {
        "records": r.records,
        "bytes": r.bytes,
        "unique": r.unique,
        "duplicates": r.duplicates,
        # a group member alone: what it read of the partitions against every stored record; the
        # group's loss is the merge of every member (merge.group_counts)
        "lost": group["lost"] if group else r.lost,
        "sampled": r.sampled,
        "samples_missing": r.samples_missing,
        "stored_records": r.stored_records,
        "parts": r.parts,
        "rebalances": r.rebalances,
        "commit_errors": r.commit_errors,
        "timed_out": r.timed_out,
        "errors": r.errors,
        "out_of_range": r.out_of_range,
        "foreign": r.foreign,
        "no_header": r.no_header,
        "partitions": r.partitions,
        "e2e": _hist(r.e2e),
        "cpu": cpu,
        "windows": {
            "run": _window(r.start_ns, r.end_ns),
            "receive": _window(r.first_ns, r.last_ns) if r.records else None,
        },
        "intervals": _intervals(r.intervals, time.time_ns() - time.monotonic_ns()),
        "intervals_latency": "e2e",
    }


def check_library(requested: str | None) -> str:
    """The client name of this driver: ``librdkafka``, or ``librdkafka@V`` once the bound library
    is checked to be V's (:mod:`kbench.kafka.rdk_launch` preloads it); ValueError when not."""
    if requested is None:
        return rdk_versions.SYSTEM
    got = drivers.librdkafka_version()
    if not rdk_versions.same_series(got, requested):
        preload = os.environ.get("LD_PRELOAD", "") or "nothing"
        raise ValueError(
            f"{rdk_versions.SYSTEM}@{requested} asked for but the driver runs librdkafka {got} (LD_PRELOAD "
            f"held {preload}); start it with python -m kbench.kafka.rdk_launch {requested}"
        )
    return f"{rdk_versions.SYSTEM}@{requested}"


def _requested(argv: list[str]) -> str | None:
    """The version of ``--librdkafka V`` (None without it)."""
    if len(argv) == 2 and argv[0] == "--librdkafka":
        return argv[1]
    if argv:
        raise ValueError(f"unknown arguments {' '.join(argv)}; the worker takes only --librdkafka VERSION")
    return None


def main(argv: list[str] | None = None) -> int:
    job = json.loads(sys.stdin.readline())
    try:
        name = check_library(_requested(sys.argv[1:] if argv is None else argv))
        if int(job.get("protocol", PROTOCOL)) != PROTOCOL:
            raise ValueError(f"this driver speaks protocol {PROTOCOL}")
        out = producer(job) if job["role"] == "producer" else consumer(job)
        out.update(protocol=PROTOCOL, client=_client_info(name))
    except Exception as e:  # noqa: BLE001 - one line back to the parent
        _say("ERROR " + json.dumps(str(e)))
        return 1
    _say("RESULT " + json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
