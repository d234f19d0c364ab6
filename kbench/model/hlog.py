"""HdrHistogram interval logs (``.hlog``): kbench's interval histograms in the format
HdrHistogram's tools read (``HistogramLogProcessor``, ``HistogramLogReader`` in Java, C, Python).

kbench's histogram (``csrc/core/histogram.h``, docs/drivers.md section 5.1) has HdrHistogram's
bucket layout exactly: lowest discernible value 1 ns, 3 significant digits (2048 sub-buckets, the
index rule of ``AbstractHistogram.countsArrayIndex``, unit magnitude 0), highest trackable
value 2^36 − 1 ns, so its 27,648 counters are HdrHistogram's counts array index for index and no
conversion is needed: a KBH1 encoding (docs/drivers.md section 5.2) becomes HdrHistogram's V2
encoding by writing the same counters as ZigZag LEB128 varints (a run of n zero counters as −n),
behind its 40-byte header, deflated (zlib) behind the compressed cookie, base64.  What HdrHistogram
cannot hold (kbench's under- and overflow counts) is written as a comment line per interval.

A log is: ``#[Histogram log format version 1.3]``, ``#[StartTime: ...]``, ``#[BaseTime: ...]``
(both seconds since the epoch), the legend, then one line per interval:
``Tag=<tag>,<start s since BaseTime>,<length s>,<max ms>,<base64>``.
"""

from __future__ import annotations

import base64
import struct
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["HIGHEST", "LOWEST", "LogLine", "SIGNIFICANT_FIGURES", "Sparse", "encode_v2", "log_text", "parse_kbh1"]

LOWEST = 1
HIGHEST = (1 << 36) - 1
SIGNIFICANT_FIGURES = 3
COUNTS_LEN = 27648  # (26 buckets + 1) * 1024: docs/drivers.md section 5.1
_ENCODING_COOKIE = 0x1C849303 | 0x10  # V2, word size byte 0x10 (ZigZag LEB128 with zero runs)
_COMPRESSED_COOKIE = 0x1C849304 | 0x10
_HEADER = struct.Struct(">iiiiqqd")  # cookie, payload length, normalizing offset, sig figs, lowest, highest, ratio


@dataclass(frozen=True)
class Sparse:
    """A KBH1 histogram's fields: its non-zero counters as (index, count), ascending."""

    total: int
    underflow: int
    overflow: int
    min: int
    max: int
    counts: tuple[tuple[int, int], ...]


def parse_kbh1(data: bytes) -> Sparse:
    """The fields of a KBH1 encoding (docs/drivers.md section 5.2); ValueError when malformed."""
    if len(data) < 56 or data[:4] != b"KBH1":
        raise ValueError("not a KBH1 histogram (magic or length)")
    total, under, over, lo, hi, _sum, n = struct.unpack_from("<qqqqqdI", data, 4)
    if len(data) != 56 + 12 * n:
        raise ValueError(f"KBH1 length {len(data)} is not 56 + 12 x {n}")
    pairs = tuple(struct.unpack_from("<Iq", data, 56 + 12 * k) for k in range(n))
    if any(i >= COUNTS_LEN or c < 0 for i, c in pairs) or sum(c for _, c in pairs) != total:
        raise ValueError("KBH1 counters out of range or not adding up to the total")
    return Sparse(total, under, over, lo, hi, pairs)


def _varint(v: int, out: bytearray) -> None:
    """ZigZag then LEB128 (HdrHistogram's ZigZagEncoding; counts stay below 2^56, so 8 bytes suffice)."""
    z = (v << 1) ^ (v >> 63)
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)


def encode_v2(h: Sparse) -> str:
    """HdrHistogram's compressed V2 encoding of ``h``, base64 (the form a log line holds)."""
    body = bytearray()
    at = 0
    for i, c in h.counts:
        if i > at:
            _varint(-(i - at), body)
        _varint(c, body)
        at = i + 1
    header = _HEADER.pack(_ENCODING_COOKIE, len(body), 0, SIGNIFICANT_FIGURES, LOWEST, HIGHEST, 1.0)
    deflated = zlib.compress(header + bytes(body))
    return base64.b64encode(struct.pack(">ii", _COMPRESSED_COOKIE, len(deflated)) + deflated).decode()


@dataclass(frozen=True)
class LogLine:
    """One interval of one tag: start in seconds since the log's BaseTime, length in seconds."""

    tag: str
    start_s: float
    length_s: float
    hist: Sparse


def log_text(lines: Sequence[LogLine], start_time_s: float, comment: str = "") -> str:
    """An interval log whose StartTime and BaseTime are ``start_time_s`` (seconds since the epoch)."""
    stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(start_time_s))
    out = [
        *(f"#{c}" for c in comment.splitlines() if c),
        "#[Histogram log format version 1.3]",
        f"#[StartTime: {start_time_s:.3f} (seconds since epoch), {stamp}]",
        f"#[BaseTime: {start_time_s:.3f} (seconds since epoch)]",
        '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"',
    ]
    for ln in lines:
        if ln.hist.underflow or ln.hist.overflow:
            out.append(
                f"#[kbench: Tag={ln.tag} at {ln.start_s:.3f}: {ln.hist.underflow} below 0 ns and "
                f"{ln.hist.overflow} above {HIGHEST} ns not in the histogram]"
            )
        mx = max(ln.hist.max, 0) / 1e6
        out.append(f"Tag={ln.tag},{ln.start_s:.3f},{ln.length_s:.3f},{mx:.3f},{encode_v2(ln.hist)}")
    return "\n".join(out) + "\n"
