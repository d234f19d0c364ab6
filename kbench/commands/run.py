"""``kbench run PLAN``: run a plan's experiments and print the headline tables.

With no other argument, a built-in plan starts a local one-broker cluster, runs, stops it
and prints tables A–F for the experiments it holds.  ``--bootstrap`` points it at an
existing cluster; ``--resume RUN_DIR`` completes an interrupted run without duplicating rows.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import sys
from pathlib import Path

from kbench.engine import manifest as manifest_mod
from kbench.engine import plan as plan_mod
from kbench.engine.redact import Scrubber
from kbench.engine.runner import GateRefused, RunOptions, execute
from kbench.engine.transports import make
from kbench.engine.transports.base import TransportError


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("run", help="run a plan (the main job): kbench run quick", description=__doc__)
    p.add_argument("plan", nargs="?", help="a built-in plan (kbench plans) or a .toml file; optional with --resume")
    p.add_argument("-o", "--output", type=Path, help="run directory (default runs/<plan>-<UTC time>)")
    p.add_argument("--resume", type=Path, metavar="RUN_DIR", help="complete an interrupted run directory")
    p.add_argument("--bootstrap", help="host:port[,...] of an existing cluster instead of a local one")
    p.add_argument(
        "--broker-pid",
        type=int,
        action="append",
        default=[],
        help="local pid of a broker of --bootstrap (for broker CPU); repeat",
    )
    p.add_argument(
        "--workers",
        metavar="SCHEDULER_ADDRESS",
        help="Dask scheduler (tcp://host:8786): run each cell's drivers on its workers (docs/distributed.md)",
    )
    p.add_argument("--transport", choices=plan_mod.TRANSPORT_KINDS, help="override the plan's transport kind")
    p.add_argument(
        "-X",
        dest="props",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="librdkafka client property (e.g. security); repeat",
    )
    p.add_argument(
        "--seed", type=int, help="seed of the cell order (default: the plan's, else random; always recorded)"
    )
    p.add_argument(
        "--force", action="store_true", help="collect even if a blocking gate check fails (recorded in the manifest)"
    )
    p.add_argument("--gate-sample-s", type=float, default=1.0, help=argparse.SUPPRESS)
    p.set_defaults(func=run)


def _props(items: list[str]) -> dict[str, str]:
    out = {}
    for it in items:
        k, sep, v = it.partition("=")
        if not sep or not k:
            raise plan_mod.PlanError(f"-X {it.split('=')[0]}: write -X key=value")
        out[k] = v
    return out


def run(args: argparse.Namespace) -> int:
    prior = manifest_mod.read(args.resume) if args.resume else {}
    spec = args.plan or prior.get("plan_source", "")
    if not spec:
        raise plan_mod.PlanError(
            "plan: missing; give a plan name or file (kbench plans lists them), or --resume RUN_DIR"
        )
    if spec.startswith("builtin:"):
        spec = spec.removeprefix("builtin:")
    plan = plan_mod.load(spec)
    overrides = dict(prior.get("overrides", {})) if args.resume else {}
    if args.transport:
        overrides["kind"] = args.transport
    if args.bootstrap:
        overrides.update(kind="bootstrap", bootstrap=args.bootstrap)
    if args.workers:
        overrides["workers"] = args.workers
    if args.broker_pid:
        overrides["broker_pids"] = list(args.broker_pid)
    if overrides:
        t = dataclasses.replace(
            plan.transport, **{k: (tuple(v) if k == "broker_pids" else v) for k, v in overrides.items()}
        )
        if t.kind == "bootstrap" and not t.bootstrap:
            raise plan_mod.PlanError("--transport bootstrap: give --bootstrap host:port")
        plan = dataclasses.replace(plan, transport=t)
    if args.seed is not None:
        plan = dataclasses.replace(plan, seed=args.seed)
    run_dir = args.resume or args.output or Path("runs") / f"{plan.name}-{_dt.datetime.now(_dt.UTC):%Y%m%d-%H%M%S}"
    transport = make(plan.transport)
    client_overrides = _props(args.props)
    scrub = Scrubber.of(plan.raw, client_overrides)  # errors printed below may quote a library's message
    opts = RunOptions(
        plan=plan,
        run_dir=Path(run_dir),
        resume=bool(args.resume),
        force=args.force,
        argv=sys.argv,
        client_overrides=client_overrides,
        gate_sample_s=args.gate_sample_s,
        print_tables=sys.stdout,
        overrides=overrides,
    )
    try:
        outcome = execute(opts, transport)
    except GateRefused as e:
        print(f"kbench: {scrub(str(e))}", file=sys.stderr)
        return 3
    except TransportError as e:
        print(f"kbench: error: {scrub(str(e))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"kbench: interrupted; continue with: kbench run --resume {run_dir}", file=sys.stderr)
        return 130
    print(f"\nrun directory: {outcome.run_dir} ({outcome.rows_written} rows written this time)")
    return 0
