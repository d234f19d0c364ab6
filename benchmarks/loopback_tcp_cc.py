"""One loopback TCP stream under each TCP congestion control, paired and alternated.

A Kafka broker on this host sends a fetch response to a consumer on the same host over loopback:
the broker's socket has Kafka's fixed 100 KiB send buffer (``socket.send.buffer.bytes``) and
``sendfile``s from the page cache; the consumer reads.  Whatever the host's TCP congestion control
is (``net.ipv4.tcp_congestion_control``) governs that connection too, though loopback has no
bottleneck to find.  This measures that path alone, outside Kafka and outside kbench: a sender
process ``sendfile``s a file already in memory through a socket with a 100 KiB ``SO_SNDBUF`` and
the congestion control under test (``TCP_CONGESTION`` on the socket), a receiver process reads it
in 1 MiB ``recv_into`` calls, and ``--busy N`` processes spin meanwhile so that the two share the
CPUs as a broker shares them with its members.  Per stream: GB/s over a ``--seconds`` window that
starts after a 1 s warm-up (no connection set-up inside it), the receiver's CPU seconds per GB
and the host's softirq share over the window (/proc/stat); a discarded warm-up stream first, then
``--pairs`` rounds of one stream per congestion control, the order alternating.

Usage:
    python3 benchmarks/loopback_tcp_cc.py --ccs bbr,cubic --pairs 5 --seconds 5 --busy 1 --out r.json
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SNDBUF = 102_400  # Kafka's socket.send.buffer.bytes default


def _cpu_ticks() -> tuple[int, int]:
    """(softirq, total) jiffies of the host from /proc/stat's cpu line."""
    f = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    vals = [int(x) for x in f[:8]]
    return vals[6], sum(vals)


def _spin(stop_at: float) -> None:
    x = 0
    while time.monotonic() < stop_at:
        x += 1


def _sender(port: int, cc: str, path: str, stop_at: float, q: Any) -> None:
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SNDBUF)
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        fd = f.fileno()
        while time.monotonic() < stop_at:
            off = 0
            while off < size:
                n = os.sendfile(s.fileno(), fd, off, size - off)
                if n <= 0:
                    break
                off += n
    used = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode()
    s.close()
    t = os.times()
    q.put(("sender", used, t.user + t.system))


def _receiver(srv: socket.socket, warm_s: float, seconds: float, q: Any) -> None:
    c, _ = srv.accept()
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    t_warm = time.monotonic() + warm_s
    while time.monotonic() < t_warm:
        if c.recv_into(view) == 0:
            break
    t0 = os.times()
    s0 = _cpu_ticks()
    w0 = time.monotonic()
    n = 0
    while True:
        k = c.recv_into(view)
        if k == 0:
            break
        n += k
        if time.monotonic() - w0 >= seconds:
            break
    w1 = time.monotonic()
    s1 = _cpu_ticks()
    t1 = os.times()
    while c.recv_into(view):  # the rest, until the sender stops
        pass
    c.close()
    q.put(
        (
            "receiver",
            n,
            w1 - w0,
            (t1.user + t1.system) - (t0.user + t0.system),
            100.0 * (s1[0] - s0[0]) / max(1, s1[1] - s0[1]),
        )
    )


def stream(cc: str, path: str, seconds: float, busy: int, warm_s: float = 1.0) -> dict[str, Any]:
    """One stream's figures over the receiver's window (the congestion control the sender's socket had)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    q: Any = mp.get_context("fork").Queue()
    stop_at = time.monotonic() + warm_s + seconds + 0.5
    spinners = [mp.get_context("fork").Process(target=_spin, args=(stop_at + 0.5,)) for _ in range(busy)]
    for p in spinners:
        p.start()
    rx = mp.get_context("fork").Process(target=_receiver, args=(srv, warm_s, seconds, q))
    rx.start()
    tx = mp.get_context("fork").Process(target=_sender, args=(port, cc, path, stop_at, q))
    tx.start()
    got = {}
    for _ in range(2):
        item = q.get(timeout=warm_s + seconds + 60)
        got[item[0]] = item[1:]
    for p in (rx, tx, *spinners):
        p.join(timeout=30)
    srv.close()
    n, win, rx_cpu, softirq = got["receiver"]
    used, _tx_cpu = got["sender"]
    gb = n / 1e9
    return {
        "cc": used,
        "gb_s": round(gb / win, 3),
        "window_s": round(win, 2),
        "receiver_cpu_s_per_gb": round(rx_cpu / gb, 3) if gb else None,
        "softirq_pct": round(softirq, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ccs", default="bbr,cubic", help="congestion controls to alternate (default bbr,cubic)")
    ap.add_argument("--pairs", type=int, default=5, help="rounds of one stream per congestion control (default 5)")
    ap.add_argument("--seconds", type=float, default=5.0, help="each stream's measured window (default 5)")
    ap.add_argument("--busy", type=int, default=1, help="spinning processes beside the stream (default 1)")
    ap.add_argument("--out", type=Path, help="write the streams and the summary as JSON here")
    a = ap.parse_args(argv)
    ccs = [c.strip() for c in a.ccs.split(",") if c.strip()]
    avail = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    missing = [c for c in ccs if c not in avail]
    if missing:
        print(
            f"loopback_tcp_cc: {', '.join(missing)} not available here (available: {' '.join(avail)})", file=sys.stderr
        )
        return 2
    with tempfile.NamedTemporaryFile(prefix="kbench-lo-", delete=False) as f:
        f.write(os.urandom(64 << 20))  # 64 MiB, in the page cache from here on
        path = f.name
    rows = []
    try:
        stream(ccs[0], path, 1.0, a.busy)  # warm-up, discarded
        for r in range(a.pairs):
            order = ccs if r % 2 == 0 else ccs[::-1]
            for cc in order:
                row = {"round": r, **stream(cc, path, a.seconds, a.busy)}
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        os.unlink(path)
    summary = {}
    for cc in ccs:
        g = [x["gb_s"] for x in rows if x["cc"] == cc]
        summary[cc] = {"median_gb_s": statistics.median(g), "min": min(g), "max": max(g)}
    base = ccs[0]
    for cc in ccs[1:]:
        ratios = [
            next(x["gb_s"] for x in rows if x["round"] == r and x["cc"] == cc)
            / next(x["gb_s"] for x in rows if x["round"] == r and x["cc"] == base)
            for r in range(a.pairs)
        ]
        summary[cc][f"per_round_ratio_to_{base}"] = round(statistics.median(ratios), 3)
    print(json.dumps(summary))
    if a.out:
        a.out.write_text(json.dumps({"argv": sys.argv[1:], "streams": rows, "summary": summary}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
