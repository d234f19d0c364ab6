"""``kbench plans [PLAN]``: list the built-in plans, or check one without running it (a dry run).

With no argument: every built-in plan with its experiments, cells, runs and estimated time.
With a built-in name or a .toml file: the plan is loaded and validated exactly as ``kbench run``
would (a bad plan: one line naming the problem, exit 2), then its cells, the order ``kbench run``
would run them in (for the plan's seed, or --seed) and the estimated time are printed; nothing is
run and nothing is written.  --toml prints a built-in plan's TOML instead, to copy and edit.
"""

from __future__ import annotations

import argparse
import json
from importlib import resources
from typing import Any

from kbench.commands.args import add_json
from kbench.engine import plan as plan_mod
from kbench.engine.cell import Cell
from kbench.engine.estimate import estimate
from kbench.engine.runner import order_runs
from kbench.model import limits

#: The order shown for a plan without a seed (a real run draws a random seed and records it).
SHOWN_SEED = 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plans",
        help="list the built-in plans, or validate one and show its cells, order and time (a dry run)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("plan", nargs="?", metavar="PLAN", help="a built-in plan name or a .toml plan file to check")
    p.add_argument("--toml", action="store_true", help="print the built-in plan's TOML (to copy and edit) instead")
    p.add_argument("--seed", type=int, help="seed of the order shown (default: the plan's, else 0)")
    add_json(p, "the plans (or the plan's cells, order and estimate)")
    p.set_defaults(func=run)


def estimate_s(plan: plan_mod.Plan, cells: int) -> float:
    """Estimated seconds of a plan: set-up, knee probes, warm-ups, repetitions and each run's
    overhead (kbench.engine.estimate; retries not counted)."""
    return estimate(plan).total_s


def _runs(plan: plan_mod.Plan, cells: int) -> int:
    return cells * (plan.repetitions + int(plan.warmup))


def _cell_line(c: Cell) -> str:
    rate = c.rate if isinstance(c.rate, str) else f"{c.rate:g}/s"
    return (
        f"{c.cell_id:<28} {''.join(c.experiments):<5} {c.client:<10} {c.codec:<9} {c.corpus:<10} "
        f"{c.batch_size:>8} {c.linger_ms:>6g} {c.partitions:>4} {c.acks:>4} {rate:>10} {c.topic_compression}"
    )


def _list(as_json: bool) -> int:
    plans = plan_mod.builtin_plans()
    rows: list[dict[str, Any]] = []
    for name, desc in plans.items():
        try:
            p = plan_mod.load(name)
        except plan_mod.PlanError as e:  # e.g. a client this install lacks: listed, with why
            rows.append({"name": name, "description": desc, "unavailable": str(e)})
            continue
        n = len(plan_mod.expand(p))
        rows.append(
            {
                "name": name,
                "experiments": p.experiments,
                "cells": n,
                "runs": _runs(p, n),
                "estimate_s": estimate_s(p, n),
                "description": desc,
            }
        )
    if as_json:
        print(json.dumps({"plans": rows}, indent=1))
        return 0
    w = max(map(len, plans))
    for r in rows:
        if "unavailable" in r:
            print(f"{str(r['name']).ljust(w)}  not runnable here: {r['unavailable']}")
            continue
        print(
            f"{str(r['name']).ljust(w)}  {''.join(r['experiments']):<6} {r['cells']:>3} cells {r['runs']:>4} runs  "
            f"~{r['estimate_s'] / 60:.0f} min  {r['description']}"
        )
    return 0


def _dry_run(args: argparse.Namespace) -> int:
    plan = plan_mod.load(args.plan)
    if args.seed is not None:
        limits.check("--seed", args.seed, "seed")
    cells = plan_mod.expand(plan)
    seed = args.seed if args.seed is not None else plan.seed
    shown = SHOWN_SEED if seed is None else seed
    order = order_runs(cells, plan.repetitions, shown)
    est = estimate_s(plan, len(cells))
    if args.json:
        doc: dict[str, Any] = {
            "plan": plan.name,
            "source": plan.source,
            "experiments": plan.experiments,
            "transport": plan.transport.kind,
            "repetitions": plan.repetitions,
            "warmup": plan.warmup,
            "retries": plan.retries,
            "cells": [{**c.params(), "experiments": list(c.experiments)} for c in cells],
            "seed": seed,
            "order_seed": shown,
            "order": [[c.cell_id, rep] for c, rep in order],
            "runs": _runs(plan, len(cells)),
            "estimate_s": est,
            "estimate_phases": estimate(plan, cells).as_dict(),
        }
        print(json.dumps(doc, indent=1))
        return 0
    print(f"plan {plan.name} ({plan.source}): valid; {plan.description}")
    print(
        f"experiments {', '.join(plan.experiments)}; transport {plan.transport.kind}; {plan.repetitions} repetitions "
        f"of {plan.duration_s:g} s per cell{f', a {plan.warmup_s:g} s warm-up per cell' if plan.warmup else ''}; "
        f"retries {plan.retries}"
    )
    print(f"\n{len(cells)} cells:")
    print(
        f"  {'cell':<28} {'exp':<5} {'client':<10} {'codec':<9} {'corpus':<10} {'batch.sz':>8} {'linger':>6} "
        f"{'part':>4} {'acks':>4} {'rate':>10} topic"
    )
    for c in cells:
        print("  " + _cell_line(c))
    where = f"seed {seed}" if seed is not None else f"seed {shown} (the plan has none: a run draws one and records it)"
    print(f"\norder ({len(order)} repetitions, saturated cells first, {where}):")
    for i, (c, rep) in enumerate(order, 1):
        print(f"  {i:>4}. {c.cell_id} rep {rep}")
    sim = (
        " (the sim transport sends each corpus once per run: duration does not apply)"
        if plan.transport.kind == "sim"
        else ""
    )
    ph = estimate(plan, cells)
    print(
        f"\nestimated time: ~{est / 60:.1f} min ({_runs(plan, len(cells))} runs incl. warm-ups; set-up "
        f"{ph.setup_s:.0f} s, cluster warm-up {ph.warm_s:.0f} s, floor and knee probes {ph.probes_s:.0f} s, warm-ups {ph.warmups_s:.0f} s, repetitions "
        f"{ph.repetitions_s:.0f} s, per-run overhead {ph.overhead_s:.0f} s; retries not counted){sim}"
    )
    return 0


def run(args: argparse.Namespace) -> int:
    if args.toml:
        if not args.plan or args.plan not in plan_mod.builtin_plans():
            raise plan_mod.PlanError(
                f"--toml: give a built-in plan ({', '.join(plan_mod.builtin_plans())}); a file is its own TOML"
            )
        print(resources.files("kbench").joinpath("plans", f"{args.plan}.toml").read_text(), end="")
        return 0
    if args.plan:
        return _dry_run(args)
    return _list(args.json)
