"""The house's structure, read from the code with ``ast``: no import cycle between kbench's
modules, and no private name imported from another module (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "kbench"


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


#: Modules that are not Python files: the C extension (csrc/ -> kbench._native).
EXTENSIONS = {"kbench._native": ROOT / "_native.pyi"}


def _modules() -> dict[str, Path]:
    return {**{_module_name(p): p for p in ROOT.rglob("*.py")}, **EXTENSIONS}


def _imports(path: Path, mods: dict[str, Path]) -> list[tuple[str, list[str], int]]:
    """(imported module, names imported from it, line) for every import in the file, wherever it
    stands (module level, inside a function, under TYPE_CHECKING)."""
    tree = ast.parse(path.read_text(), str(path))
    me = _module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, [], node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(pkg + ([base] if base else []))
            names = [a.name for a in node.names]
            # "from kbench.x import y" where y is a module: an import of kbench.x.y
            subs = [f"{base}.{n}" for n in names if f"{base}.{n}" in mods]
            out += [(s, [], node.lineno) for s in subs]
            rest = [n for n in names if f"{base}.{n}" not in mods]
            if rest or not subs:
                out.append((base, rest, node.lineno))
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    g: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        if m in EXTENSIONS:
            continue
        for target, _, _ in _imports(p, mods):
            if target in mods and target != m:
                g[m].add(target)
    return g


def _cycle(g: dict[str, set[str]]) -> list[str]:
    """One import cycle of ``g`` (empty when there is none)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str]:
        state[n] = 1
        stack.append(n)
        for m in sorted(g[n]):
            if state.get(m) == 1:
                return stack[stack.index(m) :] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        state[n] = 2
        stack.pop()
        return []

    for n in sorted(g):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return []


def test_no_import_cycle() -> None:
    cycle = _cycle(_graph())
    assert not cycle, "import cycle: " + " -> ".join(cycle)


def test_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) == []


def test_no_private_name_imported_across_modules() -> None:
    mods = _modules()
    found = []
    for m, p in mods.items():
        if m in EXTENSIONS:
            continue
        for target, names, line in _imports(p, mods):
            if not target.startswith("kbench") or target == m:
                continue
            for n in names:
                if n.startswith("_") and not n.startswith("__"):
                    found.append(f"{p.relative_to(ROOT.parent)}:{line} imports {n} from {target}")
    assert not found, "\n".join(found)


def test_no_experiment_id_tested_outside_the_experiment_modules() -> None:
    """The runner, report, frames, provenance and transports ask the registry: no comparison
    with an experiment's id literal outside kbench/experiments/."""
    from kbench.experiments import registry

    ids = set(registry.ids())
    found = []
    for p in ROOT.rglob("*.py"):
        if p.is_relative_to(ROOT / "experiments"):
            continue
        for node in ast.walk(ast.parse(p.read_text(), str(p))):
            if isinstance(node, ast.Compare):
                for side in [node.left, *node.comparators]:
                    consts = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
                    for c in consts:
                        if isinstance(c, ast.Constant) and c.value in ids:
                            found.append(f"{p.relative_to(ROOT.parent)}:{node.lineno} compares with {c.value!r}")
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "set" and node.args:
                a = node.args[0]
                if (
                    isinstance(a, ast.Constant)
                    and isinstance(a.value, str)
                    and set(a.value) <= ids
                    and len(a.value) > 1
                ):
                    found.append(f"{p.relative_to(ROOT.parent)}:{node.lineno} builds a set of experiment ids")
    assert not found, "\n".join(found)


#: The documented layer order (docs/architecture.md), lowest first: a module imports only from its
#: own layer and the layers before it.  The experiments sit above engine and reporting (they use
#: both); engine and reporting reach them only through their interface, :data:`EXPERIMENTS_INTERFACE`.
LAYERS = ("model", "kafka", "testbed", "engine", "reporting", "experiments", "commands")
#: What of kbench/experiments/ the layers below it may import: the registry and the spec (no
#: concrete experiment module, no shared row helper).
EXPERIMENTS_INTERFACE = frozenset({"kbench.experiments", "kbench.experiments.registry", "kbench.experiments.spec"})


def _layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else None


def _upward(mods: dict[str, Path]) -> list[str]:
    found = []
    for m, p in mods.items():
        if m in EXTENSIONS or _layer(m) is None:
            continue
        for target, _, line in _imports(p, mods):
            lt, lm = _layer(target), _layer(m)
            if target not in mods or lt is None or lm is None or lt <= lm:
                continue
            if target in EXPERIMENTS_INTERFACE and lm < LAYERS.index("experiments"):
                continue
            found.append(f"{p.relative_to(ROOT.parent)}:{line} imports {target} ({LAYERS[lm]} -> {LAYERS[lt]})")
    return found


def test_imports_follow_the_documented_layer_order() -> None:
    found = _upward(_modules())
    assert not found, "imports against the layer order:\n" + "\n".join(found)


