"""Where a two-member catch-up drain's time goes, member by member.

``kbench run catch-up`` (experiment G) records a drain's span (first record any member read to the
last) and each member's CPU, not each member's share of the records nor its own window.  This runs
one cell of the bundled catch-up plan (``--codec``, ``--consumers``) through the same transport
and drain as the runner, ``--reps`` times with a fixed ``--backlog-bytes`` on a fresh local
cluster, and prints per drain, one JSON object per line: the span and records/s, each member's
assignments (``rebalances``: 1 each when the group formed before reading), its share of the
records, its CPU seconds and its receive window relative to the first record of the drain.  It
reads the members' windows by wrapping ``g_drain.drain_summary`` (the RESULTs of the members, as
the runner gets them); nothing else changes unless asked: ``--interval S`` has every member keep
its time series at S seconds and prints, per member, each stretch of 0.3 s or more inside its
receive window without a record (``pauses_s``) and its time in intervals without one, however
short (``idle_s``); ``--prop KEY=VALUE`` sets a consumer property for
every member over G's own (``g_drain.member_defaults``) and the plan's, e.g. librdkafka's defaults
back: ``--prop queued.min.messages=100000 --prop queued.max.messages.kbytes=65536``; ``--malloc
glibc`` leaves the members' malloc thresholds glibc's own instead of G's (``g_drain.member_malloc``).
Every line has ``disk_read_mb``: what the host read from block devices (/proc/vmstat ``pgpgin``)
from G's page-in (g_drain.page_in: the backlog's segment files read once after the write-back,
``read_before_mb``) to the end of the drain; ``--page-cache as-is`` leaves the page-in out, as G
did before it, so that the drain reads what the kernel left in memory.
Every line also has ``free_mb_before`` (/proc/meminfo MemFree as the drain starts), ``vm``: the
increase of the kernel's reclaim counters over the same span (``VM_COUNTERS``), and
``host_cpu_pct``: the host's CPU time by state over it (/proc/stat, percent of all CPUs).
``--broker-config KEY=VALUE`` sets a broker setting of the local cluster; ``--probe`` times
faulting in 1 GiB of fresh memory and copying 256 MiB just before each drain; ``--sched`` samples
during each drain which CPU the broker's and the members' busy threads ran on and their CPU seconds
by thread name (the JVM's full thread names from ``jcmd Thread.print``), per-CPU time and
NET_RX/NET_TX softirqs, the host's TCP counters and ``ss -tinm`` of its loopback connections 2 s
in (``sched``); ``--tcp-cc NAME`` sets the host's TCP congestion control for the command (the
broker's accepted connections take it) and puts the old one back at the end.

Usage (the flock keeps it off a machine another Kafka test uses):
    flock /tmp/kbench-kafka.lock python3 benchmarks/catch_up_members.py --codec lz4 --consumers 2 \\
        --backlog-bytes 11046829962 --reps 8 --interval 0.1 --out r.jsonl
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kbench.commands.args import key_value
from kbench.engine import plan as plan_mod
from kbench.engine.plan_expand import expand
from kbench.engine.runner import load_corpora
from kbench.engine.transports.base import RunRequest, TransportError
from kbench.engine.transports.kafka import KafkaTransport
from kbench.experiments import g_drain
from kbench.experiments.g_axes import axis
from kbench.kafka.procstat import SystemCpu, parse_vmstat, system_cpu


def _emit(line: Mapping[str, Any], out: Path | None) -> None:
    """One drain's line on stdout and, with --out, appended to that file."""
    print(json.dumps(line), flush=True)
    if out is not None:
        with out.open("a") as f:
            f.write(json.dumps(line) + "\n")


#: /proc/vmstat counters printed per drain as their increase over it (``vm``): the kernel
#: reclaiming memory (pages scanned by kswapd or by an allocating task, tasks stalled allocating),
#: compacting it, and reading back file pages it had evicted.
VM_COUNTERS = (
    "pgscan_kswapd",
    "pgscan_direct",
    "allocstall_normal",
    "allocstall_movable",
    "compact_stall",
    "workingset_refault_file",
)


def _vmstat() -> dict[str, int]:
    """/proc/vmstat as numbers (pgpgin: KiB the host has read from block devices since boot)."""
    out = parse_vmstat(Path("/proc/vmstat").read_text())
    if "pgpgin" not in out:
        raise RuntimeError("/proc/vmstat has no pgpgin")
    return out


