"""The host's own speed, probed beside every repetition (docs/methodology.md, "Host drift").

A VM's speed is not constant: on the 2-vCPU VM kbench is developed on, five consecutive catch-up
repetitions of five different cells were each their cell's fastest (p = 0.0003 in a random order),
their members spending half the kernel time per byte.  No per-run counter (steal, load, swap,
disk reads) saw it.  So the run measures the machine itself: a fixed workload timed on one
thread's CPU clock, the same kinds of work a Kafka pipeline does —

- ``tcp``: :data:`TCP_BYTES` through one loopback TCP connection, sent from and received into
  64 MiB regions (memory traffic, not cache hits), as a broker's fetch response reaches a client;
- ``codec``: :data:`CODEC_LOOPS` lz4 decompressions of a 4 MiB JSON block set (kbench's own C loop).

Each part's figure is GB per CPU-second of the probing thread (its user + system time), so a
process that merely shares the CPUs does not move it; what moves it is the machine doing the same
work faster or slower.  The run calibrates the host at its start (:data:`CALIBRATION_PROBES`
probes, their median the baseline, their spread the host's own A/A noise, all in the manifest),
then probes before and after every attempt: an attempt whose two probes' mean is off the baseline
by more than the plan's ``host_drift_pct`` on either part is INVALID (the machine changed under it) and
retried within the plan's budget, as a steal-invalid one is.
"""

from __future__ import annotations

import os
import socket
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CALIBRATION_PROBES",
    "CODEC_LOOPS",
    "DEFAULT_HOST_DRIFT_PCT",
    "INJECT_ENV",
    "PARTS",
    "SLICES",
    "TCP_BYTES",
    "Baseline",
    "FixedSpeed",
    "Reading",
    "calibrate",
    "attempt_drift_pct",
    "drift_pct",
    "injected",
    "measure",
    "summary",
    "unprobed_why",
]

#: An attempt whose probe is further than this from the run's baseline (either part) is INVALID.
DEFAULT_HOST_DRIFT_PCT = 10.0
#: Probes of the run's calibration (the baseline is their median).
CALIBRATION_PROBES = 7
#: Bytes the tcp part sends through loopback.
TCP_BYTES = 1 << 30
#: lz4 decompressions of the codec part's 4 MiB block set.
CODEC_LOOPS = 150
#: Slices of each part (the part's figure is their median).
SLICES = 5
#: The two parts of a reading, in the order they run.
PARTS = ("tcp", "codec")
#: Tests only: a fixed reading for every probe ("1": the nominal one; "1,1.3": a sequence of speed
#: factors, the last repeated), so runs on a loaded test machine are not judged by its noise.
INJECT_ENV = "KBENCH_TEST_HOST_SPEED"

_REGION = 64 << 20
_CHUNK = 256 << 10
_CODEC_BLOCK = 64 << 10


