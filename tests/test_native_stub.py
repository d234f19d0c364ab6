"""``kbench._native`` is imported only by its wrapper modules (listed once, in docs/architecture.md),
and ``kbench/_native.pyi`` names exactly what the extension exports."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
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


# ---- parameters: the stub's signatures against the C argument parsing of csrc/python ----

CPY = ROOT / "csrc" / "python"
C_FUNC = re.compile(r"^(?:static\s+)?[\w \t\*]+?\b(\w+)\(([^;{)]*)\)\s*\{\n(.*?)^\}", re.M | re.S)
METHOD = re.compile(r'\{\s*"(\w+)"\s*,\s*[^,{}"]*?(\w+)\s*,\s*(METH_[A-Z_ |]+?)\s*,')
METHOD_TABLE = re.compile(r"PyMethodDef\s+(\w+)(\[\])?\s*=\s*\{(.*?)\n\};", re.S)
TYPE = re.compile(r"static PyTypeObject \w+ = \{(.*?)\n\};", re.S)


@dataclass(frozen=True)
class Params:
    """A callable's parameters: names in order ("" = positional-only), how many are required."""

    names: tuple[str, ...]
    required: int

    @property
    def positional_only(self) -> bool:
        """No keyword arguments at all (METH_O, METH_NOARGS, PyArg_ParseTuple)."""
        return all(n == "" for n in self.names)


def _format_units(fmt: str) -> tuple[int, int]:
    """(units, required units) of a PyArg_Parse* format string ("O!s|dL:name")."""
    fmt = re.split(r"[:;]", fmt, maxsplit=1)[0]
    units = required = 0
    optional = False
    for ch in fmt:
        if ch in "|$":
            optional = True
        elif ch in "*#!&?":
            continue
        else:
            assert ch.isalpha(), f"format unit {ch!r} in {fmt!r} is not understood by this test"
            units += 1
            required += not optional
    return units, required


def _c_functions() -> dict[str, str]:
    bodies: dict[str, str] = {}
    for f in sorted(CPY.glob("*.c")):
        for m in C_FUNC.finditer(f.read_text()):
            bodies[m.group(1)] = m.group(3)
    return bodies


def _c_params(func: str, flags: str, bodies: dict[str, str]) -> Params:
    if "METH_NOARGS" in flags:
        return Params((), 0)
    if "METH_O" in re.findall(r"METH_\w+", flags):
        return Params(("",), 1)
    body = bodies[func]
    if "METH_KEYWORDS" in flags or flags == "init":
        kw = re.search(r"kwlist\[\]\s*=\s*\{(.*?)\}", body, re.S)
        fmt = re.search(r'PyArg_ParseTupleAndKeywords\(\s*args\s*,\s*\w+\s*,\s*"([^"]*)"', body)
        assert kw and fmt, f"{func}: no kwlist / PyArg_ParseTupleAndKeywords found"
        names = tuple(re.findall(r'"(\w*)"', kw.group(1)))
        units, required = _format_units(fmt.group(1))
        assert units == len(names), f"{func}: {units} format units for {len(names)} kwlist names"
        return Params(names, required)
    fmt = re.search(r'PyArg_ParseTuple\(\s*args\s*,\s*"([^"]*)"', body)
    assert fmt, f"{func}: METH_VARARGS without PyArg_ParseTuple"
    units, required = _format_units(fmt.group(1))
    return Params(("",) * units, required)


def _c_signatures() -> dict[str, Params]:
    """Every module function, type constructor and method: 'name' or 'Class.name' -> Params."""
    bodies = _c_functions()
    tables: dict[str, list[tuple[str, str, str]]] = {}
    for f in sorted(CPY.glob("*.c")):
        text = f.read_text()
        for m in METHOD_TABLE.finditer(text):
            tables.setdefault(f"{f.name}:{m.group(1)}", []).extend(METHOD.findall("{" + m.group(3) + "}"))
        for t in TYPE.finditer(text):
            body = t.group(1)
            cls = re.search(r'tp_name\s*=\s*"kbench\._native\.(\w+)"', body)
            assert cls, f"{f.name}: a type without a kbench._native tp_name"
            init = re.search(r"\.tp_init\s*=\s*(?:\(initproc\))?(\w+)", body)
            new = re.search(r"\.tp_new\s*=\s*(\w+)", body)
            ctor = init.group(1) if init else new.group(1) if new else None
            assert ctor and ctor != "PyType_GenericNew", f"{cls.group(1)}: no constructor found"
            sigs_key = f"{f.name}:{cls.group(1)}"
            tables[sigs_key + ".__init__"] = [("__init__", ctor, "init")]
            meths = re.search(r"\.tp_methods\s*=\s*(\w+)", body)
            if meths:
                tables[sigs_key] = tables.pop(f"{f.name}:{meths.group(1)}")
    sigs: dict[str, Params] = {}
    for key, entries in tables.items():
        scope = key.split(":", 1)[1]
        prefix = "" if scope == "methods" or scope.endswith("_def") else scope.split(".")[0] + "."
        for name, func, flags in entries:
            if name.startswith("__") and name != "__init__":
                continue
            sigs[prefix + name] = _c_params(func, flags, bodies)
    return sigs


def _stub_params(fn: ast.FunctionDef, method: bool) -> Params | None:
    """Params of a stub function; None when it takes *args (any positional arguments)."""
    a = fn.args
    if a.vararg is not None:
        return None
    pos = [*a.posonlyargs, *a.args][1 if method else 0 :]
    nposonly = max(len(a.posonlyargs) - (1 if method else 0), 0)
    names = tuple("" if i < nposonly else p.arg for i, p in enumerate(pos)) + tuple(k.arg for k in a.kwonlyargs)
    required = len(pos) - len(a.defaults) + sum(d is None for d in a.kw_defaults)
    return Params(names, required)


def _stub_signatures() -> dict[str, Params | None]:
    sigs: dict[str, Params | None] = {}
    for node in ast.parse(STUB.read_text()).body:
        if isinstance(node, ast.FunctionDef):
            sigs[node.name] = _stub_params(node, method=False)
        elif isinstance(node, ast.ClassDef):
            for n in node.body:
                if isinstance(n, ast.FunctionDef) and not any(
                    isinstance(d, ast.Name) and d.id == "property" for d in n.decorator_list
                ):
                    sigs[f"{node.name}.{n.name}"] = _stub_params(n, method=True)
    return sigs


def test_c_signature_parser_reads_known_functions() -> None:
    c = _c_signatures()
    assert c["compress"] == Params(("data", "codec", "level"), 2)
    assert c["murmur2"] == Params(("",), 1)
    assert c["Histogram.record"] == Params(("",), 1)
    assert c["Consumer.run"] == Params((), 0)
    assert c["Producer.__init__"].names[:4] == ("props", "topic", "payload", "offsets")
    assert len(c) > 40


def test_stub_parameters_match_the_c_argument_parsing() -> None:
    c, stub = _c_signatures(), _stub_signatures()
    assert set(c) - set(stub) == set(), "callables of the extension missing from the stub"
    mismatches = []
    for name, want in sorted(c.items()):
        got = stub[name]
        if got is None:  # *args in the stub: the C side must take positional arguments only
            if not want.positional_only:
                mismatches.append(f"{name}: stub takes *args, C takes keywords {want.names}")
        elif got != want:
            mismatches.append(f"{name}: stub {got}, C {want}")
    assert mismatches == []
