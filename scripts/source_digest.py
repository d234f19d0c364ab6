"""Print the SHA-256 of the sources a kbench wheel is built from (setup.py, pyproject.toml,
MANIFEST.in, README.md, LICENSE, csrc/, kbench/, and the two build scripts; in-place builds and
bytecode left out).

scripts/build-wheel.sh writes it beside the wheel (dist/SOURCES.sha256); tests/test_installed_wheel.py
reuses a wheel whose digest is the current one instead of building again, and scripts/setup.sh
keeps each built wheel in a cache under that digest.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

FILES = (
    "setup.py",
    "pyproject.toml",
    "MANIFEST.in",
    "README.md",
    "LICENSE",
    "scripts/build-wheel.sh",
    "scripts/repair_wheel.py",
)
TREES = ("csrc", "kbench")


def _skipped(path: Path) -> bool:
    return "__pycache__" in path.parts or path.suffix in (".so", ".pyc", ".o")


def digest(root: Path) -> str:
    paths = [root / f for f in FILES]
    for tree in TREES:
        paths += [p for p in (root / tree).rglob("*") if p.is_file() and not _skipped(p)]
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


if __name__ == "__main__":
    print(digest(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]))
