"""kbench as a user gets it: the repaired wheel (scripts/build-wheel.sh) installed into a fresh venv
(no system site-packages), run from a directory outside the source tree, with no PYTHONPATH.

The wheel in dist/ is reused when dist/SOURCES.sha256 is the digest of the current sources
(scripts/source_digest.py); otherwise it is built into a temporary directory.  One venv serves the
module; its dependencies come from the registry (or pip's cache).
"""

from __future__ import annotations

import ast
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import venv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
#: The only libraries the installed extension (and what the wheel bundles) may take from the system.
C_LIBRARY = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1", "linux-vdso.so.1"}
LOADER = re.compile(r"^/lib(64|/x86_64-linux-gnu)?/ld-linux[-\w.]*\.so\.\d$")

DRY_PLAN = """\
name = "wheel-dry"
repetitions = 2
duration_s = 0.3
min_window_s = 0.2  # a plumbing check, not a measurement
warmup = false

[transport]
kind = "dry"

[[sweep]]
name = "sat"
experiments = ["B"]
codec = ["none", "zstd:3"]
corpus = ["json"]
rate = "saturated"

[[sweep]]
name = "fixed"
experiments = ["A", "C", "D"]
codec = ["none", "zstd:3"]
corpus = ["json"]
rate = 2000
"""