def _host_cpu(a: SystemCpu | None, b: SystemCpu | None) -> dict[str, float] | None:
    """Shares of the host's CPU time by state between two :func:`procstat.system_cpu` readings
    (percent of all CPUs; nice counts in the total, not printed); None when either is unreadable."""
    if a is None or b is None:
        return None
    total = (b.total - a.total) or 1.0
    states = ("user", "system", "idle", "iowait", "irq", "softirq", "steal")
    return {n: round(100 * (getattr(b, n) - getattr(a, n)) / total, 1) for n in states}


def _mem_mb(field: str) -> float:
    """/proc/meminfo ``field`` in MB."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        name, _, value = line.partition(":")
        if name == field:
            return round(int(value.split()[0]) * 1024 / 1e6, 1)
    raise RuntimeError(f"/proc/meminfo has no {field}")


def _probe_memory(nbytes: int = 1 << 30) -> dict[str, float]:
    """What this host charges for memory just before a drain: microseconds to fault in one fresh
    4 KiB page (``fault_us_per_page``: ``nbytes`` of anonymous memory touched once, no huge pages)
    and GB/s of one thread copying 256 MiB already in memory (``copy_gb_s``, best of 4)."""
    import mmap

    import numpy as np

    m = mmap.mmap(-1, nbytes)
    view = np.frombuffer(m, dtype=np.uint8)
    t0 = time.perf_counter()
    view[::4096] = 1
    fault = (time.perf_counter() - t0) / (nbytes // 4096) * 1e6
    del view
    m.close()
    src = np.ones(256 << 20, dtype=np.uint8)
    dst = np.zeros_like(src)
    best = math.inf
    for _ in range(4):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t0)
    return {"fault_us_per_page": round(fault, 3), "copy_gb_s": round(src.nbytes / best / 1e9, 2)}


def _netstat() -> dict[str, int]:
    """/proc/net/netstat's TcpExt and /proc/net/snmp's Tcp counters as ``TcpExt.Name``/``Tcp.Name``."""
    out: dict[str, int] = {}
    for f in ("/proc/net/netstat", "/proc/net/snmp"):
        lines = Path(f).read_text().splitlines()
        for head, vals in zip(lines[::2], lines[1::2], strict=False):
            prefix, _, names = head.partition(":")
            if prefix not in ("TcpExt", "Tcp"):
                continue
            for n, v in zip(names.split(), vals.partition(":")[2].split(), strict=False):
                out[f"{prefix}.{n}"] = int(v)
    return out


def _per_cpu() -> dict[str, list[int]]:
    """Per CPU: /proc/stat's user, system, idle and softirq ticks and /proc/softirqs' NET_RX/NET_TX."""
    out: dict[str, list[int]] = {}
    for line in Path("/proc/stat").read_text().splitlines():
        f = line.split()
        if f and f[0].startswith("cpu") and f[0] != "cpu":
            out[f[0]] = [int(f[1]), int(f[3]), int(f[4]), int(f[7])]
    for line in Path("/proc/softirqs").read_text().splitlines()[1:]:
        f = line.split()
        if f and f[0] in ("NET_RX:", "NET_TX:"):
            for i, v in enumerate(f[1:]):
                out.setdefault(f"cpu{i}", [0, 0, 0, 0]).append(int(v))
    return out


class _Sched:
    """Samples, every ``interval`` s while a drain runs, which CPU each busy thread of the broker
    (java) and of the members (kbench.kafka.worker) was last on (/proc/<pid>/task/<tid>/stat field
    39), counted per thread name; and, at ``snap_at`` s, ``ss -tinm`` of the broker's connections."""

    def __init__(self, interval: float = 0.1, snap_at: float = 2.0) -> None:
        import threading

        self.interval, self.snap_at = interval, snap_at
        self.stop_ev = threading.Event()
        self.counts: dict[str, dict[str, int]] = {}
        self.together: dict[str, int] = {"same": 0, "apart": 0}
        self.ss = ""
        self.first: dict[tuple[int, int], tuple[int, str]] = {}
        self.last: dict[tuple[int, int], int] = {}
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.members: set[int] = set()
        self.names_pids: set[int] = set()
        self.names = self._java_names()

    def _java_names(self) -> dict[int, str]:
        """The full names of the JVMs' threads by tid (``jcmd <pid> Thread.print``: the kernel keeps
        15 characters, and Kafka's network and request threads share their first 15), read before
        the drain."""
        import re
        import subprocess

        names: dict[int, str] = {}
        for pid in self._pids():
            if b"kbench.kafka.worker" in Path(f"/proc/{pid}/cmdline").read_bytes():
                continue
            self.names_pids.add(pid)
            try:
                out = subprocess.run(
                    ["jcmd", str(pid), "Thread.print"], capture_output=True, text=True, timeout=30
                ).stdout
            except (OSError, subprocess.SubprocessError):
                continue
            for m in re.finditer(r'^"([^"]+)".*? nid=(0x[0-9a-f]+|\d+)', out, re.M):
                nid = m.group(2)
                names[int(nid, 16) if nid.startswith("0x") else int(nid)] = m.group(1)
        return names

    @staticmethod
    def _pids() -> list[int]:
        me, pids = Path("/proc/self").resolve().name, []
        for d in Path("/proc").iterdir():
            if not d.name.isdigit() or d.name == me:
                continue
            try:
                cmd = (d / "cmdline").read_bytes()
            except OSError:
                continue
            if cmd.startswith(b"java") or b"/java" in cmd.split(b"\0")[0] or b"kbench.kafka.worker" in cmd:
                pids.append(int(d.name))
        return pids

    def _run(self) -> None:
        import re
        import subprocess

        last = self.last
        first = self.first
        t0, pids, rescan, snapped = time.monotonic(), self._pids(), -1.0, False
        while not self.stop_ev.wait(self.interval):
            now = time.monotonic() - t0
            if now - rescan >= 0.5:
                pids, rescan = self._pids(), now
                self.members |= {p for p in pids if p not in self.names_pids}
            busy: list[tuple[str, int]] = []
            for pid in pids:
                try:
                    tasks = list(Path(f"/proc/{pid}/task").iterdir())
                except OSError:
                    continue
                for t in tasks:
                    try:
                        raw = (t / "stat").read_text()
                    except OSError:
                        continue
                    rp = raw.rindex(")")
                    comm = raw[raw.index("(") + 1 : rp]
                    f = raw[rp + 2 :].split()
                    ticks, cpu = int(f[11]) + int(f[12]), int(f[36])
                    key = (pid, int(t.name))
                    name = re.sub(r"\d+", "N", self.names.get(int(t.name), comm))
                    first.setdefault(key, (ticks, name))
                    if ticks > last.get(key, ticks):
                        busy.append((name, cpu))
                        c = self.counts.setdefault(name, {})
                        c[f"cpu{cpu}"] = c.get(f"cpu{cpu}", 0) + 1
                    last[key] = ticks
            net = {c for n, c in busy if "network-thread" in n}
            rdk = {c for n, c in busy if n.startswith("rdk:broker")}
            if net and rdk:
                self.together["same" if net & rdk else "apart"] += 1
            if not snapped and now >= self.snap_at:
                snapped = True
                try:
                    out = subprocess.run(
                        ["ss", "-tinmH", "state", "established"], capture_output=True, text=True, timeout=5
                    ).stdout.splitlines()
                    # one socket is a line of addresses and an indented line of its figures: loopback only
                    self.ss = "\n".join(
                        f"{a.strip()} | {b.strip()}"
                        for a, b in zip(out[::2], out[1::2], strict=False)
                        if "127.0.0.1" in a
                    )
                except (OSError, subprocess.SubprocessError) as e:
                    self.ss = f"ss failed: {e}"

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> dict[str, Any]:
        self.stop_ev.set()
        self.thread.join()
        import os

        tck = os.sysconf("SC_CLK_TCK")
        cpu_s: dict[str, float] = {}
        for key, (t0, name) in self.first.items():
            name = ("member " if key[0] in self.members else "broker ") + name
            cpu_s[name] = cpu_s.get(name, 0.0) + (self.last.get(key, t0) - t0) / tck
        return {
            "threads": self.counts,
            "net_rdk_cpu": self.together,
            "thread_cpu_s": {k: round(v, 2) for k, v in sorted(cpu_s.items(), key=lambda kv: -kv[1]) if v > 0},
            "ss": self.ss,
        }


