"""The live figures of a local pool's repetition, each second while it runs: what the producer's
librdkafka statistics file says (records and bytes sent, request round trip p50/p99; written by
librdkafka every second, kbench.kafka.clients) and each role's CPU from the per-second sampler
(kbench.engine.transports.persecond).  Read outside every measured process; nothing here is a
result (the repetition's figures come from its drivers' reports when it ends)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbench.engine.live import LiveFigures
from kbench.engine.ticker import Ticker
from kbench.engine.transports.persecond import PerSecond, SecondSample

__all__ = ["LiveFeed", "cpu_pct", "tail_stats"]

#: Bytes read from the end of the statistics file (one librdkafka statistics line is a few kB).
TAIL_BYTES = 256 * 1024


def tail_stats(path: Path) -> dict[str, Any] | None:
    """The last complete JSON line of a statistics file, reading only its tail; None if none yet."""
    try:
        with path.open("rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - TAIL_BYTES))
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if isinstance(d, dict):
            return d
    return None


def cpu_pct(a: SecondSample, b: SecondSample, which: Callable[[str], bool]) -> float | None:
    """CPU of the roles ``which`` selects between two samples, % of one core (None: none readable)."""
    dt = (b.t_ns - a.t_ns) / 1e9
    if dt <= 0:
        return None
    total, seen = 0.0, False
    for role, now in b.cpu.items():
        before = a.cpu.get(role)
        if not which(role) or now is None or before is None:
            continue
        total += (now[0] + now[1]) - (before[0] + before[1])
        seen = True
    return 100.0 * total / dt if seen else None


def _rtt(stats: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """The producer's request round trip p50/p99 (ms) of its busiest broker, last window."""
    best: Mapping[str, Any] | None = None
    for b in (stats.get("brokers") or {}).values():
        rtt = b.get("rtt") or {}
        if rtt.get("cnt") and (best is None or rtt["cnt"] > best["cnt"]):
            best = rtt
    if best is None:
        return None, None
    return float(best["p50"]) / 1000.0, float(best["p99"]) / 1000.0


@dataclass
class LiveFeed:
    """Pushes :class:`LiveFigures` to ``push`` each second until :meth:`stop`."""

    push: Callable[[LiveFigures], None]
    stats_path: Path | None
    sampler: PerSecond
    stage: str = ""  # the stage of the repetition these figures are of (G: backlog, drain)
    _ticker: Ticker | None = None
    _last: tuple[int, float, float] | None = None  # (ts µs, txmsgs, txmsg_bytes) of the last stats line
    _rate: tuple[float | None, float | None] = (None, None)  # msgs/s, MB/s between the last two lines

    def figures(self) -> LiveFigures:
        samples = list(self.sampler.samples)
        prod = cons = brok = None
        if len(samples) >= 2:
            prod = cpu_pct(samples[-2], samples[-1], lambda r: r == "producer")
            cons = cpu_pct(samples[-2], samples[-1], lambda r: r.startswith("consumer"))
            brok = cpu_pct(samples[-2], samples[-1], lambda r: r.startswith("broker"))
        p50 = p99 = None
        stats = tail_stats(self.stats_path) if self.stats_path is not None else None
        if stats is not None and "ts" in stats:
            now = (int(stats["ts"]), float(stats.get("txmsgs", 0)), float(stats.get("txmsg_bytes", 0)))
            if self._last is not None and now[0] > self._last[0]:
                dt = (now[0] - self._last[0]) / 1e6  # librdkafka's ts is in microseconds
                self._rate = ((now[1] - self._last[1]) / dt, (now[2] - self._last[2]) / dt / 1e6)
            if self._last is None or now[0] > self._last[0]:
                self._last = now
            p50, p99 = _rtt(stats)
        msgs, mb = self._rate
        src = "librdkafka statistics, /proc" if stats is not None else "/proc"
        return LiveFigures(
            msgs_s=msgs,
            mb_s=mb,
            p50_ms=p50,
            p99_ms=p99,
            producer_cpu_pct=prod,
            consumer_cpu_pct=cons,
            broker_cpu_pct=brok,
            source=src,
            stage=self.stage,
        )

    def start(self) -> LiveFeed:
        """Push now (the stage shows at once, its figures n/a until measured), then each second."""
        self.push(self.figures())
        self._ticker = Ticker(lambda: self.push(self.figures()), 1.0, "kbench-live-feed")
        self._ticker.start()
        return self

    def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.stop()
