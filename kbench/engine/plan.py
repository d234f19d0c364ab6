"""Plans: a TOML matrix of cells, validated before any work, expanded into cells.

A plan names its settings at the top level, a ``[transport]`` table, optional
``[client]`` properties (librdkafka, passed verbatim), optional ``[corpora]`` and one
or more ``[[sweep]]`` tables whose list-valued axes are crossed into cells.
The full format is documented in ``docs/plan-format.md``.

Every problem is reported as a :class:`PlanError` whose message is one line naming the
key and the fix, e.g. ``sweep[0].codec: unknown codec 'zstdd'; use one of ...``.
"""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

from kbench.engine.cell import Cell
from kbench.engine.plan_expand import (
    check_budget,
    check_local_only,
    expand,
)
from kbench.engine.plan_parse import (
    parse,
)
from kbench.engine.plan_schema import (
    AUTO_PREFIX,
    TRANSPORT_KINDS,
    CorpusDef,
    Plan,
    PlanError,
    Sweep,
    TransportDef,
)
from kbench.engine.plan_values import (
    MANAGED_CLIENT_KEYS,
    check_client,
    is_derived_rate,
    rate_fraction,
)
from kbench.experiments.spec import DEFAULT_SATURATION_BOUND_MS
from kbench.model import textfile
from kbench.model.paths import not_a_regular_file

__all__ = [
    "AUTO_PREFIX",
    "DEFAULT_SATURATION_BOUND_MS",
    "Cell",
    "CorpusDef",
    "Plan",
    "PlanError",
    "Sweep",
    "TransportDef",
    "MANAGED_CLIENT_KEYS",
    "TRANSPORT_KINDS",
    "check_budget",
    "builtin_plans",
    "check_local_only",
    "check_client",
    "expand",
    "is_derived_rate",
    "load",
    "parse",
    "rate_fraction",
]

#: The key policy: the plan may write ``roundrobin`` (the older spelling) for ``round-robin``.


# ---------------------------------------------------------------------------- loading


def builtin_plans() -> dict[str, str]:
    """Built-in plan names -> their description."""
    out: dict[str, str] = {}
    for entry in sorted(resources.files("kbench").joinpath("plans").iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".toml"):
            data = tomllib.loads(entry.read_text())
            out[entry.name[:-5]] = str(data.get("description", ""))
    return out


def load(spec: str | Path, base_dir: Path | None = None) -> Plan:
    """A built-in plan by name, or a TOML file; validated. Raises PlanError."""
    text: str
    p = Path(spec)
    if isinstance(spec, str) and "/" not in spec and not spec.endswith(".toml"):
        res = resources.files("kbench").joinpath("plans", f"{spec}.toml")
        if not res.is_file():
            raise PlanError(
                f"plan '{spec}' is neither a built-in plan nor a file; use one of {', '.join(builtin_plans())} or a .toml path"
            )
        text, source, base = res.read_text(), f"builtin:{spec}", Path.cwd()
    else:
        why = not_a_regular_file(p)
        if why == "does not exist":
            raise PlanError(
                f"plan file not found: {p}; give an existing .toml file or one of {', '.join(builtin_plans())}"
            )
        if why is not None:
            raise PlanError(f"plan {p} {why}; give a .toml file")
        text = textfile.read_text(p, "plan")  # bounded; one line for a binary or huge file
        source, base = str(p.resolve()), p.resolve().parent
    return parse(textfile.loads_toml(text, source), source=source, base_dir=base_dir or base)