def _gaps(part: Mapping[str, Any]) -> list[float] | None:
    """The seconds between a member's consecutive time-series intervals that read records (None
    without such an interval)."""
    ivs = [iv for iv in part.get("intervals") or [] if not iv.get("truncated") and int(iv.get("count") or 0) > 0]
    if not ivs:
        return None
    ivs.sort(key=lambda iv: int(iv["start_mono_ns"]))
    return [(int(b["start_mono_ns"]) - int(a["end_mono_ns"])) / 1e9 for a, b in zip(ivs, ivs[1:], strict=False)]


def _pauses(part: Mapping[str, Any]) -> list[float]:
    """A member's stretches of 0.3 s or more without a record inside its receive window (seconds,
    longest first), from its time series: the gaps between intervals that read records."""
    gaps = _gaps(part)
    if not (part.get("windows") or {}).get("receive") or gaps is None:
        return []
    return sorted((round(g, 2) for g in gaps if g >= 0.3), reverse=True)


def _idle_s(part: Mapping[str, Any]) -> float | None:
    """A member's time inside its receive window in intervals that read no record (seconds; the
    gaps between intervals that read records, however short): None without a time series."""
    gaps = _gaps(part)
    return None if gaps is None else round(sum(g for g in gaps if g > 0), 2)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--codec", default="lz4", help="the codec of the catch-up plan's drain cell (default lz4)")
    ap.add_argument("--consumers", type=int, default=2, help="members of the cell's group (default 2)")
    ap.add_argument("--backlog-bytes", type=int, required=True, help="payload bytes of each backlog")
    ap.add_argument("--reps", type=int, default=8, help="drains (default 8)")
    ap.add_argument("--out", type=Path, help="also append each line to this file")
    ap.add_argument(
        "--interval",
        type=float,
        default=0.0,
        help="each member's time series at this many seconds (e.g. 0.1): its pauses (stretches without "
        "a record inside its receive window) are printed per member",
    )
    ap.add_argument(
        "--prop",
        action="append",
        type=key_value("--prop", "queued.min.messages=100000"),
        default=[],
        metavar="KEY=VALUE",
        help="a consumer property for every member, after the plan's (repeatable)",
    )
    ap.add_argument(
        "--malloc",
        choices=("g", "glibc"),
        default="g",
        help="the members' malloc thresholds: G's (g_drain.member_malloc, the default) or glibc's own",
    )
    ap.add_argument(
        "--page-cache",
        choices=("as-is", "read"),
        default="read",
        help="after the write-back, read the backlog's segment files once so that the drain reads from "
        "memory (G's page-in, g_drain.page_in: the default) or leave its pages as the kernel left them "
        "(as G did before it read them)",
    )
    ap.add_argument(
        "--broker-config",
        action="append",
        type=key_value("--broker-config", "socket.send.buffer.bytes=-1"),
        default=[],
        metavar="KEY=VALUE",
        help="a broker setting of the local cluster over kbench's own (repeatable), e.g. socket.send.buffer.bytes=-1",
    )
    ap.add_argument(
        "--probe",
        action="store_true",
        help="before each drain, time faulting in 1 GiB of fresh memory and copying 256 MiB (``probe``)",
    )
    ap.add_argument(
        "--sched",
        action="store_true",
        help="during each drain, sample which CPU the broker's and the members' busy threads run on, "
        "per-CPU time and NET_RX/NET_TX softirqs, TCP counters, and ss -tinm 2 s in (``sched``)",
    )
    ap.add_argument(
        "--tcp-cc",
        metavar="NAME",
        help="the host's TCP congestion control (net.ipv4.tcp_congestion_control) while the command's "
        "cluster runs, e.g. cubic; set before the cluster starts (its listeners' connections inherit "
        "it) and put back at the end",
    )
    a = ap.parse_args(argv)
    extra = dict(a.prop)
    broker_config = dict(a.broker_config)

    seen: dict[str, Any] = {}
    summary = g_drain.drain_summary

    def spy(parts: Sequence[Mapping[str, Any]], merged: Mapping[str, Any]) -> dict[str, Any]:
        seen["recv"] = [(p.get("windows") or {}).get("receive") for p in parts]
        seen["pauses"] = [_pauses(p) for p in parts]
        seen["idle"] = [_idle_s(p) for p in parts]
        seen["host_cpu"] = _host_cpu(seen["cpu0"], system_cpu())
        end = _vmstat()
        seen["read_kib"] = end["pgpgin"] - seen["vm0"]["pgpgin"]
        seen["vm"] = {k: end.get(k, 0) - seen["vm0"].get(k, 0) for k in VM_COUNTERS}
        if a.sched:
            net, pc = _netstat(), _per_cpu()
            seen["sched_out"] = {
                **seen["sched"].stop(),
                "tcp": {k: v - seen["net0"].get(k, 0) for k, v in net.items() if v != seen["net0"].get(k, 0)},
                "per_cpu": {
                    c: [b - x for b, x in zip(v, seen["percpu0"].get(c, []), strict=False)] for c, v in pc.items()
                },
            }
        return summary(parts, merged)

    page_in = g_drain.page_in

    def paged_in(log_dirs: Sequence[Path], topic: str) -> int:
        """G's page-in (--page-cache read) or none (as-is); the host's block reads are counted
        from here to the drain's end."""
        s = page_in(log_dirs, topic) if a.page_cache == "read" else 0
        seen["warmed"] = s
        if a.probe:
            seen["probe"] = _probe_memory()
        seen["free_mb"] = _mem_mb("MemFree")
        seen["vm0"] = _vmstat()
        seen["cpu0"] = system_cpu()
        if a.sched:
            seen["net0"], seen["percpu0"] = _netstat(), _per_cpu()
            seen["sched"] = _Sched()
            seen["sched"].start()
        return s

    g_drain.page_in = paged_in
    g_drain.drain_summary = spy  # read the members' windows as drain() sees them
    real_jobs = g_drain.Jobs

    def jobs(producer: dict[str, Any], consumer: dict[str, Any], *rest: Any, **kw: Any) -> Any:
        """The drain's jobs with --prop, --malloc and --interval in every member's job."""
        consumer = {**consumer, "props": {**consumer["props"], **extra}}
        if a.malloc == "glibc":
            consumer.pop("mallopt", None)
        if a.interval > 0:
            consumer["interval_s"] = a.interval
        return real_jobs(producer, consumer, *rest, **kw)

    g_drain.Jobs = jobs  # type: ignore[misc,assignment]
    plan = plan_mod.load("catch-up")
    cells = [
        c for c in expand(plan) if c.sweep == "drain" and c.codec == a.codec and axis(c, "consumers") == a.consumers
    ]
    if not cells:
        print(f"catch_up_members: the catch-up plan has no cell {a.codec} x {a.consumers}", file=sys.stderr)
        return 2
    cell = dataclasses.replace(cells[0], extras={**cells[0].extras, "backlog_bytes": a.backlog_bytes})
    corpora = load_corpora(plan)
    cc_path = Path("/proc/sys/net/ipv4/tcp_congestion_control")
    cc_before = cc_path.read_text().strip()
    if a.tcp_cc:
        cc_path.write_text(a.tcp_cc)
    try:
        return _drains(a, cell, corpora, plan, broker_config, seen)
    finally:
        if a.tcp_cc:
            cc_path.write_text(cc_before)


