"""kbench.results.load: one DataFrame per experiment, machine columns, errors that name the fix."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

pd = pytest.importorskip("pandas")

from report_runs import machine_labels, two_machines  # noqa: E402

from kbench.reporting import frames  # noqa: E402
from kbench.results import load  # noqa: E402


@pytest.fixture(scope="module")
def machines(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return two_machines(tmp_path_factory.getbasetemp() / "machines")


def test_load_frames_per_experiment_with_machine_columns(machines: list[Path]) -> None:
    data = load(*machines)
    assert set(data) >= {"A", "B", "C", "D", "E", "M"}
    for exp, df in data.items():
        for col in frames.MACHINE_COLUMNS:
            assert col in df.columns, (exp, col)
        assert set(df["machine"]) == set(machine_labels(machines)), exp
    rows = list(csv.DictReader((machines[0] / "B.csv").open()))
    b = data["B"]
    assert len(b) == len(rows) + len(list(csv.DictReader((machines[1] / "B.csv").open())))
    assert b["achieved_rate_msgs"].dtype.kind in "if"  # numeric, NA as missing
    assert b.loc[(b["_run"] == 0) & (b["_row"] == 0), "achieved_rate_msgs"].item() == float(
        rows[0]["achieved_rate_msgs"]
    )
    assert (data["M"]["warmup"].str.lower() != "true").all()  # M warm-ups are excluded
    # each run's CPU count as kbench recorded it under its affinity (taskset -c 0, -c 0,1)
    assert data["B"]["logical_cores"].unique().tolist() == [1, 2]


def test_load_one_experiment(machines: list[Path], tmp_path: Path) -> None:
    a = load(*machines, experiment="a")
    assert list(a["machine"].unique()) == machine_labels(machines)
    run = tmp_path / "run"
    shutil.copytree(machines[0], run)
    (run / "F.csv").unlink()
    assert load(run, experiment="F").empty
    assert not load(machines[0], experiment="F").empty
    with pytest.raises(frames.LoadError, match="unknown experiment 'Z'"):
        load(machines[0], experiment="Z")


def test_machine_label_from_facts_or_a_given_label(machines: list[Path], tmp_path: Path) -> None:
    man = json.loads((machines[0] / "manifest.json").read_text())
    assert "label" not in man["machine"]
    label = load(machines[0], experiment="B")["machine"].iloc[0]
    m = man["machine"]
    assert label.startswith(f"{m['arch']} {m['cpu_model']} 1 vCPU/") and m["hostname_hash"][:6] in label
    run = tmp_path / "run"
    shutil.copytree(machines[0], run)
    man["machine"]["label"] = "rack-3 box"
    (run / "manifest.json").write_text(json.dumps(man))
    assert set(load(run, experiment="B")["machine"]) == {"rack-3 box"}


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(frames.LoadError, match="no run directory given"):
        load()
    with pytest.raises(frames.LoadError, match="no manifest.json"):
        tmp_path.joinpath("x").mkdir()
        load(tmp_path / "x")


def test_interrupted_run_truncated_last_row_is_not_data(machines: list[Path], tmp_path: Path) -> None:
    """A run killed mid-write leaves a partial last line: it is skipped, here and in the audit."""
    from kbench.reporting import provenance, report

    runs = []
    for i, m in enumerate(machines):
        shutil.copytree(m, tmp_path / f"r{i}")
        runs.append(tmp_path / f"r{i}")
    path = runs[0] / "B.csv"
    full = list(csv.DictReader(path.open()))
    path.write_bytes(path.read_bytes()[:-15])
    b = load(*runs, experiment="B")
    assert (b["_run"] == 0).sum() == len(full) - 1
    files = report.write(runs, tmp_path / "out", with_plots=False)
    assert provenance.verify(json.loads(files.provenance.read_text()), runs) == []
