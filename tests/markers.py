"""The test tiers: which markers a test needs, read from what it uses (checked at collection).

A test that needs infrastructure (a broker or JVM, the Go toolchain, a sanitizer or cross build,
a browser, the testbed's network namespaces, a Dask cluster) carries that tier's marker, so that
``bash scripts/test.sh --fast`` (``-m "not kafka and not go and ..."``) runs none of it.
tests/conftest.py fails a test whose code needs a tier it is not marked with.

What a test needs is found in three places, followed through every fixture it uses (pytest's
closure, so a module's own fixture that asks for ``kafka1`` counts) and through the helpers it
calls in tests/ (tests/oracles.py, tests/report_runs.py, the module's own functions):

- ``FIXTURES``: a fixture name (the shared ones in tests/conftest.py);
- ``CALLS``: a callable it calls, by qualified name (``kbench.kafka.cluster.LocalCluster``);
- ``TEXT``: a pattern in a string its code holds (not a docstring) or in a module-level string it
  uses (``-fsanitize`` is a sanitizer build), or a keyword argument (``transport="local"``).

Not seen: a test that starts Kafka only through a ``kbench`` subprocess (a plan whose transport is
``kind = "local"`` run by ``python -m kbench run``); such a test is marked by hand, and the check
cannot vouch for it.  (A plan's text alone proves nothing: many fast tests only parse plans.)
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import sys
import textwrap
import types
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent

# the tier markers (registered, with what each means, in pyproject.toml)
TIERS: tuple[str, ...] = ("kafka", "go", "sanitizer", "browser", "testbed", "dask")

FIXTURES: dict[str, frozenset[str]] = {
    "kafka1": frozenset({"kafka"}),
    "kafka3": frozenset({"kafka"}),
    "kafka_report_run": frozenset({"kafka"}),
    "dump_log_segments": frozenset({"kafka"}),
}

CALLS: dict[str, frozenset[str]] = {
    "kbench.kafka.cluster.LocalCluster": frozenset({"kafka"}),
    "kbench.kafka.kafka_dist.find": frozenset({"kafka"}),
    "kbench.kafka.kafka_dist.classpath": frozenset({"kafka"}),
    "kbench.kafka.kafka_dist.java": frozenset({"kafka"}),
    "kbench.kafka.kafka_dist.java_command": frozenset({"kafka"}),
    "kbench.kafka.kafka_dist.run_tool": frozenset({"kafka"}),
    "kbench.kafka.java_driver.build": frozenset({"kafka"}),
    "kbench.kafka.java_driver.command": frozenset({"kafka"}),
    "kbench.kafka.go_driver.go": frozenset({"go"}),
    "kbench.kafka.go_driver.build": frozenset({"go"}),
    "kbench.kafka.go_driver.command": frozenset({"go"}),
    "kbench.testbed.testbed.Testbed": frozenset({"testbed"}),
    "kbench.testbed.brokers.cluster_on": frozenset({"testbed", "kafka"}),
    "distributed.deploy.local.LocalCluster": frozenset({"dask"}),
    "distributed.client.Client": frozenset({"dask"}),
    "chromium.render": frozenset({"browser"}),
    "chromium.probe": frozenset({"browser"}),
    "report_runs.kafka_runs": frozenset({"kafka"}),
}

TEXT: tuple[tuple[re.Pattern[str], frozenset[str]], ...] = (
    (re.compile(r"""^transport=["']local["']$"""), frozenset({"kafka"})),  # report_runs' real-Kafka runs
    (re.compile(r"-fsanitize"), frozenset({"sanitizer"})),
    (re.compile(r"^qemu-"), frozenset({"sanitizer"})),
    (re.compile(r"\bTestbed\.create\("), frozenset({"testbed"})),  # a child process's script
)


def qualname(obj: object) -> str | None:
    """``module.qualname`` of a function or class (a bound method: its function's)."""
    obj = getattr(obj, "__func__", obj)
    module, name = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    return f"{module}.{name}" if module and name else None


def _in_tests(obj: object) -> bool:
    try:
        path = inspect.getsourcefile(obj)  # type: ignore[arg-type]
    except TypeError:
        return False
    return path is not None and Path(path).resolve().parent == TESTS


def _resolve(node: ast.expr, scope: Mapping[str, Any]) -> object | None:
    """The object a ``name`` or ``name.attr.attr`` expression names in ``scope`` (None if unknown)."""
    if isinstance(node, ast.Name):
        return scope.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _resolve(node.value, scope)
        return getattr(base, node.attr, None) if base is not None else None
    return None


