"""How kbench is installed: its distribution's name on the package registry (``kbench`` there is
another project; the import package and the command stay ``kbench``) and the command that adds an
optional part."""

from __future__ import annotations

__all__ = ["DISTRIBUTION", "pip_install"]

#: The name in pyproject.toml (tests/test_packaging.py checks they agree).
DISTRIBUTION = "kafka-kbench"


def pip_install(extra: str) -> str:
    """The command that installs kbench's optional dependencies ``extra`` (pyproject.toml)."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"
