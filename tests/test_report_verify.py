"""kbench report --verify-only: a report that no longer matches its run directories is refused,
naming the figure: a row whose status changed, an eligible row added, a hand-typed number."""

from __future__ import annotations

import csv
import re
import shutil
from pathlib import Path

import pytest

pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

from report_runs import kbench, zstd_vs_none_run  # noqa: E402


@pytest.fixture(scope="module")
def zvn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return zstd_vs_none_run(tmp_path_factory.getbasetemp() / "report-runs")


@pytest.fixture(scope="module")
def zvn_report(zvn: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("zvn-report-verify")
    kbench("report", str(zvn), "-o", str(out), "--no-plots", "--verify")
    return out


@pytest.fixture
def copies(zvn: Path, zvn_report: Path, tmp_path: Path) -> tuple[Path, Path]:
    run, out = tmp_path / zvn.name, tmp_path / "report"
    shutil.copytree(zvn, run)
    shutil.copytree(zvn_report, out)
    return run, out


def _rewrite(path: Path, edit) -> list[dict[str, str]]:  # type: ignore[no-untyped-def]
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    fields = list(rows[0])
    rows = edit(rows)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    return rows


def _verify(run: Path, out: Path) -> tuple[int, str]:
    p = kbench("report", str(run), "-o", str(out), "--verify-only", check=False)
    return p.returncode, p.stderr


def _ok_rows(path: Path) -> int:
    with path.open(newline="") as f:
        return sum(r["status"] == "OK" for r in csv.DictReader(f))


def test_an_untouched_report_verifies(copies: tuple[Path, Path]) -> None:
    run, out = copies
    assert _ok_rows(run / "C.csv") == 12  # 2 codecs x 2 corpora x 3 repetitions, all OK
    rc, err = _verify(run, out)
    assert (rc, err) == (0, "")


def test_every_c_row_invalid_fails_every_c_figure(copies: tuple[Path, Path]) -> None:
    run, out = copies

    def invalidate(rows: list[dict[str, str]]) -> list[dict[str, str]]:
        for r in rows:
            r["status"] = "INVALID"
        return rows

    _rewrite(run / "C.csv", invalidate)
    rc, err = _verify(run, out)
    assert rc == 1
    c_figures = re.findall(r"figure \d+ \([^)]*of C\.ratio\): uses \S+/C\.csv row \d+ \(\S+ rep \d, INVALID\)", err)
    assert c_figures, err


def test_a_flipped_status_names_the_figure_and_the_row(copies: tuple[Path, Path]) -> None:
    run, out = copies
    flipped: list[int] = []

    def flip(rows: list[dict[str, str]]) -> list[dict[str, str]]:
        i = next(i for i, r in enumerate(rows) if r["status"] == "OK" and r["codec"] == "zstd:3")
        rows[i]["status"] = "INVALID"
        flipped.append(i + 1)
        return rows

    _rewrite(run / "C.csv", flip)
    rc, err = _verify(run, out)
    assert rc == 1
    assert re.search(rf"figure \d+ \([^)]*C\.ratio\): uses \S+/C\.csv row {flipped[0]} \(\S+ rep \d, INVALID\)", err), (
        err
    )


def test_an_appended_ok_row_is_a_missing_row(copies: tuple[Path, Path]) -> None:
    run, out = copies

    def append(rows: list[dict[str, str]]) -> list[dict[str, str]]:
        extra = dict(next(r for r in rows if r["status"] == "OK" and r["codec"] == "zstd:3"))
        extra["rep"] = "4"
        return [*rows, extra]

    rows = _rewrite(run / "C.csv", append)
    rc, err = _verify(run, out)
    assert rc == 1
    assert re.search(rf"figure \d+ \([^)]*C\.ratio\): misses \S+/C\.csv row {len(rows)} \(\S+ rep 4, OK\)", err), err


def test_a_hand_typed_number_in_the_markdown_fails(copies: tuple[Path, Path]) -> None:
    run, out = copies
    md = out / "report.md"
    md.write_text(md.read_text() + "\nzstd saves 37.25% of the disk\n")
    rc, err = _verify(run, out)
    assert rc == 1
    lines = err.strip().splitlines()
    assert "kbench: provenance: report.md prints '37.25%', which is no ledger figure and no input label" in lines
    assert any("is no line of the report the runs give" in x for x in lines), err


def _headline_ratios(md: str) -> list[str]:
    return re.findall(r"^- Ratio, [^\n]*?: (\S+×) \(range", md, flags=re.M)


def test_a_number_moved_to_another_figures_place_fails(copies: tuple[Path, Path]) -> None:
    """Each number is checked where it stands: a ratio replaced by another ratio the ledger holds
    (the random corpus's for the JSON one) passes a presence check, not this one."""
    run, out = copies
    md = out / "report.md"
    text = md.read_text()
    ratios = _headline_ratios(text)
    assert len(set(ratios)) >= 2, ratios
    a, b = ratios[0], next(r for r in ratios if r != ratios[0])
    first = text.index(f": {a} (range")
    md.write_text(text[:first] + f": {b} (range" + text[first + len(f": {a} (range") :])
    rc, err = _verify(run, out)
    assert rc == 1
    assert "(under “Headline figures”): reads" in err and "a number moved, swapped or edited" in err, err


def test_two_numbers_swapped_in_a_table_row_fail(copies: tuple[Path, Path]) -> None:
    run, out = copies
    md = out / "report.md"
    lines = md.read_text().splitlines()
    first = next(i for i, x in enumerate(lines) if x.startswith("## Experiment"))  # a table of figures
    i = next(i for i, x in enumerate(lines) if i > first and x.startswith("|") and "zstd:3" in x and x.count("|") > 8)
    cells = lines[i].split("|")
    nums = [k for k, c in enumerate(cells) if re.fullmatch(r"\s*[\d,.]+\s*", c)]
    j, k = next((j, k) for j in nums for k in nums if cells[j].strip() != cells[k].strip())
    cells[j], cells[k] = cells[k], cells[j]
    lines[i] = "|".join(cells)
    md.write_text("\n".join(lines) + "\n")
    rc, err = _verify(run, out)
    assert rc == 1
    assert f"report.md line {i + 1} " in err and "a number moved, swapped or edited" in err, err


def test_verify_only_without_a_report_is_one_line(zvn: Path, tmp_path: Path) -> None:
    p = kbench("report", str(zvn), "-o", str(tmp_path / "nothing"), "--verify-only", check=False)
    assert p.returncode != 0
    assert len(p.stderr.strip().splitlines()) == 1 and "write the report first" in p.stderr