def _module(name: str) -> object | None:
    """A module already imported, or one of kbench's (importing them starts nothing)."""
    if name not in sys.modules and (name == "kbench" or name.startswith("kbench.")):
        try:
            importlib.import_module(name)
        except ImportError:
            return None
    return sys.modules.get(name)


def _local_imports(tree: ast.AST) -> dict[str, str]:
    """Names a function imports inside itself (``from kbench.kafka.cluster import LocalCluster``),
    by the qualified name of what they name when its module is already imported."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                found = getattr(_module(node.module), alias.name, None)
                out[alias.asname or alias.name] = (qualname(found) if found is not None else None) or name
    return out


def _needs_of_text(text: str) -> set[str]:
    return {m for pattern, markers in TEXT if pattern.search(text) for m in markers}


def _docstrings(tree: ast.AST) -> list[ast.Constant]:
    out = []
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
        ):
            out.append(body[0].value)
    return out


def called(name: str | None) -> frozenset[str]:
    """The markers calling ``name`` needs: its own entry or its class's (``Testbed.create``)."""
    parts = (name or "").split(".")
    return frozenset(m for i in range(len(parts), 0, -1) for m in CALLS.get(".".join(parts[:i]), ()))


class Needs:
    """What a function needs, following the helpers in tests/ it calls (each function read once)."""

    def __init__(self) -> None:
        self._seen: dict[object, frozenset[str]] = {}

    def of(self, fn: Callable[..., object]) -> frozenset[str]:
        key = getattr(fn, "__code__", fn)
        if key in self._seen:
            return self._seen[key]
        self._seen[key] = frozenset()  # a recursive helper reads as needing nothing more
        self._seen[key] = found = frozenset(self._read(fn))
        return found

    def _read(self, fn: Callable[..., object]) -> set[str]:
        fn = inspect.unwrap(fn)
        try:
            source = textwrap.dedent(inspect.getsource(fn))
        except (OSError, TypeError):
            return set()
        tree = ast.parse(source)
        scope: Mapping[str, Any] = getattr(fn, "__globals__", {})
        imported = _local_imports(tree)
        docstrings = {id(d) for d in _docstrings(tree)}
        needs: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                needs |= self._call(node.func, scope, imported)
                for kw in node.keywords:
                    if kw.arg and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                        needs |= _needs_of_text(f"{kw.arg}={kw.value.value!r}".replace("'", '"'))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                needs |= _needs_of_text(node.value)
            elif isinstance(node, ast.Name | ast.Attribute) and isinstance(node.ctx, ast.Load):
                value = _resolve(node, scope)
                if isinstance(value, str):
                    needs |= _needs_of_text(value)
        return needs

    def _call(self, func: ast.expr, scope: Mapping[str, Any], imported: Mapping[str, str]) -> set[str]:
        if isinstance(func, ast.Name) and func.id in imported and func.id not in scope:
            return set(called(imported[func.id]))
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in imported:
            return set(called(f"{imported[func.value.id]}.{func.attr}"))
        target = _resolve(func, scope)
        if target is None:
            return set()
        needs = set(called(qualname(target)))
        if callable(target) and _in_tests(target) and isinstance(target, types.FunctionType | type):
            fn = target.__init__ if isinstance(target, type) else target
            if isinstance(fn, types.FunctionType):
                needs |= self.of(fn)
        return needs


def required(fixturenames: Iterable[str], functions: Iterable[Callable[..., object]], needs: Needs) -> set[str]:
    """The tier markers a test needs: from the fixtures it uses and from the code of its function
    and of those fixtures' functions."""
    out = {m for name in fixturenames for m in FIXTURES.get(name, ())}
    for fn in functions:
        out |= needs.of(fn)
    return out


def missing(item: Any, needs: Needs) -> set[str]:
    """The tier markers a collected pytest item needs and lacks."""
    info = getattr(item, "_fixtureinfo", None)
    names = list(getattr(item, "fixturenames", ()))
    functions: list[Callable[..., object]] = [item.obj] if getattr(item, "obj", None) else []
    if info is not None:
        for defs in info.name2fixturedefs.values():
            functions += [d.func for d in defs if _in_tests(d.func)]
    have = {m.name for m in item.iter_markers()}
    return required(names, functions, needs) - have


def message(nodeid: str, lacking: Iterable[str]) -> str:
    marks = " ".join(f"@pytest.mark.{m}" for m in sorted(lacking))
    return f"{nodeid} needs {', '.join(sorted(lacking))} but is not marked: add {marks} (tests/markers.py)"
