"""``kbench plans [NAME]``: list the built-in plans, or print one (to copy and edit)."""

from __future__ import annotations

import argparse
from importlib import resources

from kbench.engine import plan as plan_mod


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plans", help="list the built-in plans, or print one", description=__doc__)
    p.add_argument("name", nargs="?", help="a built-in plan to print as TOML")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    plans = plan_mod.builtin_plans()
    if args.name:
        if args.name not in plans:
            raise plan_mod.PlanError(f"no built-in plan '{args.name}'; use one of {', '.join(plans)}")
        print(resources.files("kbench").joinpath("plans", f"{args.name}.toml").read_text(), end="")
        return 0
    w = max(map(len, plans))
    for name, desc in plans.items():
        p = plan_mod.load(name)
        cells = plan_mod.expand(p)
        runs = len(cells) * (p.repetitions + int(p.warmup))
        est = len(cells) * (p.repetitions * p.duration_s + (p.warmup_s if p.warmup else 0))
        print(
            f"{name.ljust(w)}  {''.join(p.experiments):<6} {len(cells):>3} cells {runs:>4} runs  ~{est / 60:.0f} min  {desc}"
        )
    return 0
