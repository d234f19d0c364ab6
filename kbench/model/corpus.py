"""Corpora: realistic generated records, user files, and their entropy and fingerprint.

Built-in corpora (deterministic for a given seed):

- ``json``: JSON business events shaped like order/trade events (repeated field names,
  enums, ids, amounts, timestamps);
- ``logs``: application log lines (timestamp, level, logger, templated messages);
- ``random``: random printable ASCII, a labelled control with near-maximal entropy for text.

A user's file is read as records, one per line (``lines``) or as 4-byte big-endian
length-prefixed binary records (``lenprefixed``).
"""

from __future__ import annotations

import hashlib
import json
import mmap
import random
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kbench import _native
from kbench.model import limits
from kbench.model.paths import atomic_write, not_a_regular_file

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = [
    "BUILTIN",
    "DEFAULT_SIZE",
    "FORMATS",
    "Corpus",
    "CorpusError",
    "entropy",
    "generate",
    "json_events",
    "load",
    "log_lines",
    "random_printable",
    "read_records",
    "lenprefixed_bytes",
    "write_lenprefixed",
]

#: Bytes of a built-in corpus when nobody says (every command's ``--corpus-size``, a plan's ``corpus_size``).
DEFAULT_SIZE = 4 << 20
#: How a corpus file holds records: one per line, or 4-byte big-endian length-prefixed.
FORMATS = ("lines", "lenprefixed")

#: Above this many bits per byte a corpus is treated as "near random" and warned about.
NEAR_RANDOM_BITS = 6.3


class CorpusError(ValueError):
    """A corpus could not be made or read."""


@dataclass(frozen=True)
class Corpus:
    """Records plus their provenance: name, sha256 fingerprint and entropy of the payload."""

    name: str
    records: tuple[bytes, ...] = field(repr=False)
    source: str = "generated"
    #: :attr:`sha256` when the caller has already checked the records against it (a cached
    #: corpus file, named by it: kbench.model.corpus_cache), so that it is not hashed again
    checked_sha256: str | None = field(default=None, repr=False, compare=False)

    @property
    def payload(self) -> bytes:
        """The records' bytes back to back (what Kafka record values would hold)."""
        return b"".join(self.records)

    @property
    def sha256(self) -> str:
        if self.checked_sha256 is not None:
            return self.checked_sha256
        h = hashlib.sha256()
        for r in self.records:
            h.update(len(r).to_bytes(4, "big"))
            h.update(r)
        return h.hexdigest()

    @property
    def entropy(self) -> float:
        return entropy(self.payload)

    @property
    def size(self) -> int:
        return sum(len(r) for r in self.records)

    @property
    def near_random(self) -> bool:
        return self.entropy >= NEAR_RANDOM_BITS


def entropy(data: Buffer) -> float:
    """Shannon entropy of a buffer in bits per byte (0.0 .. 8.0)."""
    return float(_native.entropy(data))


_SYMBOLS = ["AAPL", "MSFT", "GOOG", "AMZN", "TSLA", "NVDA", "META", "ORCL", "IBM", "INTC", "SAP", "ASML"]
_SIDES = ["BUY", "SELL"]
_ORDER_TYPES = ["LIMIT", "MARKET", "STOP", "STOP_LIMIT"]
_STATUSES = ["NEW", "PARTIALLY_FILLED", "FILLED", "CANCELED", "REJECTED"]
_VENUES = ["XNAS", "XNYS", "ARCX", "BATS", "IEXG"]
_CURRENCIES = ["USD", "EUR", "GBP", "JPY"]
_CHANNELS = ["web", "mobile", "api", "fix"]
_EVENT_TYPES = ["order.created", "order.updated", "trade.executed", "order.canceled"]


