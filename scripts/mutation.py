#!/usr/bin/env python3
"""Mutation score of kbench's number-computing modules, with mutmut (docs/testing.md,
"Mutation testing").  The modules and the tests are configured once, in pyproject.toml
(``[tool.mutmut]``): the fast tests only (no Kafka), so one module takes minutes.

    python scripts/mutation.py                       # every module of [tool.mutmut] only_mutate
    python scripts/mutation.py kbench.model.advise   # one module
    python scripts/mutation.py --survivors kbench.engine.verdict   # and list what survived

Prints one line per module (killed, survived, timeout, no tests, score = killed / mutants that
some test ran) and the total; exit 0.  Mutants are built in ./mutants (git-ignored); mutmut
remembers results there, so a second run only tests what changed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KILLED = {"killed"}
#: mutmut's statuses that a test ran against (the score's denominator); "no tests" is listed apart
TESTED = {"killed", "survived", "timeout", "suspicious", "segfault"}


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("modules", nargs="*", help="dotted module names (default: every configured module)")
    ap.add_argument("--survivors", action="store_true", help="list the surviving mutants")
    ap.add_argument("--max-children", type=int, default=2)
    args = ap.parse_args(argv)
    known = configured_modules()
    mods = args.modules or known
    unknown = [m for m in mods if m not in known]
    if unknown:
        print(f"mutation: {', '.join(unknown)} not in [tool.mutmut] only_mutate; give one of {', '.join(known)}")
        return 2
    for m in mods:
        p = mutmut("run", "--max-children", str(args.max_children), f"{m}.*")
        if p.returncode != 0:
            print(f"mutation: mutmut run {m}.* exited {p.returncode}:\n{(p.stdout + p.stderr)[-3000:]}")
            return 1
    st = statuses()
    total: Counter[str] = Counter()
    for m in mods:
        c = Counter(s for n, s in st.items() if n.startswith(m + "."))
        total += c
        tested = sum(v for k, v in c.items() if k in TESTED)
        score = 100.0 * c["killed"] / tested if tested else float("nan")
        print(
            f"{m:28} {sum(c.values()):5} mutants: killed {c['killed']}, survived {c['survived']}, "
            f"timeout {c['timeout']}, no tests {c['no tests']}; score {score:.1f} %"
        )
        if args.survivors:
            for n, s in sorted(st.items()):
                if n.startswith(m + ".") and s == "survived":
                    print(f"    survived: {n}")
    tested = sum(v for k, v in total.items() if k in TESTED)
    print(
        f"{'total':28} {sum(total.values()):5} mutants: killed {total['killed']} of {tested} tested; "
        f"score {100.0 * total['killed'] / tested if tested else float('nan'):.1f} %"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
