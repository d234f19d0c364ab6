"""Corpora: deterministic, realistic, entropy, reading user files."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from kbench.model import corpus


def test_generators_are_deterministic_per_seed() -> None:
    for name in corpus.BUILTIN:
        a = corpus.generate(name, 50_000, seed=5)
        b = corpus.generate(name, 50_000, seed=5)
        c = corpus.generate(name, 50_000, seed=6)
        assert a.sha256 == b.sha256 != c.sha256
        assert a.size >= 50_000


def test_json_events_are_order_events() -> None:
    ev = [json.loads(r) for r in corpus.json_events(50, seed=1)]
    assert all({"orderId", "symbol", "side", "price", "quantity", "eventTime"} <= set(e) for e in ev)
    assert {e["side"] for e in ev} <= {"BUY", "SELL"}


def test_entropy_known_values() -> None:
    assert corpus.entropy(b"") == 0.0
    assert corpus.entropy(b"aaaa") == 0.0
    assert corpus.entropy(b"ab" * 100) == pytest.approx(1.0)
    assert corpus.entropy(bytes(range(256)) * 4) == pytest.approx(8.0)


def test_entropy_ordering_of_builtins() -> None:
    h = {n: corpus.generate(n, 200_000).entropy for n in corpus.BUILTIN}
    assert h["json"] < h["random"] and h["logs"] < h["random"]
    assert h["random"] == pytest.approx(math.log2(95), abs=0.02)
    assert corpus.generate("random", 100_000).near_random
    assert not corpus.generate("json", 100_000).near_random


def test_read_lines_and_lenprefixed(tmp_path: Path) -> None:
    p = tmp_path / "c.txt"
    p.write_bytes(b"one\ntwo\n\nthree\n")
    assert corpus.read_records(p) == [b"one", b"two", b"three"]
    q = tmp_path / "c.bin"
    q.write_bytes(b"".join(len(r).to_bytes(4, "big") + r for r in [b"\x00\x01", b"", b"xyz"]))
    assert corpus.read_records(q, "lenprefixed") == [b"\x00\x01", b"", b"xyz"]
    q.write_bytes(b"\x00\x00\x00\x09abc")
    with pytest.raises(corpus.CorpusError, match="claims 9 bytes"):
        corpus.read_records(q, "lenprefixed")


def test_lenprefixed_records_checks_every_bound_again() -> None:
    """The C split behind read_records(..., "lenprefixed") (after the scan): exactly the records
    asked for, and an overrun or a cut prefix refused, never read past the buffer."""
    from kbench import _native

    data = b"\x00\x00\x00\x02ab" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x01c"
    assert _native.lenprefixed_records(data, 3) == [b"ab", b"", b"c"]
    assert _native.lenprefixed_records(data, 1) == [b"ab"] and _native.lenprefixed_records(data, 0) == []
    with pytest.raises(ValueError, match="truncated length prefix at byte 15"):
        _native.lenprefixed_records(data + b"\x00\x00", 4)
    with pytest.raises(ValueError, match="the record at byte 10 claims 1 bytes"):
        _native.lenprefixed_records(data[:-1], 3)
    # a count the data cannot hold (4 bytes a record at least) is refused before any allocation
    for count in (-1, 4, 2**62):
        with pytest.raises(ValueError, match=f"count {count} is not between 0 and 3"):
            _native.lenprefixed_records(data, count)


def test_load_round_trips_through_a_file(tmp_path: Path) -> None:
    c = corpus.generate("logs", 20_000)
    p = corpus.write_lines(c, tmp_path / "logs.txt")
    back = corpus.load(str(p))
    assert back.records == c.records and back.sha256 == c.sha256


def test_unknown_name_names_the_fix() -> None:
    with pytest.raises(corpus.CorpusError, match="json, logs, random"):
        corpus.generate("xml")


def test_record_count_and_size_are_bounded_before_records_are_made(tmp_path: Path) -> None:
    from kbench.model import limits

    lines = tmp_path / "four.txt"
    lines.write_bytes(b"a\n\n\nb\nc\nd")  # four records: empty lines are not records
    assert corpus.read_records(lines, max_records=4) == [b"a", b"b", b"c", b"d"]
    with pytest.raises(corpus.CorpusError, match="4 records, above the limit of 3 records"):
        corpus.read_records(lines, max_records=3)
    lp = tmp_path / "four.bin"
    corpus.write_lenprefixed([b"", b"x", b"", b"yz"], lp)
    assert corpus.read_records(lp, "lenprefixed", max_records=4) == [b"", b"x", b"", b"yz"]
    with pytest.raises(corpus.CorpusError, match="more than 3 records, above the limit of 3 records"):
        corpus.read_records(lp, "lenprefixed", max_records=3)
    huge = tmp_path / "huge.bin"
    huge.write_bytes((limits.MAX_RECORD_BYTES + 1).to_bytes(4, "big") + b"x")
    with pytest.raises(corpus.CorpusError, match="the record at byte 0 is 1000000001 bytes, above the 1000000000"):
        corpus.read_records(huge, "lenprefixed")
    cut = tmp_path / "cut.bin"
    cut.write_bytes(b"\x00\x00\x00\x01x\x00\x00")
    with pytest.raises(corpus.CorpusError, match="truncated length prefix at byte 5"):
        corpus.read_records(cut, "lenprefixed")