@dataclass(frozen=True)
class Reading:
    """One probe: each part's GB per CPU-second of the probing thread, and its wall seconds."""

    tcp_gbps: float
    codec_gbps: float
    wall_s: float = 0.0

    def part(self, name: str) -> float:
        return float(getattr(self, f"{name}_gbps"))

    def as_dict(self) -> dict[str, float]:
        return {
            "tcp_gbps": round(self.tcp_gbps, 4),
            "codec_gbps": round(self.codec_gbps, 4),
            "wall_s": round(self.wall_s, 3),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Reading:
        return cls(float(d["tcp_gbps"]), float(d["codec_gbps"]), float(d.get("wall_s", 0.0)))


@dataclass(frozen=True)
class Baseline:
    """The run's calibration: its probes, the per-part median (the baseline) and the A/A spread
    (the largest distance of a calibration probe from that median, %)."""

    readings: tuple[Reading, ...]
    source: str = "measured"

    def median(self, name: str) -> float:
        return float(statistics.median(r.part(name) for r in self.readings))

    @property
    def spread_pct(self) -> float:
        return max(abs(d) for r in self.readings for d in drift_pct(r, self).values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "readings": [r.as_dict() for r in self.readings],
            "median": {f"{p}_gbps": round(self.median(p), 4) for p in PARTS},
            "spread_pct": round(self.spread_pct, 2),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Baseline:
        return cls(tuple(Reading.from_dict(r) for r in d["readings"]), str(d.get("source", "measured")))


def drift_pct(r: Reading, base: Baseline) -> dict[str, float]:
    """Each part's distance of ``r`` from the baseline, % (positive: the host ran faster)."""
    return {p: (r.part(p) / base.median(p) - 1.0) * 100.0 for p in PARTS}


def attempt_drift_pct(probes: Sequence[Reading], base: Baseline) -> tuple[float, str]:
    """An attempt's drift: each part's mean over its probes (before and after it) against the
    baseline; the signed one further from 0, and which part it was."""
    mean = Reading(*(statistics.fmean(r.part(p) for r in probes) for p in PARTS))
    d = drift_pct(mean, base)
    part = max(PARTS, key=lambda p: abs(d[p]))
    return d[part], part


def _tcp(total: int, src: memoryview, dst: memoryview) -> float:
    """Loopback TCP, one thread alternating send and receive; GB per CPU-second of this thread."""
    with socket.create_server(("127.0.0.1", 0)) as ls:
        with socket.create_connection(ls.getsockname()) as c:
            s, _ = ls.accept()
            with s:
                t0 = time.thread_time()
                sent = 0
                while sent < total:
                    off = sent % _REGION
                    c.sendall(src[off : off + _CHUNK])
                    got = 0
                    while got < _CHUNK:
                        n = s.recv_into(dst[off + got : off + _CHUNK])
                        if n == 0:
                            raise OSError("host-speed probe: loopback connection closed mid-transfer")
                        got += n
                    sent += _CHUNK
                cpu = time.thread_time() - t0
    return total / max(cpu, 1e-9) / 1e9


def _codec_blocks() -> bytes:
    rows = (
        b'{"id":%d,"user":"user-%d","value":%.4f,"tags":["a","b"],"ok":true}' % (i, i * 7, i * 0.37)
        for i in range(80_000)
    )
    return b"\n".join(rows)[: 4 << 20]


def _codec(loop: Callable[[int], int], size: int, loops: int) -> float:
    t0 = time.thread_time()
    loop(loops)
    cpu = time.thread_time() - t0
    return loops * size / max(cpu, 1e-9) / 1e9


def measure(tcp_bytes: int = TCP_BYTES, codec_loops: int = CODEC_LOOPS, slices: int = SLICES) -> Reading:
    """One live probe (about 0.5 s on the development VM): each part run in ``slices`` equal
    slices, its figure their median (one slice the hypervisor interrupted does not move it)."""
    from kbench.model.microbench import decompress_loop  # the C extension: loaded only when a probe runs

    w0 = time.monotonic()
    src = memoryview(os.urandom(_REGION))
    dst = memoryview(bytearray(_REGION))
    tcp = statistics.median(_tcp(tcp_bytes // slices, src, dst) for _ in range(slices))
    loop, size = decompress_loop(_codec_blocks(), _CODEC_BLOCK, "lz4")
    codec = statistics.median(_codec(loop, size, codec_loops // slices) for _ in range(slices))
    return Reading(tcp, codec, time.monotonic() - w0)


@dataclass
class FixedSpeed:
    """Tests: every probe reads the nominal speed times the next factor (the last one repeats)."""

    factors: Sequence[float] = (1.0,)
    calls: int = field(default=0)

    def __call__(self) -> Reading:
        f = self.factors[min(self.calls, len(self.factors) - 1)]
        self.calls += 1
        return Reading(3.5 * f, 6.5 * f, 0.0)

    def describe(self) -> str:
        return f"injected ({INJECT_ENV}): factors {','.join(f'{f:g}' for f in self.factors)}"


def injected(environ: Mapping[str, str] | None = None) -> FixedSpeed | None:
    """The :class:`FixedSpeed` that :data:`INJECT_ENV` asks for, or None when it is unset."""
    v = (os.environ if environ is None else environ).get(INJECT_ENV, "")
    if not v:
        return None
    try:
        factors = [float(x) for x in v.split(",")]
    except ValueError:
        raise ValueError(
            f"{INJECT_ENV}={v!r} is not a list of numbers; give speed factors such as 1 or 1,1.3"
        ) from None
    if not factors or any(f <= 0 for f in factors):
        raise ValueError(f"{INJECT_ENV}={v!r}: every speed factor must be above 0")
    return FixedSpeed(factors)


def unprobed_why(limit_pct: float, kind: str, workers: str | None) -> str:
    """Why a run does not probe the host ('' when it does), from its plan's host_drift_pct,
    transport kind and Dask workers: the limit is 0, the transport measures nothing, or the
    drivers run on Dask workers (this host's speed is not theirs).  The run (session.host_probe)
    and its time estimate both ask here."""
    from kbench.engine.warmup import MEASURING

    if limit_pct <= 0:
        return "host_drift_pct = 0 in the plan"
    if kind not in MEASURING:
        return f"the {kind} transport measures nothing"
    if workers:
        return "the drivers run on Dask workers: this host's speed is not theirs"
    return ""


def summary(man: Mapping[str, Any]) -> str | None:
    """The run's host-speed line for the console and the premises (None: nothing recorded)."""
    h = man.get("host_speed")
    if not isinstance(h, Mapping):
        return None
    if not h.get("probed"):
        return f"host speed: not probed ({h.get('why', '')})"
    med = h.get("median") or {}
    spread, limit = float(h.get("spread_pct", 0)), float(h.get("limit_pct", 0))
    line = (
        f"host speed: tcp {float(med.get('tcp_gbps', 0)):.2f} GB/CPU-s, lz4 {float(med.get('codec_gbps', 0)):.2f} "
        f"GB/CPU-s over {len(h.get('readings') or [])} probes, A/A spread {spread:.1f}% "
        f"(a repetition is INVALID beyond ±{limit:g}%)"
    )
    if spread > limit:
        line += (
            "; the calibration's own spread is above the limit: this host's noise alone may invalidate "
            "repetitions (raise host_drift_pct, or run on a quieter machine)"
        )
    return line


def calibrate(probe: Callable[[], Reading], n: int = CALIBRATION_PROBES, source: str = "measured") -> Baseline:
    """The run's baseline: ``n`` probes back to back."""
    return Baseline(tuple(probe() for _ in range(n)), source)
