"""Public loader for run directories: ``kbench.results.load(RUN_DIR, ...)``.

Notebooks and users read results through this module; the implementation lives in
:mod:`kbench.reporting.frames` (pandas is imported only when this module is).
"""

from __future__ import annotations

from kbench.reporting.frames import load

__all__ = ["load"]