def test_only_the_experiments_import_a_concrete_experiment_module() -> None:
    """The registry-only rule: outside kbench/experiments/ (commands included) no module imports
    an experiment module; the engine and reporting ask kbench.experiments.registry / spec."""
    mods = _modules()
    found = []
    for m, p in mods.items():
        if m in EXTENSIONS or m.startswith("kbench.experiments"):
            continue
        for target, _, line in _imports(p, mods):
            if target.startswith("kbench.experiments.") and target not in EXPERIMENTS_INTERFACE:
                found.append(f"{p.relative_to(ROOT.parent)}:{line} imports {target}")
    assert not found, "\n".join(found)


def test_the_layer_check_finds_an_upward_import(tmp_path: Path) -> None:
    # the check can fail: an engine module importing a concrete experiment or reporting is reported
    mods = {}
    for m, text in (
        (
            "kbench.engine.x",
            "from kbench.experiments import a_latency, registry\nfrom kbench.reporting import report\n",
        ),
        ("kbench.experiments.a_latency", ""),
        ("kbench.experiments.registry", ""),
        ("kbench.reporting.report", ""),
    ):
        f = tmp_path / Path(*m.split(".")).with_suffix(".py")
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
        mods[m] = f
    global ROOT
    saved, ROOT = ROOT, tmp_path / "kbench"
    try:
        found = _upward(mods)
    finally:
        ROOT = saved
    assert [f.split(" imports ")[1] for f in found] == [
        "kbench.experiments.a_latency (engine -> experiments)",
        "kbench.reporting.report (engine -> reporting)",
    ]


#: The layers that carry an experiment's own axes without reading them (Cell.extras, Sweep.extras).
CARRIERS = ("engine", "reporting", "commands", "kafka", "model", "testbed")
#: ... but for the one table of bounds on every number a user gives (docs/plan-format.md "Limits"),
#: which holds an experiment's plan keys' bounds beside the engine's.
BOUNDS_TABLE = ROOT / "model" / "limits.py"


def _names_in_code(tree: ast.AST) -> list[tuple[str, int]]:
    """Every identifier (attribute, name, keyword, parameter, definition) and every string constant
    that is a whole value (a key, an argument) in ``tree``, with its line; docstrings and the text
    inside f-strings are prose, left out."""
    prose = {
        id(n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
    }
    prose |= {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    out: list[tuple[str, int]] = []
    for n in ast.walk(tree):
        line = getattr(n, "lineno", 0)
        if isinstance(n, ast.Attribute):
            out.append((n.attr, line))
        elif isinstance(n, ast.Name):
            out.append((n.id, line))
        elif isinstance(n, ast.keyword) and n.arg:
            out.append((n.arg, line))
        elif isinstance(n, ast.arg):
            out.append((n.arg, line))
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append((n.name, line))
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in prose:
            out.append((n.value, line))
    return out


def _own_names() -> set[str]:
    """Every experiment's own plan keys (its sweep axes) and warm-up tuning keys (manifest entries),
    less the keys the engine defines itself (e.g. transport.consumers, the drivers per cell)."""
    from kbench.engine import plan_schema, premises
    from kbench.experiments import registry

    own = set(registry.sweep_keys()) | {t.key for t in registry.tunings()}
    engine = {*plan_schema.TOP_KEYS, *plan_schema.TRANSPORT_KEYS, *plan_schema.CORPUS_KEYS}
    engine |= {*plan_schema.SWEEP_KEYS, *premises.KEYS}
    return own - engine


def _naming(paths: list[Path], own: set[str]) -> list[str]:
    found = []
    for p in paths:
        for name, line in _names_in_code(ast.parse(p.read_text(), str(p))):
            if name in own:
                found.append(f"{p.relative_to(ROOT.parent)}:{line} names {name!r}")
    return found


def test_the_engine_names_no_experiments_own_axis() -> None:
    """An experiment's own sweep axes and tuning (G's backlog_bytes, fetch sizes, its manifest
    ``backlog`` entry) are read only by its module: the layers below carry them unread, so no
    identifier or key of theirs names one (a move of G's behaviour back into the engine fails here)."""
    own = _own_names()
    assert {"backlog_bytes", "fetch_max_bytes", "backlog"} <= own  # G's, through the registry
    paths = [p for layer in CARRIERS for p in (ROOT / layer).rglob("*.py") if p != BOUNDS_TABLE]
    found = _naming(paths, own)
    assert not found, "\n".join(found)


def test_the_own_axis_check_finds_a_named_axis(tmp_path: Path) -> None:
    # the check can fail: an engine module reading G's backlog off a cell, or its manifest entry
    f = tmp_path / "kbench" / "engine" / "x.py"
    f.parent.mkdir(parents=True)
    f.write_text(
        '"""Sizes backlog_bytes (prose: not a name)."""\n'
        "def f(cell, man):\n"
        "    n = cell.backlog_bytes\n"
        '    return man.get("backlog"), f"{n} backlog_bytes"\n'
    )
    global ROOT
    saved, ROOT = ROOT, tmp_path / "kbench"
    try:
        found = _naming([f], _own_names())
    finally:
        ROOT = saved
    assert found == ["kbench/engine/x.py:3 names 'backlog_bytes'", "kbench/engine/x.py:4 names 'backlog'"]
