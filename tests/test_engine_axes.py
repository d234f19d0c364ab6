"""Every plan axis is a label: a plan with one codec at two rates (or two batch sizes) gives two
rows in every table — the end-of-run tables of ``kbench run``, ``kbench report`` and the
notebooks' compare tables — and no verdict between them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from report_runs import kbench, plan_text

RATES = """
[[sweep]]
name = "rates"
experiments = ["A", "C", "D"]
codec = ["none", "zstd:3"]
corpus = ["json"]
batch_size = 65536
rate = [100, 100000]
"""
BATCHES = """
[[sweep]]
name = "batches"
experiments = ["B", "C"]
codec = ["none", "zstd:3"]
corpus = ["json"]
batch_size = [16384, 65536]
rate = "saturated"
"""
# cell ids follow the plan's axis order (codec before rate and batch size):
# -000 none/first, -001 none/second, -002 zstd:3/first, -003 zstd:3/second.
SAME_SETTING_PAIRS = {("000", "002"), ("001", "003")}


@pytest.fixture(scope="module", params=[("rates", RATES, ("A", "C", "D")), ("batches", BATCHES, ("B", "C"))])
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, str, tuple]:
    name, sweeps, exps = request.param
    root = tmp_path_factory.mktemp(name)
    plan = root / f"{name}.toml"
    plan.write_text(plan_text(name, sweeps))
    out = root / "run"
    p = kbench("run", str(plan), "-o", str(out), "--gate-sample-s", "0.1", "--force", steal="0")
    return name, out, p.stdout, exps


def _sections(stdout: str) -> dict[str, str]:
    parts = re.split(r"^== ([A-F]): .*==$", stdout, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def test_run_tables_keep_each_setting_apart_and_pair_only_same_settings(run: tuple) -> None:
    name, _, stdout, exps = run
    sections = _sections(stdout)
    for exp in exps:
        text = sections[exp]
        table, _, verdicts = text.partition("verdicts on ")
        ids = {m for m in re.findall(rf"^{name}-(\d\d\d) ", table, flags=re.M)}
        assert ids == {"000", "001", "002", "003"}, (exp, table)
        pairs = set(re.findall(rf"^{name}-(\d\d\d)\s+{name}-(\d\d\d)\s", verdicts, flags=re.M))
        assert pairs == SAME_SETTING_PAIRS, (exp, verdicts)


def _first_table(section: str) -> tuple[list[str], list[list[str]]]:
    """The header and data rows of a section's first table (verdict rows, in bold, left out)."""
    lines = section.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("| "))
    block = []
    for ln in lines[start:]:
        if not ln.startswith("|"):
            break
        block.append(ln)
    cells = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in block]
    return cells[0], [r for r in cells[2:] if not r[0].startswith("**")]


def test_report_tables_have_one_row_per_setting(run: tuple, tmp_path: Path) -> None:
    name, out, _, exps = run
    kbench("report", str(out), "-o", str(tmp_path / "rep"), "--no-plots")
    md = (tmp_path / "rep" / "report.md").read_text()
    axis = "rate" if name == "rates" else "batch_size"
    for exp in exps:
        section = md.split(f"\n## Experiment {exp} ·")[1].split("\n## ")[0]
        header, rows = _first_table(section)
        assert axis in header, (exp, header)
        settings = {(r[header.index("codec")], r[header.index(axis)]) for r in rows}
        assert len(settings) == 4, (exp, settings)
        roles = len({r[header.index("role")] for r in rows}) if "role" in header else 1
        assert len(rows) == 4 * roles, (exp, rows)
        for r in rows:  # 3 repetitions per cell: a pooled row would count 6
            assert int(r[header.index("n")].split()[0]) <= 3, (exp, r)
    if name == "rates":  # A's verdict rows: one per rate, none across rates
        section = md.split("\n## Experiment A ·")[1].split("\n## ")[0]
        verdicts = [ln for ln in section.splitlines() if "p99 verdict" in ln]
        assert len(verdicts) == 2 and any(" 100 p99" in v for v in verdicts), verdicts


def test_compare_tables_have_one_row_per_setting(run: tuple) -> None:
    pytest.importorskip("pandas")
    from kbench.reporting import compare
    from kbench.results import load

    name, out, _, exps = run
    axis = "rate" if name == "rates" else "batch_size"
    data = load(out)
    checked = []
    for exp in exps:
        ok = data[exp][data[exp]["status"] == "OK"]
        if ok.empty:  # the sim transport measures no latency: every A row is NA (asserted below)
            continue
        table = compare.per_machine(data[exp], exp)
        assert axis in table.columns, (exp, list(table.columns))
        keys = ["codec", axis] + (["role"] if "role" in ok.columns else [])
        assert len(table) == len(ok[keys].drop_duplicates()), (exp, table)
        assert table[["codec", axis]].drop_duplicates().shape[0] == 4, (exp, table)
        assert (table["n"] <= 3).all(), (exp, table)
        checked.append(exp)
    # every experiment the transport measures was tabulated (sim: all but A's latency)
    assert checked == [e for e in exps if e != "A"], checked
    if "A" in exps:
        assert set(data["A"]["status"]) == {"NA"}


def test_csvs_without_the_rate_column_take_it_from_the_manifest(run: tuple, tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    import csv
    import shutil

    from kbench.results import load

    name, out, _, exps = run
    old = tmp_path / "old"
    shutil.copytree(out, old)
    for exp in exps:  # a run directory written before the rate column existed
        rows = list(csv.reader((old / f"{exp}.csv").open()))
        keep = [i for i, c in enumerate(rows[0]) if c != "rate"]
        with (old / f"{exp}.csv").open("w", newline="") as f:
            csv.writer(f, lineterminator="\n").writerows([[r[i] for i in keep] for r in rows])
    new, back = load(out), load(old)
    for exp in exps:
        assert list(back[exp]["rate"]) == list(new[exp]["rate"]), exp
    assert set(back[exps[0]]["rate"]) == ({"100", "100000"} if name == "rates" else {"saturated"})