@dataclass(frozen=True)
class Installed:
    wheel: Path
    python: Path
    bin: Path
    site: Path  # the venv's site-packages
    cwd: Path  # outside the source tree
    env: dict[str, str]

    def run(self, *argv: str | Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(a) for a in argv], cwd=self.cwd, env=self.env, capture_output=True, text=True, timeout=timeout
        )

    def kbench(self, *args: str | Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        r = self.run(self.bin / "kbench", *args, timeout=timeout)
        assert r.returncode == 0, f"kbench {' '.join(map(str, args))}: exit {r.returncode}\n{r.stdout}\n{r.stderr}"
        return r


def _wheel(tmp: Path) -> Path:
    digest = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "source_digest.py")], check=True, capture_output=True, text=True
    ).stdout.strip()
    stamp = ROOT / "dist" / "SOURCES.sha256"
    built = sorted((ROOT / "dist").glob("kafka_kbench-*manylinux*.whl"))
    if len(built) == 1 and stamp.is_file() and stamp.read_text().strip() == digest:
        return built[0]
    r = subprocess.run(
        ["bash", str(ROOT / "scripts" / "build-wheel.sh"), str(tmp)], capture_output=True, text=True, timeout=900
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return Path(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    tmp = tmp_path_factory.mktemp("wheel")
    assert not tmp.resolve().is_relative_to(ROOT)
    wheel = _wheel(tmp / "dist")
    venv.create(tmp / "venv", with_pip=True, system_site_packages=False)
    bin_ = tmp / "venv" / "bin"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = f"{bin_}{os.pathsep}{env.get('PATH', '')}"
    pip = subprocess.run(
        [
            bin_ / "python",
            "-m",
            "pip",
            "install",
            "-q",
            "--no-compile",
            "--disable-pip-version-check",
            f"{wheel}[report]",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert pip.returncode == 0, pip.stderr[-3000:]
    site = Path(
        subprocess.run(
            [bin_ / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
            env=env,
        ).stdout.strip()
    )
    cwd = tmp / "work"
    cwd.mkdir()
    yield Installed(wheel, bin_ / "python", bin_, site, cwd, env)


def test_the_venv_is_clean_and_kbench_comes_from_the_wheel(installed: Installed) -> None:
    r = installed.run(
        installed.python, "-c", "import sys, kbench; print(kbench.__file__); print(sys.prefix != sys.base_prefix)"
    )
    assert r.returncode == 0, r.stderr
    where, in_venv = r.stdout.split()
    assert Path(where).is_relative_to(installed.site) and in_venv == "True"
    cfg = (installed.python.parent.parent / "pyvenv.cfg").read_text()
    assert "include-system-site-packages = false" in cfg


def test_help_and_version(installed: Installed) -> None:
    assert "usage: kbench" in installed.kbench("--help").stdout
    assert re.search(r"^kbench \d+\.\d+\.\d+", installed.kbench("--version").stdout, re.M)


def test_a_dry_plan_then_its_report(installed: Installed) -> None:
    plan = installed.cwd / "dry.toml"
    plan.write_text(DRY_PLAN)
    run = installed.cwd / "dry-run"
    installed.kbench("run", plan, "-o", run, "--gate-sample-s", "0")
    for name in ("A.csv", "B.csv", "C.csv", "D.csv", "manifest.json"):
        assert (run / name).is_file(), name
    assert len((run / "C.csv").read_text().splitlines()) == 1 + 2 * 2  # header + 2 cells x 2 repetitions
    rep = installed.cwd / "dry-report"
    installed.kbench("report", run, "-o", rep, "--no-plots")
    assert "zstd:3" in (rep / "report.md").read_text()


def test_codecs_bench_sim_and_inspect(installed: Installed) -> None:
    out = installed.kbench(
        "codecs",
        "bench",
        "--codecs",
        "zstd:3,lz4,snappy,gzip",
        "--corpus-size",
        "256KiB",
        "--min-time",
        "0.01",
        "--repeats",
        "1",
    ).stdout
    for codec in ("zstd:3", "lz4", "snappy", "gzip"):
        assert re.search(rf"^\S+\s+\S+\s+{re.escape(codec)}\s", out, re.M), (codec, out)
    seg = installed.cwd / "segments"
    installed.kbench("sim", "--corpus-size", "256KiB", "--codec", "zstd:3", "--segments", seg)
    summary = installed.kbench("inspect", "--summary-only", seg).stdout
    assert re.search(r"codecs: zstd \d+", summary), summary


def test_every_module_of_the_installed_package_imports(installed: Installed) -> None:
    script = (
        "import importlib, importlib.util, pkgutil, kbench\n"
        "mods = [m.name for m in pkgutil.walk_packages(kbench.__path__, 'kbench.')]\n"
        "for name in mods:\n"
        "    # kbench.__main__ runs the command line when imported: found, not run\n"
        "    m = importlib.util.find_spec(name) if name == 'kbench.__main__' else importlib.import_module(name)\n"
        "    print(name, m.origin if name == 'kbench.__main__' else m.__file__)\n"
    )
    r = installed.run(installed.python, "-c", script)
    assert r.returncode == 0, r.stderr
    files = dict(line.split(" ", 1) for line in r.stdout.splitlines())
    source = {
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for p in ROOT.glob("kbench/**/*.py")
    }
    source.discard("kbench")
    assert set(files) >= source, sorted(source - set(files))
    assert "kbench._native" in files
    assert [f for f in files.values() if not Path(f).is_relative_to(installed.site)] == []


def test_the_readme_python_example(installed: Installed) -> None:
    readme = (ROOT / "README.md").read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "kbench.results" in b]
    assert len(blocks) == 1, "README has one Python example using kbench.results"
    # its paths are relative to the repository's root: the same layout in the temporary cwd
    shutil.copytree(ROOT / "notebooks" / "example-runs", installed.cwd / "notebooks" / "example-runs")
    tree = ast.parse(blocks[0])
    last = tree.body[-1]
    assert isinstance(last, ast.Expr)
    tree.body[-1] = ast.Expr(ast.Call(ast.Name("print", ast.Load()), [last.value], []))
    r = installed.run(installed.python, "-c", ast.unparse(ast.fix_missing_locations(tree)))
    assert r.returncode == 0, r.stderr
    assert "zstd" in r.stdout and re.search(r"\d", r.stdout), r.stdout


def _ldd(path: Path) -> list[tuple[str, str]]:
    """(soname, resolved path or '') for every library ``ldd`` lists."""
    r = subprocess.run(["ldd", str(path)], capture_output=True, text=True, check=True)
    out = []
    for line in r.stdout.splitlines():
        line = line.strip()
        if "=>" in line:
            name, _, rest = line.partition("=>")
            out.append((name.strip(), rest.split("(")[0].strip()))
        else:
            out.append((line.split("(")[0].strip(), line.split("(")[0].strip()))
    return out


def test_the_extension_needs_nothing_outside_the_wheel_but_the_c_library(installed: Installed) -> None:
    ext = sorted((installed.site / "kbench").glob("_native*.so"))
    bundled = sorted((installed.site / "kafka_kbench.libs").glob("*.so*"))
    assert len(ext) == 1
    names = {p.name.split("-")[0] for p in bundled}
    assert {
        "librdkafka",
        "libzstd",
        "liblz4",
        "libsnappy",
        "libz",
        "libssl",
        "libcrypto",
        "libsasl2",
        "libstdc++",
    } <= names, names
    outside = []
    for lib in ext + bundled:
        for name, where in _ldd(lib):
            assert where != "not found", f"{lib.name}: {name} not found"
            if Path(where).is_relative_to(installed.site) or name in C_LIBRARY or LOADER.match(where):
                continue
            outside.append(f"{lib.name}: {name} => {where}")
    assert outside == []


def test_the_wheel_is_manylinux(installed: Installed) -> None:
    assert re.search(r"-manylinux_2_\d+_x86_64\.whl$", installed.wheel.name), installed.wheel.name
    r = subprocess.run(
        [sys.executable, "-m", "auditwheel", "show", str(installed.wheel)], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    assert re.search(r'consistent\s+with the following platform tag: "manylinux_2_\d+_x86_64"', r.stdout), r.stdout


LOCAL_PLAN = """\
name = "wheel-kafka"
repetitions = 1
duration_s = 4
steady_skip_s = 1
min_window_s = 3
warmup = false
max_steal_pct = 10

[transport]
kind = "local"
brokers = 1

[[sweep]]
name = "sat"
experiments = ["B", "C"]
codec = ["zstd:3"]
corpus = ["json"]
rate = "saturated"
"""


@pytest.mark.kafka
def test_a_kafka_run_on_a_local_broker(installed: Installed) -> None:
    """The wheel's C driver (its bundled librdkafka) against a local broker kbench starts (Java and
    Maven from the machine, Kafka's jars from the cache)."""
    plan = installed.cwd / "kafka.toml"
    plan.write_text(LOCAL_PLAN)
    run = installed.cwd / "kafka-run"
    installed.kbench("run", plan, "-o", run, "--force", timeout=600)
    rows = list(csv.DictReader((run / "B.csv").open()))
    assert len(rows) == 1 and rows[0]["codec"] == "zstd:3", rows
    assert float(rows[0]["achieved_rate_msgs"]) > 0
    manifest = json.loads((run / "manifest.json").read_text())
    assert "librdkafka" in json.dumps(manifest)
