"""csrc/core is plain C (no Python.h); csrc/python holds only the CPython bindings."""

from __future__ import annotations

import re
from pathlib import Path

CSRC = Path(__file__).resolve().parent.parent / "csrc"
PYTHON_H = re.compile(r'^\s*#\s*include\s*[<"]Python\.h[">]', re.M)


def test_core_never_includes_python_h() -> None:
    files = sorted((CSRC / "core").glob("*.[ch]"))
    assert files
    offenders = [f.name for f in files if PYTHON_H.search(f.read_text())]
    assert offenders == []


def test_python_dir_holds_only_bindings() -> None:
    names = sorted(f.name for f in (CSRC / "python").glob("*.[ch]"))
    assert names
    assert [n for n in names if not (n.startswith("py_") or n == "module.c")] == []
    headers = [f for f in (CSRC / "python").glob("*.h")]
    assert [h.name for h in headers if not PYTHON_H.search(h.read_text())] == []


def test_consumer_does_not_include_producer() -> None:
    assert '#include "producer.h"' not in (CSRC / "core" / "consumer.h").read_text()
    assert '#include "producer.h"' not in (CSRC / "core" / "consumer.c").read_text()
