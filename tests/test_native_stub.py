"""``kbench._native`` is imported only by its wrapper modules (listed once, in docs/architecture.md),
and ``kbench/_native.pyi`` names exactly what the extension exports."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import kbench._native as native

ROOT = Path(__file__).resolve().parent.parent
STUB = ROOT / "kbench" / "_native.pyi"
DOC = ROOT / "docs" / "architecture.md"
IMPORT = re.compile(
    r"^\s*(from\s+kbench\s+import\s+.*\b_native\b|from\s+kbench\._native\s+import|import\s+kbench\._native)", re.M
)


def _public(names: object) -> set[str]:
    return {n for n in names if not n.startswith("__")}  # type: ignore[attr-defined]


def allowed_importers() -> set[str]:
    """The module list between the native-importers markers of docs/architecture.md."""
    text = DOC.read_text()
    start = text.index("<!-- native-importers")
    end = text.index("<!-- /native-importers -->")
    return set(re.findall(r"^- `(kbench/[^`]+\.py)`", text[start:end], re.M))


def test_only_the_listed_wrappers_import_native() -> None:
    listed = allowed_importers()
    assert listed, "docs/architecture.md lost its list of modules allowed to import _native"
    importers = {
        str(f.relative_to(ROOT)) for f in sorted((ROOT / "kbench").rglob("*.py")) if IMPORT.search(f.read_text())
    }
    assert importers == listed


def _stub() -> tuple[set[str], dict[str, set[str]]]:
    tree = ast.parse(STUB.read_text())
    top: set[str] = set()
    members: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            top.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            top.add(node.target.id)
        if isinstance(node, ast.ClassDef):
            members[node.name] = {
                n.name if isinstance(n, ast.FunctionDef) else n.target.id  # type: ignore[union-attr]
                for n in node.body
                if isinstance(n, ast.FunctionDef) or (isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name))
            }
    return top, members


def test_stub_names_exactly_what_the_extension_exports() -> None:
    top, members = _stub()
    assert top == _public(dir(native))
    for cls, names in members.items():
        exported = _public(vars(getattr(native, cls)))
        if issubclass(getattr(native, cls), BaseException):
            exported -= {"__weakref__"}
        assert _public(names) == exported, cls