def _drains(
    a: argparse.Namespace, cell: Any, corpora: Any, plan: Any, broker_config: dict[str, str], seen: dict[str, Any]
) -> int:
    """The ``--reps`` drains on one local cluster, one line each."""
    t = KafkaTransport(plan.transport)
    if broker_config:
        from kbench.kafka.cluster import LocalCluster

        t._make_cluster = lambda: LocalCluster(brokers=plan.transport.brokers, broker_config=broker_config)  # type: ignore[method-assign]
    t.open()
    try:
        for i in range(a.reps):
            topic = f"members-{a.codec.replace(':', '')}-{i}-{int(time.time())}"
            seen["topic"] = topic
            try:
                res = t.run(RunRequest(cell, topic, corpora[cell.corpus], None, plan.duration_s, 0.0))
            except TransportError as e:  # e.g. a fresh cluster's group coordinator not ready yet: said, not hidden
                _emit({"rep": i, "error": str(e)}, a.out)
                continue
            d = res.drain
            recv = [r for r in seen.get("recv") or [] if r]
            t0 = min(int(r["start_mono_ns"]) for r in recv)
            line = {
                "rep": i,
                "span_s": round(d["span_s"], 2),
                "records_per_s": round(d["records"] / d["span_s"]),
                "rebalances": [m["rebalances"] for m in d["members"]],
                "share": [round(m["records"] / d["records"], 3) for m in d["members"]],
                "cpu_s": [round((m["usr_s"] or 0) + (m["sys_s"] or 0), 2) for m in d["members"]],
                "window_s": [
                    [round((int(r["start_mono_ns"]) - t0) / 1e9, 2), round((int(r["end_mono_ns"]) - t0) / 1e9, 2)]
                    for r in recv
                ],
            }
            line["disk_read_mb"] = round(seen["read_kib"] * 1024 / 1e6, 1)
            line["free_mb_before"] = seen["free_mb"]
            line["vm"] = seen["vm"]
            line["host_cpu_pct"] = seen["host_cpu"]
            line["tcp_cc"] = Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip()
            if a.probe:
                line["probe"] = seen["probe"]
            if a.sched:
                line["sched"] = seen["sched_out"]
            if a.page_cache == "read":
                line["read_before_mb"] = round(seen["warmed"] / 1e6, 1)
            if a.interval > 0:
                line["pauses_s"] = seen["pauses"]
                line["idle_s"] = seen["idle"]
            _emit(line, a.out)
    finally:
        t.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
