"""Where the kbench that the suite imports lives, for the subprocesses tests start.

A test that runs ``python -m kbench`` (or a worker, a notebook kernel, a Dask worker) puts
``KBENCH_PATH`` on ``PYTHONPATH``: the directory that holds the very ``kbench`` package this test
process imported — the installed wheel's site-packages in CI (scripts/test.sh installs the wheel and
runs pytest with ``python -P``), the work tree where a developer built the extension in place.  Never
the source tree as such: without its built extension it cannot even be imported."""

from __future__ import annotations

from pathlib import Path

import kbench

KBENCH_PATH = str(Path(kbench.__file__).resolve().parents[1])