def json_events(count: int, seed: int = 1) -> list[bytes]:
    """``count`` JSON order/trade events, deterministic for ``seed``."""
    rng = random.Random(seed)
    t = 1_700_000_000_000
    out: list[bytes] = []
    for i in range(count):
        t += rng.randint(0, 40)
        qty = rng.choice([1, 5, 10, 25, 50, 100, 200, 500, 1000])
        price = round(rng.uniform(10, 900), 2)
        ev = {
            "eventId": f"{rng.getrandbits(64):016x}-{i:08d}",
            "eventType": rng.choice(_EVENT_TYPES),
            "eventTime": t,
            "orderId": f"ORD-{rng.randint(10_000_000, 99_999_999)}",
            "accountId": f"ACC-{rng.randint(1000, 1999)}",
            "symbol": rng.choice(_SYMBOLS),
            "side": rng.choice(_SIDES),
            "orderType": rng.choice(_ORDER_TYPES),
            "status": rng.choice(_STATUSES),
            "quantity": qty,
            "filledQuantity": rng.randint(0, qty),
            "price": price,
            "notional": round(price * qty, 2),
            "currency": rng.choice(_CURRENCIES),
            "venue": rng.choice(_VENUES),
            "channel": rng.choice(_CHANNELS),
            "traceId": f"{rng.getrandbits(128):032x}",
        }
        out.append(json.dumps(ev, separators=(",", ":")).encode())
    return out


_LEVELS = ["INFO"] * 12 + ["DEBUG"] * 5 + ["WARN"] * 2 + ["ERROR"]
_LOGGERS = [
    "com.acme.orders.OrderService",
    "com.acme.orders.OrderRepository",
    "com.acme.payments.PaymentGateway",
    "com.acme.http.RequestLogger",
    "org.apache.kafka.clients.producer.KafkaProducer",
    "com.acme.inventory.StockReservation",
]
_TEMPLATES: list[Callable[[random.Random], str]] = [
    lambda r: (
        f"Processed order ORD-{r.randint(10_000_000, 99_999_999)} for account ACC-{r.randint(1000, 1999)} in {r.randint(1, 900)} ms"
    ),
    lambda r: (
        f"GET /api/v2/orders/{r.randint(1, 10**7)} status={r.choice([200, 200, 200, 201, 404, 500])} bytes={r.randint(120, 9000)} latency_ms={r.randint(1, 400)}"
    ),
    lambda r: (
        f"Payment {r.getrandbits(48):012x} authorised amount={r.randint(1, 99999)}.{r.randint(0, 99):02d} {r.choice(_CURRENCIES)}"
    ),
    lambda r: (
        f"Reserved {r.randint(1, 50)} units of SKU-{r.randint(100000, 999999)} in warehouse WH-{r.randint(1, 12)}"
    ),
    lambda r: (
        f"Retrying request to inventory-service attempt={r.randint(1, 5)} backoff_ms={r.choice([100, 200, 400, 800])}"
    ),
    lambda r: f"Cache miss for key customer:{r.randint(1, 10**6)} loading from database",
    lambda r: f"Connection pool stats active={r.randint(0, 50)} idle={r.randint(0, 50)} waiting={r.randint(0, 5)}",
]


def log_lines(count: int, seed: int = 1) -> list[bytes]:
    """``count`` application log lines, deterministic for ``seed``."""
    rng = random.Random(seed)
    ms = 0
    out: list[bytes] = []
    for _ in range(count):
        ms += rng.randint(0, 25)
        s, msec = divmod(ms, 1000)
        m, sec = divmod(s, 60)
        h, minute = divmod(m, 60)
        ts = f"2026-11-29T{(8 + h) % 24:02d}:{minute:02d}:{sec:02d}.{msec:03d}Z"
        thread = f"worker-{rng.randint(1, 16)}"
        line = f"{ts} {rng.choice(_LEVELS):<5} [{thread}] {rng.choice(_LOGGERS)} - {rng.choice(_TEMPLATES)(rng)}"
        out.append(line.encode())
    return out


_PRINTABLE = (string.ascii_letters + string.digits + string.punctuation + " ").encode()


