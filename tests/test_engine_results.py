"""CSV results: header once, complete rows only, reconcile against the journal."""

from __future__ import annotations

from pathlib import Path

from kbench.engine import store
from kbench.experiments import registry


def row(cell: str, rep: int, status: str = "OK") -> dict[str, object]:
    return {
        "cell_id": cell,
        "rep": rep,
        "codec": "zstd:3",
        "achieved_rate_msgs": 1234.5,
        "status": status,
        "reason": 'a, "quoted" reason',
    }


def test_append_writes_header_once_and_na(tmp_path: Path) -> None:
    w = store.ResultsWriter(tmp_path)
    w.append("A", [row("c-000", 1)])
    w.append("A", [row("c-000", 2)])
    text = (tmp_path / "A.csv").read_text()
    assert text.count("cell_id,rep,") == 1
    rows = store.read_rows(tmp_path / "A.csv")
    assert [r["rep"] for r in rows] == ["1", "2"]
    assert rows[0]["corrected_p99_us"] == "NA"
    assert rows[0]["reason"] == 'a, "quoted" reason'
    assert list(rows[0]) == list(registry.columns("A"))


def test_reconcile_drops_truncated_and_unjournaled_rows(tmp_path: Path) -> None:
    w = store.ResultsWriter(tmp_path)
    for rep in (1, 2):
        w.append("A", [row("c-000", rep)])
        w.mark_done("c-000", rep, "OK")
    w.append("A", [row("c-001", 1)])  # written, but the journal entry never made it
    w.append("C", [{"cell_id": "c-002", "rep": 1}])  # c-002 feeds A and C: its A row never came
    with (tmp_path / "A.csv").open("a") as f:
        f.write("c-001,2,sw,zst")  # killed mid-row
    with (tmp_path / "done.jsonl").open("a") as f:
        f.write('{"cell_id": "c-0')  # killed mid-entry
    assert store.read_done(tmp_path) == {("c-000", 1), ("c-000", 2)}
    fixed = store.reconcile(tmp_path, {"c-000": ["A"], "c-001": ["A"], "c-002": ["A", "C"]})
    # the CSVs are the record: c-001 rep 1 is complete there, so the journal gets it back
    assert fixed.restored == [("c-001", 1, 1)]
    assert fixed.dropped == {"done.jsonl": 1, "A.csv": 1, "C.csv": 1}
    data = (tmp_path / "A.csv").read_bytes()
    assert data.endswith(b"\n")
    assert [(r["cell_id"], r["rep"]) for r in store.read_rows(tmp_path / "A.csv")] == [
        ("c-000", "1"),
        ("c-000", "2"),
        ("c-001", "1"),
    ]
    assert store.read_rows(tmp_path / "C.csv") == []
    assert store.read_done(tmp_path) == {("c-000", 1), ("c-000", 2), ("c-001", 1)}
    assert (tmp_path / "done.jsonl").read_bytes().endswith(b"\n")
    assert not store.reconcile(tmp_path).changed  # idempotent


def test_reconcile_rebuilds_a_deleted_journal_and_keeps_every_row(tmp_path: Path) -> None:
    w = store.ResultsWriter(tmp_path)
    for rep in (1, 2, 3):
        w.append("A", [row("c-000", rep)])
        w.mark_done("c-000", rep, "OK")
    before = (tmp_path / "A.csv").read_bytes()
    (tmp_path / "done.jsonl").unlink()
    fixed = store.reconcile(tmp_path, {"c-000": ["A"]})
    assert fixed.restored == [("c-000", 1, 1), ("c-000", 2, 1), ("c-000", 3, 1)] and not fixed.dropped
    assert (tmp_path / "A.csv").read_bytes() == before
    assert store.read_done(tmp_path) == {("c-000", 1), ("c-000", 2), ("c-000", 3)}


def test_unknown_column_is_refused(tmp_path: Path) -> None:
    import pytest

    with pytest.raises(KeyError):
        store.ResultsWriter(tmp_path).append("B", [{"cell_id": "x", "bogus": 1}])
    assert not (tmp_path / "B.csv").exists()


def test_format_value() -> None:
    assert store.format_value(None) == "NA"
    assert store.format_value(float("nan")) == "NA"
    assert store.format_value(True) == "true"
    assert store.format_value(1234567.891) == "1234568"
    assert store.format_value(("lz4", "zstd")) == "lz4|zstd"
