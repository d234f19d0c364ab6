"""The notebooks: committed without outputs, executed headless on two runs whose machines differ
(pinned to 1 and 2 CPUs: the manifests record different core counts)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from kbenv import KBENCH_PATH

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("pandas")

from report_runs import MACHINE_CPUS, ROOT, machine_labels, two_machines  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_both_notebooks_exist() -> None:
    assert {p.name for p in NOTEBOOKS} >= {"cross_architecture.ipynb", "codec_tradeoffs.ipynb"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_notebook_has_no_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: strip outputs before committing"
    assert nb.cells[0].cell_type == "code" and nb.cells[0].source.lstrip().splitlines()[-1].startswith("RUN_DIRS = ")


def _execute(path: Path, run_dirs: list[Path]) -> list[dict]:
    nb = nbformat.read(path, as_version=4)
    nb.cells[0].source = "RUN_DIRS = " + json.dumps([str(d) for d in run_dirs])
    # the kernel's working directory is the runs' (a kernel puts its cwd first on sys.path, so the
    # source tree would shadow the kbench under test, which in CI is the installed wheel)
    nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(run_dirs[0].parent)}}
    ).execute()
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]


def _tables(outputs: list[dict]) -> list[str]:
    return [
        o["data"]["text/html"]
        for o in outputs
        if "text/html" in o.get("data", {}) and "<table" in o["data"]["text/html"]
    ]


@pytest.fixture(scope="module")
def machines(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return two_machines(tmp_path_factory.getbasetemp() / "machines")


@pytest.mark.slow  # runs kbench twice and executes the notebooks (about 20 s of CPU together)
def test_the_two_machines_differ_in_their_own_facts(machines: list[Path]) -> None:
    mans = [json.loads((d / "manifest.json").read_text())["machine"] for d in machines]
    # what kbench recorded under each affinity, not what a test wrote
    assert [m["logical_cores"] for m in mans] == [len(c.split(",")) for c in MACHINE_CPUS]
    assert [m["cpu_affinity"] for m in mans] == ["0", "0-1"]
    labels = machine_labels(machines)
    assert len(set(labels)) == 2, labels


@pytest.mark.slow  # runs kbench twice and executes the notebooks (about 20 s of CPU together)
def test_cross_architecture_shows_two_machines(machines: list[Path]) -> None:
    labels = machine_labels(machines)
    outputs = _execute(ROOT / "notebooks" / "cross_architecture.ipynb", machines)
    assert not [o for o in outputs if o["output_type"] == "error"]
    tables = _tables(outputs)
    captions = " ".join(re.findall(r"<caption>(.*?)</caption>", " ".join(tables)))
    for exp in ("A:", "B:", "C:", "D:"):
        assert exp in captions
    b = next(t for t in tables if "B: msgs/s per machine" in t)
    assert all(label in b for label in labels), labels
    assert "per vCPU" in b and "per core" in b
    assert any("spread" in t and "achieved_rate_msgs" in t for t in tables)
    assert any("image/png" in o.get("data", {}) for o in outputs)


@pytest.mark.slow  # runs kbench twice and executes the notebooks (about 20 s of CPU together)
def test_codec_tradeoffs_shows_two_machines(machines: list[Path]) -> None:
    labels = machine_labels(machines)
    outputs = _execute(ROOT / "notebooks" / "codec_tradeoffs.ipynb", machines)
    assert not [o for o in outputs if o["output_type"] == "error"]
    tables = _tables(outputs)
    m = next(t for t in tables if "M: MB/s" in t)
    e = next(t for t in tables if "E: ratio and batch fill" in t)
    for t in (m, e):
        assert all(label in t for label in labels), labels
    assert "zstd" in m and "lz4" in m and "compress_mb_s per core" in m
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 2


@pytest.mark.slow  # runs kbench twice and executes the notebooks (about 20 s of CPU together)
def test_notebooks_run_as_shipped_with_jupyter_execute(tmp_path: Path) -> None:
    """`jupyter execute` of both notebooks, unedited, in a copy of notebooks/ (what a fresh clone
    has): they default to the two bundled example runs, two labelled machines."""
    import os
    import shutil
    import subprocess
    import sys

    jupyter = shutil.which("jupyter-execute") or str(Path(sys.executable).parent / "jupyter-execute")
    src = ROOT / "notebooks"
    dst = tmp_path / "clone" / "notebooks"
    shutil.copytree(src / "example-runs", dst / "example-runs")
    for nb in NOTEBOOKS:
        shutil.copy(nb, dst / nb.name)
    env = dict(os.environ, PYTHONPATH=KBENCH_PATH + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run(
        [jupyter, "--output={notebook_name}-executed", *(n.name for n in NOTEBOOKS)],
        cwd=dst,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    labels = ["vm-pinned-1cpu", "vm-pinned-2cpus"]
    runs = [src / "example-runs" / "one-cpu", src / "example-runs" / "two-cpus"]
    assert machine_labels(runs) == labels
    # real Kafka runs: a local broker's version recorded, the VM pinned to 1 and 2 CPUs
    mans = [json.loads((d / "manifest.json").read_text()) for d in runs]
    assert [(m["transport"]["kind"], m["transport"]["kafka_version"]) for m in mans] == [("local", "4.1.2")] * 2
    assert [m["machine"]["cpu_affinity"] for m in mans] == ["0", "0-1"]
    for nb in NOTEBOOKS:
        ran = nbformat.read(dst / f"{nb.stem}-executed.ipynb", as_version=4)
        assert ran.cells[0].source == nbformat.read(nb, as_version=4).cells[0].source  # unedited
        outputs = [o for c in ran.cells if c.cell_type == "code" for o in c.outputs]
        assert not [o for o in outputs if o["output_type"] == "error"]
        tables = _tables(outputs)
        assert tables and all(any(label in t for t in tables) for label in labels), nb.name
        if nb.name == "cross_architecture.ipynb":
            # every headline table A-D has rows of both machines (A: latencies measured, not NA)
            for exp in ("A:", "B:", "C:", "D:"):
                t = next(t for t in tables if f"<caption>{exp}" in t)
                body = t.split("<tbody>", 1)[1]
                assert body.count("<tr") >= 2 and all(label in body for label in labels), (exp, t[-3000:])
                assert ">NA<" not in body and ">nan<" not in body.lower(), (exp, t[-3000:])
        assert any("image/png" in o.get("data", {}) for o in outputs), nb.name
        # two machines: no "one machine" warning
        assert not any("machine(s)**" in str(o.get("data", {})) for o in outputs), nb.name