def random_printable(count: int, seed: int = 1, record_size: int = 256) -> list[bytes]:
    """``count`` records of uniformly random printable ASCII: the high-entropy control."""
    rng = random.Random(seed)
    return [bytes(rng.choices(_PRINTABLE, k=record_size)) for _ in range(count)]


BUILTIN: dict[str, Callable[[int, int], list[bytes]]] = {
    "json": json_events,
    "logs": log_lines,
    "random": random_printable,
}


def generate(name: str, size: int = DEFAULT_SIZE, seed: int = 1) -> Corpus:
    """A built-in corpus of at least ``size`` payload bytes (whole records)."""
    if name not in BUILTIN:
        raise CorpusError(f"unknown corpus '{name}'; use one of {', '.join(BUILTIN)} or a file path")
    try:
        limits.check_corpus_size("corpus size", size)
    except limits.LimitError as e:
        raise CorpusError(str(e)) from None
    gen = BUILTIN[name]
    sample = gen(64, seed)
    avg = max(1, sum(map(len, sample)) // len(sample))
    count = size // avg + 1
    try:
        limits.check_corpus_records(
            f"corpus {name} of {size} bytes", count, size, fix="give a smaller corpus size (--corpus-size, corpus_size)"
        )
    except limits.LimitError as e:
        raise CorpusError(str(e)) from None
    records = gen(count, seed)
    total = sum(map(len, records))
    while total < size:  # the sample's average can overestimate
        more = gen(count // 8 + 1, seed + len(records))
        records += more
        total += sum(map(len, more))
    kept: list[bytes] = []
    acc = 0
    for r in records:
        if acc >= size:
            break
        kept.append(r)
        acc += len(r)
    return Corpus(name=name, records=tuple(kept), source=f"builtin:{name}:seed={seed}")


def _overlong_line(mm: mmap.mmap, size: int) -> int | None:
    """The offset of a line longer than MAX_RECORD_BYTES, or None: a few rfind calls, each
    skipping up to MAX_RECORD_BYTES bytes, and no copy of the file."""
    step = limits.MAX_RECORD_BYTES
    pos = 0
    while size - pos > step:
        nl = mm.rfind(b"\n", pos, pos + step + 1)
        if nl < 0:
            return pos
        pos = nl + 1
    return None


#: Every byte but a newline mapped to 'a' (see _count_lines).
_MARK = bytes(10 if b == 10 else 97 for b in range(256))


def _count_lines(data: bytes) -> int:
    """Non-empty lines of ``data`` at C speed, without making them: once every byte but newline is
    'a', each line ends at an 'a' followed by a newline, or at the end of the data."""
    marked = data.translate(_MARK)
    return marked.count(b"a\n") + (1 if marked and not marked.endswith(b"\n") else 0)


def _lines(where: str, mm: mmap.mmap, size: int, max_records: int) -> list[bytes]:
    long = _overlong_line(mm, size)
    if long is not None:
        limits.check_record_size(where, f"the line at byte {long}", limits.MAX_RECORD_BYTES + 1, at_least=True)
    data = mm[:]
    fix = f"use a sample of at most {max_records} records (e.g. head -n {max_records} FILE > sample.txt)"
    limits.check_corpus_records(where, _count_lines(data), size, max_records, fix=fix)
    return [line for line in data.split(b"\n") if line]


def _lenprefixed(where: str, mm: mmap.mmap, size: int, max_records: int) -> list[bytes]:
    # the bounds are walked in C first (a file of zeros is 268 M empty records per GiB): no record
    # is made before the whole file is known to fit
    status, count, at, n = _native.lenprefixed_scan(mm, max_records, limits.MAX_RECORD_BYTES)
    if status == 1:
        fix = f"use a sample of at most {max_records} records"
        limits.check_corpus_records(where, max_records + 1, at, max_records, at_least=True, fix=fix)
    if status == 2:
        limits.check_record_size(where, f"the record at byte {at}", n)
    if status == 3:
        raise CorpusError(f"{where}: truncated length prefix at byte {at}; is it really --corpus-format lenprefixed?")
    if status == 4:
        raise CorpusError(f"{where}: record at byte {at} claims {n} bytes but only {size - at - 4} remain")
    limits.check_corpus_records(where, count, size - 4 * count, max_records, fix="use a smaller sample")
    return _native.lenprefixed_records(mm, count)


def read_records(
    path: Path | str, fmt: str = "lines", limit: int | None = None, max_records: int = limits.MAX_CORPUS_RECORDS
) -> list[bytes]:
    """Read a file as records: one per line (``lines``) or 4-byte BE length-prefixed (``lenprefixed``);
    the first ``limit`` of them when given.

    Bounded before the records are made: the file's bytes (a quarter of the available memory),
    each record's size (:data:`~kbench.model.limits.MAX_RECORD_BYTES`), the number of records
    (``max_records``, default :data:`~kbench.model.limits.MAX_CORPUS_RECORDS`) and the memory
    they need (:func:`~kbench.model.limits.check_corpus_records`); each refusal is one line
    naming the limit and the fix."""
    p = Path(path)
    why = not_a_regular_file(p)
    if why == "does not exist":
        raise CorpusError(f"corpus file not found: {p}; give an existing file or one of {', '.join(BUILTIN)}")
    if why is not None:
        raise CorpusError(f"corpus {p} {why}; give a regular file of records or one of {', '.join(BUILTIN)}")
    if fmt not in ("lines", "lenprefixed"):
        raise CorpusError(f"unknown corpus format '{fmt}'; use lines or lenprefixed")
    size, byte_limit = p.stat().st_size, limits.corpus_bytes_limit()
    if size > byte_limit:
        raise CorpusError(
            f"corpus file {p} holds {size} bytes, above the limit of {byte_limit} "
            "(a quarter of the available memory: a corpus is held in memory several times over); use a smaller file"
        )
    if size == 0:
        raise CorpusError(f"{p}: no records found")
    read = _lenprefixed if fmt == "lenprefixed" else _lines
    try:
        with p.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            records = read(f"corpus {p}", mm, size, max_records)
    except limits.LimitError as e:
        raise CorpusError(str(e)) from None
    if limit is not None:
        records = records[:limit]
    if not records:
        raise CorpusError(f"{p}: no records found")
    return records


def load(
    spec: str | Path, size: int = DEFAULT_SIZE, seed: int = 1, fmt: str = "lines", name: str | None = None
) -> Corpus:
    """A built-in corpus by name, or a file path read as records (named ``name``, else the file's name)."""
    if isinstance(spec, str) and spec in BUILTIN:
        return generate(spec, size, seed)
    p = Path(spec)
    return Corpus(name=name or p.name, records=tuple(read_records(p, fmt)), source=f"file:{p}")


def write_lines(corpus: Corpus, path: Path | str) -> Path:
    """Write a corpus one record per line (records must not contain newlines)."""
    if any(b"\n" in r for r in corpus.records):
        raise CorpusError("record contains a newline; write it length-prefixed instead")
    return atomic_write(path, b"".join(r + b"\n" for r in corpus.records))


def lenprefixed_bytes(records: Sequence[bytes]) -> bytes:
    """Records as 4-byte big-endian length-prefixed binary (any bytes survive): the drivers' corpus
    format (docs/drivers.md, ``corpus_format = lenprefixed``)."""
    for r in records:
        if len(r) >= 1 << 32:
            raise CorpusError(f"record of {len(r)} bytes does not fit a 4-byte length prefix")
    return b"".join(len(r).to_bytes(4, "big") + r for r in records)


def write_lenprefixed(records: Sequence[bytes], path: Path | str) -> Path:
    """Write records as :func:`lenprefixed_bytes`, atomically.

    The file's sha256 is the corpus fingerprint (:attr:`Corpus.sha256` hashes the same bytes).
    """
    return atomic_write(path, lenprefixed_bytes(records))
