"""What `pip install` carries, read from pyproject.toml and the tree (no build): every module and
every file kbench reads at run time is in the wheel, and the sdist can build it.  The slow
tests/test_installed_wheel.py builds and installs the wheel and checks the same from outside."""

from __future__ import annotations

import glob
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "kbench"

#: Files under kbench/ that a build or a tool leaves there and that are never shipped as data.
BUILD_OUTPUTS = ("*.so", "*.pyc", "godriver")


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _shipped_data_files() -> list[Path]:
    """Every non-Python file under kbench/ but build outputs."""
    out = []
    for p in PKG.rglob("*"):
        if not p.is_file() or p.suffix == ".py" or "__pycache__" in p.parts:
            continue
        if any(p.match(pattern) for pattern in BUILD_OUTPUTS):
            continue
        out.append(p)
    return sorted(out)


def test_packages_are_found_not_listed() -> None:
    setuptools = _pyproject()["tool"]["setuptools"]
    # a list would be packages named by hand; tool.setuptools.packages.find finds them
    assert setuptools["packages"] == {"find": {"include": ["kbench*"]}}


def test_every_directory_of_modules_is_a_package() -> None:
    """setuptools' find only sees directories with an __init__.py: one without is left out of the
    wheel (as kbench.experiments once was)."""
    dirs = {p.parent for p in PKG.rglob("*.py") if "__pycache__" not in p.parts}
    missing = sorted(str(d.relative_to(ROOT)) for d in dirs if not (d / "__init__.py").is_file())
    assert missing == []


def test_package_data_covers_every_non_python_file() -> None:
    patterns = _pyproject()["tool"]["setuptools"]["package-data"]["kbench"]
    covered = {Path(PKG, m) for pattern in patterns for m in glob.glob(pattern, root_dir=PKG, recursive=True)}
    data = _shipped_data_files()
    assert len(data) > 30  # plans, data, the Java and Go drivers' sources, stubs
    assert [str(p.relative_to(ROOT)) for p in data if p not in covered] == []


def test_every_package_data_pattern_matches_a_file() -> None:
    """A glob that matches nothing is a file renamed or moved without its pattern."""
    patterns = _pyproject()["tool"]["setuptools"]["package-data"]["kbench"]
    assert [p for p in patterns if not glob.glob(p, root_dir=PKG, recursive=True)] == []


def test_sdist_carries_the_c_sources_and_headers() -> None:
    lines = [ln.strip() for ln in (ROOT / "MANIFEST.in").read_text().splitlines()]
    assert "graft csrc" in lines
    assert list(ROOT.glob("csrc/*/*.h")), "the extension's headers live under csrc/"


def test_distribution_name_and_command() -> None:
    project = _pyproject()["project"]
    assert project["name"] == "kafka-kbench"  # `kbench` on the registry is another project
    assert project["scripts"] == {"kbench": "kbench.cli:main"}


def test_the_install_hints_name_the_distribution() -> None:
    from kbench.install import DISTRIBUTION, pip_install

    project = _pyproject()["project"]
    assert DISTRIBUTION == project["name"]
    assert (
        pip_install("report") == "pip install 'kafka-kbench[report]'" and "report" in project["optional-dependencies"]
    )
