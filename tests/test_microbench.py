"""Experiment M: CLI output, tidy CSV, warm-up excluded, calibration honoured."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from kbench.model import corpus, microbench
from kbench.model.codecs import CodecSpec


def test_bench_cell_rows_and_summary() -> None:
    c = corpus.generate("logs", 256 * 1024)
    rows = microbench.bench_cell(c, CodecSpec("zstd", 1), 16384, min_time=0.05, repeats=3)
    assert [r.repetition for r in rows] == [0, 1, 2, 3]
    assert rows[0].warmup and not any(r.warmup for r in rows[1:])
    for r in rows:
        assert r.input_bytes == c.size
        assert r.compress_seconds >= 0.05 and r.decompress_seconds >= 0.05
        assert r.ratio == pytest.approx(r.input_bytes / r.compressed_bytes, rel=1e-3)
        assert r.ratio > 2  # log lines compress
    (s,) = microbench.summarize(rows)
    assert s.repeats == 3
    assert s.compress_min <= s.compress_median <= s.compress_max


def test_random_control_does_not_compress() -> None:
    c = corpus.generate("random", 128 * 1024)
    rows = microbench.bench_cell(c, CodecSpec("lz4"), 65536, min_time=0.02, repeats=1)
    assert rows[-1].ratio < 1.25


def test_cli_writes_table_and_tidy_csv(tmp_path: Path) -> None:
    out = tmp_path / "m.csv"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kbench",
            "codecs",
            "bench",
            "--corpus",
            "json,random",
            "--corpus-size",
            "200000",
            "--codecs",
            "zstd:3,lz4",
            "--block-sizes",
            "16KiB,64KiB",
            "--min-time",
            "0.02",
            "--repeats",
            "2",
            "--csv",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "zstd:3" in proc.stdout and "decompress MB/s" in proc.stdout
    assert "near random" in proc.stderr  # the random control is labelled
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 2 * 2 * 2 * 3  # corpora × codecs × blocks × (warm-up + 2)
    assert set(rows[0]) == set(microbench.COLUMNS)
    assert {r["status"] for r in rows} == {"OK"}
    assert {r["block_size"] for r in rows} == {"16384", "65536"}
    assert not (tmp_path / "m.csv.partial").exists()


def test_cli_bad_input_one_line_and_existing_csv_untouched(tmp_path: Path) -> None:
    out = tmp_path / "m.csv"
    out.write_text("precious\n")
    for args, needle in [
        (["--codecs", "zstd:40"], "zstd level 40 out of range"),
        (["--codecs", "brotli"], "unknown codec 'brotli'"),
        (["--corpus", str(tmp_path / "missing.txt")], "corpus file not found"),
        (["--block-sizes", "0"], "--block-sizes: 0 is out of range"),
    ]:
        proc = subprocess.run(
            [sys.executable, "-m", "kbench", "codecs", "bench", *args, "--csv", str(out)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 2
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and needle in lines[0], proc.stderr
    assert out.read_text() == "precious\n"


def test_table_prints_median_and_range_at_one_precision() -> None:
    """A median of 5.5 MB/s over repetitions all at 5.5 read "5.5 [6-6]": outside its own range."""
    s = microbench.MSummary("json", 5.0, "lz4", None, 16384, 2.0, 5.5, 5.5, 5.5, 1234.56, 1200.04, 1300.0, 3)
    line = microbench.format_table([s]).splitlines()[2]
    assert line.split()[-4:] == ["5.5", "[5.5-5.5]", "1234.6", "[1200.0-1300.0]"]
