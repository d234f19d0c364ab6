"""``kbench run PLAN``: run a plan's experiments and print the headline tables.

With no other argument, a built-in plan starts a local one-broker cluster, runs, stops it
and prints tables A–F for the experiments it holds.  ``--bootstrap`` points it at an
existing cluster; ``--resume RUN_DIR`` completes an interrupted run without duplicating rows.

Exit status: 0 done; 4 the run completed but a cell is short of OK repetitions because a rule
excluded some (INVALID, REJECTED, SATURATED, FAILED_*; the tables list each with cause and fix;
a figure the transport does not measure, NA, does not count); 3 the environment gate refused;
2 bad input; 1 the transport failed; 130 interrupted (docs/cli.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from kbench.commands.args import add_client_props, add_json, add_list
from kbench.commands.live_run import LiveRun
from kbench.engine import manifest as manifest_mod
from kbench.engine import plan as plan_mod
from kbench.engine import runlock, signals, topology
from kbench.engine.redact import Scrubber
from kbench.engine.runner import GateRefused, RunOptions, execute, short_cells, tables
from kbench.engine.transports import make
from kbench.engine.transports.base import TransportError
from kbench.kafka import clients, metrics, procstat
from kbench.kafka.address import check_bootstrap
from kbench.model import limits

#: ``kbench run``'s exit status when the run completed but a cell has fewer OK repetitions than its verdict needs.
EXIT_SHORT = 4


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a plan (the main job): kbench run quick", description=__doc__)
    p.add_argument("plan", nargs="?", help="a built-in plan (kbench plans) or a .toml file; optional with --resume")
    p.add_argument("-o", "--output", type=Path, help="run directory (default runs/<plan>-<UTC time>)")
    p.add_argument("--resume", type=Path, metavar="RUN_DIR", help="complete an interrupted run directory")
    p.add_argument("--bootstrap", help="host:port[,...] of an existing cluster instead of a local one")
    add_list(p, "--broker-pid", metavar="PID", help="local pids of the brokers of --bootstrap (for broker CPU)")
    p.add_argument(
        "--workers",
        metavar="SCHEDULER_ADDRESS",
        help="Dask scheduler (tcp://host:8786): run each cell's drivers on its workers (docs/distributed.md)",
    )
    add_list(
        p,
        "--broker-metrics",
        metavar="URL",
        help="Prometheus endpoints of the brokers of --bootstrap (JMX exporter): broker CPU, version, bytes",
    )
    p.add_argument("--broker-version", metavar="X.Y.Z", help="the brokers' Kafka version when nothing reports it")
    p.add_argument("--transport", choices=plan_mod.TRANSPORT_KINDS, help="override the plan's transport kind")
    add_client_props(p, "librdkafka client property (e.g. security)")
    p.add_argument(
        "--seed", type=int, help="seed of the cell order (default: the plan's, else random; always recorded)"
    )
    p.add_argument(
        "--force", action="store_true", help="collect even if a blocking gate check fails (recorded in the manifest)"
    )
    p.add_argument(
        "--label",
        metavar="NAME",
        help="the machine's name in the manifest (machine.label): reports and notebooks group runs by it",
    )
    add_json(p, "the outcome (run directory, state, rows, cells short of OK repetitions) instead of the tables")
    p.add_argument(
        "--metrics-port",
        type=int,
        metavar="N",
        help="serve the live figures in Prometheus text format on port N while the run runs (docs/cli.md)",
    )
    p.add_argument("--gate-sample-s", type=float, default=1.0, help=argparse.SUPPRESS)
    p.set_defaults(func=run)


def _pid(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise plan_mod.PlanError(
            f"--broker-pid: '{text}' is not a process id; give e.g. --broker-pid 4242,4243"
        ) from None


def _props(items: list[tuple[str, str]]) -> dict[str, str]:
    out = dict(items)
    plan_mod.check_client("-X", out)  # the same rule as a plan's [client]
    return out


def _check_new_run_dir(run_dir: Path) -> None:
    """A new run directory must be creatable and empty: checked before anything is written."""
    if run_dir.exists() or run_dir.is_symlink():
        if not run_dir.is_dir():
            raise plan_mod.PlanError(f"-o {run_dir}: exists and is not a directory; choose another -o")
        if any(run_dir.iterdir()):
            hint = f" or continue it with --resume {run_dir}" if (run_dir / manifest_mod.MANIFEST).exists() else ""
            raise plan_mod.PlanError(f"-o {run_dir}: directory is not empty; choose another -o{hint}")
        if not os.access(run_dir, os.W_OK):
            raise plan_mod.PlanError(f"-o {run_dir}: directory is not writable; choose another -o")
        return
    parent = run_dir.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise plan_mod.PlanError(f"-o {run_dir}: {parent} is a file, not a directory; choose another -o")
    try:  # a probe: catches read-only mounts, /proc, /sys
        os.rmdir(tempfile.mkdtemp(prefix=".kbench-probe", dir=parent))
    except OSError as e:
        raise plan_mod.PlanError(
            f"-o {run_dir}: cannot create it in {parent} ({e.strerror}); choose another -o"
        ) from None


def _remove_if_empty(run_dir: Path) -> None:
    try:
        run_dir.rmdir()
    except OSError:
        pass  # not empty: what the run wrote stays for --resume


def _check_resume_dir(run_dir: Path) -> None:
    if not run_dir.is_dir():
        what = "does not exist" if not run_dir.exists() else "is not a directory"
        raise plan_mod.PlanError(f"--resume {run_dir}: {what}; give a run directory made by kbench run")
    if not (run_dir / manifest_mod.MANIFEST).is_file():
        raise plan_mod.PlanError(
            f"--resume {run_dir}: no {manifest_mod.MANIFEST} in it; give a run directory made by kbench run"
        )
    link = next((p for p in [*run_dir.iterdir(), *run_dir.glob("histograms/*")] if p.is_symlink()), None)
    if link is not None:  # a run appends to its own files only, never through a link to another place
        raise plan_mod.PlanError(
            f"--resume {run_dir}: {link.name} is a symbolic link; a run directory's files are its own, "
            "replace the link by the file it points to"
        )


def run(args: argparse.Namespace) -> int:
    if args.resume:
        _check_resume_dir(args.resume)
    if args.seed is not None:
        limits.check("--seed", args.seed, "seed")
    limits.check("--gate-sample-s", args.gate_sample_s, "gate_sample_s")
    args.broker_pid = [_pid(t) for t in args.broker_pid or []]
    for pid in args.broker_pid:
        limits.check("--broker-pid", pid, "pid")
    client_overrides = _props(args.props)
    prior = manifest_mod.read(args.resume) if args.resume else {}
    spec = args.plan or prior.get("plan_source", "")
    if not spec:
        raise plan_mod.PlanError(
            "plan: missing; give a plan name or file (kbench plans lists them), or --resume RUN_DIR"
        )
    if spec.startswith("builtin:"):
        spec = spec.removeprefix("builtin:")
    plan = plan_mod.load(spec)
    try:  # -X names checked against the plan's clients before anything is written
        clients.check_properties("-X", client_overrides, {c for s in plan.sweeps for c in s.client})
    except ValueError as e:
        raise plan_mod.PlanError(str(e)) from None
    overrides = dict(prior.get("overrides", {})) if args.resume else {}
    if args.transport:
        overrides["kind"] = args.transport
    if args.bootstrap is not None:
        overrides.update(kind="bootstrap", bootstrap=check_bootstrap("--bootstrap", args.bootstrap))
    if args.workers:
        overrides["workers"] = args.workers
    if args.broker_pid:
        overrides["broker_pids"] = list(args.broker_pid)
    if args.broker_version:
        overrides["broker_version"] = args.broker_version
    secret_free = dict(overrides)  # what the manifest keeps (no credentials of metrics URLs)
    if args.broker_metrics:
        try:
            urls = metrics.parse_urls(",".join(args.broker_metrics))
        except metrics.MetricsError as e:
            raise plan_mod.PlanError(f"--broker-metrics: {e}") from None
        overrides["broker_metrics"] = list(urls)
        secret_free["broker_metrics"] = [metrics.display_url(u) for u in urls]
    if overrides:
        # values of any TransportDef field (from the command line or the resumed run's manifest)
        fields: dict[str, Any] = {
            k: (tuple(v) if k in ("broker_pids", "broker_metrics") else v) for k, v in overrides.items()
        }
        t = dataclasses.replace(plan.transport, **fields)
        if t.kind == "bootstrap" and not t.bootstrap:
            raise plan_mod.PlanError("--transport bootstrap: give --bootstrap host:port")
        plan_mod.check_local_only(plan.sweeps, t.workers)
        plan = dataclasses.replace(plan, transport=t)
    if args.seed is not None:
        plan = dataclasses.replace(plan, seed=args.seed)
    fit: dict[str, Any] = {}
    if plan.premises.fit_topology and plan.transport.kind in ("local", "testbed") and "kind" not in overrides:
        t, choice = topology.choose(plan.transport, topology.cpus())  # docs/methodology.md §2
        plan, fit = dataclasses.replace(plan, transport=t), choice.as_dict()
        print(f"topology: {choice.describe()}", file=sys.stderr)
    run_dir = args.resume or args.output or Path("runs") / f"{plan.name}-{_dt.datetime.now(_dt.UTC):%Y%m%d-%H%M%S}"
    if not args.resume:
        _check_new_run_dir(Path(run_dir))
    transport = make(plan.transport, {**plan.client, **client_overrides})
    scrub = Scrubber.of(plan.raw, client_overrides)  # errors printed below may quote a library's message
    if args.metrics_port is not None:
        limits.check("--metrics-port", args.metrics_port, "port")
    with LiveRun(Path(run_dir), scrub, args.metrics_port) as live:
        return _execute(args, plan, transport, Path(run_dir), client_overrides, scrub, secret_free, live, fit)


def _execute(
    args: argparse.Namespace,
    plan: plan_mod.Plan,
    transport: Any,
    run_dir: Path,
    client_overrides: dict[str, str],
    scrub: Scrubber,
    secret_free: dict[str, Any],
    live: LiveRun,
    fit: dict[str, Any],
) -> int:
    opts = RunOptions(
        plan=plan,
        run_dir=Path(run_dir),
        resume=bool(args.resume),
        force=args.force,
        argv=["kbench", *sys.argv[1:]],  # the command as typed: no path of this machine in the manifest
        client_overrides=client_overrides,
        gate_sample_s=args.gate_sample_s,
        print_tables=None if args.json else sys.stdout,
        overrides=secret_free,
        steal_source=procstat.injected_steal(),  # tests only; recorded in the manifest and tables
        machine_label=args.label,
        topology=fit,
        live=live.board,
        progress_sink=live.progress_sink,
    )
    made: list[bool] = []
    try:
        try:
            # one writer per run directory; SIGTERM and SIGHUP stop the run as Ctrl-C does
            with runlock.holding(Path(run_dir), new=not args.resume) as created, signals.as_interrupt():
                made.append(created)
                outcome = execute(opts, transport)
        except BaseException:
            if any(made):  # a run directory this command made and left empty (refused input, full disk) goes
                _remove_if_empty(Path(run_dir))
            raise
    except GateRefused as e:
        print(f"kbench: {scrub(str(e))}", file=sys.stderr)
        return 3
    except TransportError as e:
        print(f"kbench: error: {scrub(str(e))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"kbench: interrupted; continue with: kbench run --resume {run_dir}", file=sys.stderr)
        return 130
    short = short_cells(outcome.run_dir, plan.experiments)
    code = EXIT_SHORT if short else 0
    if args.json:
        doc = {
            "run_dir": str(outcome.run_dir),
            "state": outcome.state,
            "rows_written": outcome.rows_written,
            "already_complete": outcome.already_complete,
            "short_cells": short,
            "exit_status": code,
        }
        print(json.dumps(doc, indent=1))
    elif outcome.already_complete:
        fixed = (
            f"journal rebuilt from the CSVs ({outcome.restored} repetitions)" if outcome.restored else "nothing changed"
        )
        print(tables(outcome.run_dir, plan.experiments))
        print(f"\nkbench: {outcome.run_dir} is already complete; nothing to run, {fixed}")
    else:
        print(f"\nrun directory: {outcome.run_dir} ({outcome.rows_written} rows written this time)")
    if short:
        print(
            f"kbench: {len(short)} cell(s) short of OK repetitions (exit status {EXIT_SHORT}); the tables say why and "
            f"what to change (kbench run --resume {outcome.run_dir} prints them again)",
            file=sys.stderr,
        )
    return code
