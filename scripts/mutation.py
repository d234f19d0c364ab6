#!/usr/bin/env python3
"""Mutation score of kbench's number-computing modules, with mutmut (docs/testing.md,
"Mutation testing").  The modules and the tests are configured once, in pyproject.toml
(``[tool.mutmut]``): the fast tests only (no Kafka), so one module takes minutes.

    python scripts/mutation.py                       # every module of [tool.mutmut] only_mutate
    python scripts/mutation.py kbench.model.advise   # one module
    python scripts/mutation.py --survivors kbench.engine.verdict   # and list what survived
    python scripts/mutation.py --retest MODULE       # after adding tests: try its survivors again

Prints one line per module (killed, survived, timeout, no tests, score = killed / mutants in
scope, a mutant no test runs counting as not killed) and the total; exit 0.  Functions outside
the score's scope (:data:`OUT_OF_SCOPE`: report prose, not arithmetic) are counted apart.  Mutants
are built in ./mutants (git-ignored); mutmut remembers results there, so a second run only
tests what changed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tomllib
from collections import Counter
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: mutmut's statuses of a mutant that was tried (the score's denominator): "no tests" counts as
#: not killed; "not checked" (not run yet) is left out and listed
TRIED = {"killed", "survived", "timeout", "suspicious", "segfault", "no tests"}

#: Functions of the configured modules that the score leaves out, and why (module glob ->
#: function names).  The experiments' report sections print figures the ledger computed
#: (kbench.reporting.summary/provenance, in scope); they choose words and table layout, and
#: their tests (tests/test_report*.py, ~50 s a run) are too slow to run per mutant.
OUT_OF_SCOPE: dict[str, tuple[str, ...]] = {
    "kbench.experiments.*": ("_section", "_threats", "_phases", "_sweep_check"),
}


def function_of(mutant: str) -> str:
    """``pkg.mod.x_name__mutmut_3`` / ``pkg.mod.xǁClassǁname__mutmut_3`` -> ``name``."""
    tail = mutant.rsplit(".", 1)[1].rsplit("__mutmut_", 1)[0]
    return tail.rsplit("ǁ", 1)[1] if "ǁ" in tail else tail[2:]


def in_scope(mutant: str) -> bool:
    module = mutant.rsplit(".", 1)[0]
    return not any(fnmatch(module, g) and function_of(mutant) in fns for g, fns in OUT_OF_SCOPE.items())


def configured_modules() -> list[str]:
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    return [p.removesuffix(".py").replace("/", ".") for p in cfg["only_mutate"]]


def mutmut(*args: str) -> subprocess.CompletedProcess[str]:
    # the tests must import the mutated copy in ./mutants, not a tree on PYTHONPATH
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(["mutmut", *args], cwd=ROOT, env=env, capture_output=True, text=True)


def statuses() -> dict[str, str]:
    """Mutant name -> status, from ``mutmut results --all true``."""
    out = mutmut("results", "--all", "true").stdout
    res = {}
    for line in out.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and "__mutmut_" in name:
            res[name] = status.strip()
    return res


#: mutmut's exit codes of a mutant that was not killed (survived, no tests, timeout), reset by --retest
NOT_KILLED_CODES = {0, 5, 33, 36, -24, 24, 152, 255}


def reset_not_killed(modules: list[str]) -> int:
    """Forget the modules' not-killed results (mutants/<path>.meta), so the next run tries those
    mutants again: mutmut re-tests a mutant only when its function changes, not when a test is added."""
    n = 0
    for m in modules:
        meta = ROOT / "mutants" / (m.replace(".", "/") + ".py.meta")
        if not meta.is_file():
            continue
        data = json.loads(meta.read_text())
        codes = data["exit_code_by_key"]
        for k, v in codes.items():
            if v in NOT_KILLED_CODES:
                codes[k] = None
                n += 1
        meta.write_text(json.dumps(data))
    return n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("modules", nargs="*", help="dotted module names (default: every configured module)")
    ap.add_argument("--survivors", action="store_true", help="list the surviving mutants")
    ap.add_argument("--max-children", type=int, default=2)
    ap.add_argument("--report-only", action="store_true", help="print the last results, run nothing")
    ap.add_argument("--retest", action="store_true", help="try the not-killed mutants again (after adding tests)")
    args = ap.parse_args(argv)
    known = configured_modules()
    mods = args.modules or known
    unknown = [m for m in mods if m not in known]
    if unknown:
        print(f"mutation: {', '.join(unknown)} not in [tool.mutmut] only_mutate; give one of {', '.join(known)}")
        return 2
    if args.retest and not args.report_only:
        print(f"mutation: {reset_not_killed(mods)} not-killed mutants to try again")
    if not args.report_only:
        p = mutmut("run", "--max-children", str(args.max_children), *(f"{m}.*" for m in mods))
        if p.returncode != 0:
            print(f"mutation: mutmut run exited {p.returncode}:\n{(p.stdout + p.stderr)[-3000:]}")
            return 1
    st = statuses()
    total: Counter[str] = Counter()
    out_of_scope = 0
    for m in mods:
        mine = {n: s for n, s in st.items() if n.rsplit(".", 1)[0] == m}
        scoped = {n: s for n, s in mine.items() if in_scope(n)}
        out_of_scope += len(mine) - len(scoped)
        c = Counter(scoped.values())
        total += c
        tried = sum(v for k, v in c.items() if k in TRIED)
        score = 100.0 * c["killed"] / tried if tried else float("nan")
        print(
            f"{m:34} {len(scoped):5} mutants: killed {c['killed']}, survived {c['survived']}, "
            f"timeout {c['timeout']}, no tests {c['no tests']}, not run {c['not checked']}; score {score:.1f} %"
        )
        if args.survivors:
            for n, s in sorted(scoped.items()):
                if s not in ("killed", "not checked"):
                    print(f"    {s}: {n}")
    tried = sum(v for k, v in total.items() if k in TRIED)
    print(
        f"{'total':34} {tried:5} mutants tried: killed {total['killed']}; "
        f"score {100.0 * total['killed'] / tried if tried else float('nan'):.1f} %"
        f" ({total['not checked']} not run yet; {out_of_scope} out of scope)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
