"""``kbench advise``: which compression.type, level, batch.size and linger.ms for *your* topic,
and what each costs.

The records (a built-in corpus, a file, or a sample consumed from a topic) go through the
batching model at the given rate and partition count for every codec × level × batch.size ×
linger.ms; each candidate is priced with CPU measured here (experiment M, cached), bytes on the
network and bytes stored (docs/advise.md).  Prints the prices used, the Pareto front over
(cost, added p99 latency), one recommendation with its reason, and the usual rules of thumb
checked with these numbers.  -o DIR writes advise.csv (every candidate, the choice marked) and
advise.png.  Results go to stdout (--json: one JSON document), progress and notes to stderr.

The recommendation is the knee of the front: among the candidates costing at most
--cost-tolerance percent more than the cheapest, the one adding the least p99 latency; the
line after it says what the cheapest (the front's extreme) would save against it.
--verify runs the recommendation, the runner-up and none on a real cluster (local, or
--bootstrap) and prints predicted vs measured.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

from kbench.commands.args import SIZE_HELP, add_corpus, add_json, add_list, add_output, sizes
from kbench.install import pip_install
from kbench.kafka import clients
from kbench.kafka.address import check_bootstrap
from kbench.kafka.drivers import client_level_range
from kbench.model import advise as adv
from kbench.model import advise_matrix, limits
from kbench.model.paths import check_output_file

NAME = "advise"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        NAME,
        help="recommend compression.type, level, batch.size and linger.ms for a topic, with its cost",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_corpus(p, sized=False)  # advise sizes a built-in corpus to the workload (model.advise.corpus_for)
    p.add_argument("--rate", type=float, required=True, help="records per second produced to the topic")
    p.add_argument("--partitions", type=int, required=True, help="partitions of the topic")
    p.add_argument("--rf", type=int, default=3, help="replication factor (default 3)")
    p.add_argument("--retention", default="168h", help="retention, e.g. 168h or 7d (default 168h)")
    p.add_argument("--client", choices=tuple(adv.CLIENT_SPECS), default="librdkafka", help="producer client")
    p.add_argument(
        "--p99-budget-ms",
        type=float,
        default=adv.DEFAULT_P99_BUDGET_MS,
        help=f"latency a choice may add at p99, in ms (default {adv.DEFAULT_P99_BUDGET_MS:g}: docs/advise.md says why)",
    )
    p.add_argument("--costs", type=Path, default=None, help="TOML cost file (docs/advise.md); defaults otherwise")
    add_list(p, "--batch-size", help=f"batch.size to sweep (default 16KiB,64KiB,256KiB,1MiB; {SIZE_HELP})")
    add_list(p, "--linger-ms", help="linger.ms to sweep (default 0,5,20,50)")
    add_list(p, "--codec", help="codec[:level] to sweep (default: the client's range)")
    p.add_argument(
        "--cost-tolerance",
        type=float,
        default=adv.DEFAULT_COST_TOLERANCE_PCT,
        metavar="PCT",
        help="recommend the least added p99 among candidates costing at most PCT %% more than the cheapest "
        f"(default {adv.DEFAULT_COST_TOLERANCE_PCT:g}; 0: the cheapest)",
    )
    p.add_argument("--seed", type=int, default=1, help="seed of the built-in corpus and the model (default 1)")
    add_output(p, "write advise.csv and advise.png to this directory", "--out")
    add_json(p, "the workload, prices, front, recommendation and decision matrix")
    p.add_argument("--top", type=int, default=12, help="rows of the front to print (default 12)")
    p.add_argument("--verify", action="store_true", help="run recommendation, runner-up and none on a real cluster")
    p.add_argument("--bootstrap", default=None, help="with --verify: an existing cluster instead of a local one")
    p.add_argument(
        "--verify-duration",
        type=float,
        default=6.0,
        help="seconds of each verified run; each candidate is repeated, interleaved, and CPU is the median (default 6)",
    )
    p.add_argument(
        "--verify-rate",
        type=float,
        default=None,
        help="records/s of the verified runs (default: --rate); the prediction is re-made at this rate",
    )
    p.set_defaults(func=main)


def parse_retention(text: str) -> float:
    """Hours from '168h', '7d', '30m' or a bare number of hours."""
    t = text.strip().lower()
    mult = {"d": 24.0, "h": 1.0, "m": 1 / 60}
    try:
        hours = float(t[:-1]) * mult[t[-1]] if t and t[-1] in mult else float(t)
    except ValueError:
        raise adv.CostError(f"bad --retention '{text}'; write e.g. 168h or 7d") from None
    return hours


def _money(x: float) -> str:
    return f"${x:,.2f}"


def _table(cands: list[adv.Candidate], advice: adv.Advice) -> list[str]:
    head = (
        f"  {'':1}{'codec':<8} {'batch.size':>10} {'linger':>6} {'ratio':>6} {'rec/b':>6} {'+p99 ms':>8} "
        f"{'cores p/b/c':>17} {'net TB/mo':>9} {'stored TB':>9} {'CPU $':>10} {'net $':>10} {'disk $':>10} {'total $/mo':>11}"
    )
    out = [head]
    for c in cands:
        marks = {"recommended": "*", "runner-up": "^", "cheapest": "$"}
        mark = marks.get(advice.choice_of(c)) or ("!" if not c.within_budget else " ")
        cores = f"{c.producer_cores:.2f}/{c.broker_cores:.2f}/{c.consumer_cores:.2f}"
        out.append(
            f"  {mark}{c.spec:<8} {adv.size_text(c.batch_size):>10} {c.linger_ms:>6g} {c.ratio:>6.2f} "
            f"{c.records_per_batch_p50:>6.0f} {c.added_p99_ms:>8.2f} {cores:>17} {c.network_gb_month / 1e3:>9.1f} "
            f"{c.stored_gb / 1e3:>9.2f} {c.cpu_usd_month:>10,.0f} {c.network_usd_month:>10,.0f} "
            f"{c.storage_usd_month:>10,.0f} {c.total_usd_month:>11,.0f}"
        )
    return out


def _lingers(items: list[str] | None) -> list[float]:
    if items is None:
        return list(adv.DEFAULT_LINGERS_MS)
    out = []
    for t in items:
        try:
            out.append(float(limits.check("--linger-ms", float(t), "linger_ms")))
        except limits.LimitError:
            raise
        except ValueError:
            raise adv.CostError(
                f"--linger-ms: '{t}' is not a number of milliseconds; write e.g. --linger-ms 0,5,20"
            ) from None
    return out


def _doc(advice: adv.Advice, top: int) -> dict[str, Any]:
    """--json: what the tables print, as one document."""

    def cand(c: adv.Candidate | None) -> dict[str, Any] | None:
        return None if c is None else {**c.row(), "label": c.label, "choice": advice.choice_of(c)}

    w = advice.workload
    return {
        "workload": dataclasses.asdict(w),
        "corpus": {"name": advice.corpus.name, "records": len(advice.corpus.records), "sha256": advice.corpus.sha256},
        "prices": {"source": advice.prices.source, "lines": advice.prices.lines()},
        "cost_tolerance_pct": advice.tolerance_pct,
        "front": [cand(c) for c in advice.front[:top]],
        "recommendation": cand(advice.best),
        "runner_up": cand(advice.runner_up),
        "cheapest": cand(advice.cheapest),
        "reason": advice.reason,
        "extreme_saving": adv.extreme_saving(advice),
        "decision_matrix": [dataclasses.asdict(r) for r in advise_matrix.decision_matrix(advice)],
        "candidates": len(advice.candidates),
    }


def main(args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    work = adv.Workload(
        rate=args.rate,
        partitions=args.partitions,
        replication_factor=args.rf,
        retention_hours=parse_retention(args.retention),
        client=args.client,
        p99_budget_ms=args.p99_budget_ms,
    )
    work.validate()
    limits.check("--top", args.top, "rows")
    limits.check("--seed", args.seed, "seed")
    if args.bootstrap is not None:
        check_bootstrap("--bootstrap", args.bootstrap)
    if not (0 <= args.cost_tolerance <= 100):
        raise adv.CostError(f"--cost-tolerance: {args.cost_tolerance:g} is out of range; give 0 to 100 (percent)")
    prices = adv.load_prices(args.costs)
    from kbench.model.codecs import parse_spec

    specs = [parse_spec(c) for c in args.codec] if args.codec else adv.client_specs(args.client)
    for spec in specs:  # a level the client refuses is never recommended
        why = clients.level_problem(args.client, spec.codec, spec.level)
        if why is not None:
            lo, hi = client_level_range(spec.codec)
            raise adv.CostError(
                f"--codec {spec}: {why}; use {spec.codec}:{max(lo, 1)}..{spec.codec}:{hi}, or --client java for higher levels"
            )
    batch_sizes = sizes("--batch-size", args.batch_size, adv.DEFAULT_BATCH_SIZES)
    lingers = _lingers(args.linger_ms)
    if any(x < 0 for x in lingers) or any(s <= 0 for s in batch_sizes) or not lingers:
        raise adv.CostError("--linger-ms must be >= 0 and --batch-size > 0")
    out_dir = args.output
    if out_dir is not None and out_dir.exists() and not out_dir.is_dir():
        raise adv.CostError(f"-o {out_dir} exists and is not a directory; give a directory")
    if out_dir is not None and out_dir.is_dir():
        for name in ("advise.csv", "advise.png"):
            check_output_file("-o", out_dir / name)
    status = sys.stderr  # progress and notes; the answer goes to stdout
    corpus, note = adv.corpus_for(args.corpus, work, lingers, fmt=args.corpus_format, seed=args.seed)
    lines: list[str] = []  # the answer, printed as text unless --json
    near = " (near random: a control, not real-shaped data)" if corpus.near_random else ""
    lines.append(
        f"corpus {corpus.name}: {len(corpus.records)} records, {corpus.size / len(corpus.records):.0f} B/record, "
        f"entropy {corpus.entropy:.3f} bits/byte{near}, sha256 {corpus.sha256[:16]}"
    )
    if note:
        print(f"note: {note}", file=status)
    lines.append(
        f"workload: {work.rate:g} records/s ({work.rate * corpus.size / len(corpus.records) / 1e6:.2f} MB/s payload), "
        f"{work.partitions} partitions, RF {work.replication_factor}, retention {work.retention_hours:g} h, "
        f"client {work.client}, p99 budget {'none' if work.p99_budget_ms is None else f'{work.p99_budget_ms:g} ms'}"
    )
    lines.append(f"prices ({prices.source}):")
    lines.extend(prices.lines())
    n = len(specs) * len(batch_sizes) * len(lingers)
    print(
        f"sweeping {len(specs)} codec specs x {len(batch_sizes)} batch.size x {len(lingers)} linger.ms = {n} candidates ...",
        file=status,
        flush=True,
    )
    advice = adv.advise(
        corpus, work, prices, specs=specs, batch_sizes=batch_sizes, lingers=lingers, tolerance_pct=args.cost_tolerance
    )
    print(
        f"{len(advice.candidates)} distinct candidates priced in {time.monotonic() - t0:.1f} s "
        f"(M cells measured now: {advice.m_measured}, the rest from the cache; CPU from M on this machine)",
        file=status,
    )
    for n_ in advice.notes:
        print(f"note: {n_}", file=status)
    lines.append("")
    lines.append(
        "Pareto front (total cost vs added p99 latency), cheapest first; * = recommendation, "
        "^ = runner-up, $ = cheapest, ! = over the budget:"
    )
    lines.extend(_table(advice.front[: args.top], advice))
    shown = advice.front[: args.top]
    lines.extend(
        row
        for c in (advice.best, advice.runner_up)
        if c is not None and c not in shown
        for row in _table([c], advice)[1:]
    )
    lines.append("")
    lines.append(f"recommendation: {advice.best.label}")
    lines.append(f"  why: {advice.reason}")
    lines.append(f"  extreme: {adv.extreme_saving(advice)}")
    if advice.runner_up is not None:
        lines.append(
            f"  runner-up: {advice.runner_up.label} ({_money(advice.runner_up.total_usd_month)}/month, "
            f"+p99 {advice.runner_up.added_p99_ms:.2f} ms; the front's row "
            f"{'above' if advice.runner_up.total_usd_month <= advice.best.total_usd_month else 'below'} the recommendation)"
        )
    lines.append("")
    lines.append("the usual rules of thumb, checked with these numbers:")
    lines.append(f"  {'scenario':<58} {'the rule':<9} {'kbench':<28} {'agrees':<6} evidence")
    for r in advise_matrix.decision_matrix(advice):
        lines.append(f"  {r.scenario:<58} {r.seed_choice:<9} {r.ours:<28} {r.agrees:<6} {r.evidence}")
    if args.json:
        print(json.dumps(_doc(advice, args.top), indent=1))
    else:
        print("\n".join(lines), flush=True)
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        csv_path = adv.write_csv(advice.candidates, out_dir / "advise.csv", advice)
        print(f"wrote {csv_path}", file=status)
        try:
            from kbench.reporting.advise_plot import write_png
        except ImportError:  # pragma: no cover - matplotlib is an optional extra
            print(f"no plot: install matplotlib ({pip_install('report')})", file=status)
        else:
            print(f"wrote {write_png(advice, out_dir / 'advise.png')}", file=status)
    print(f"done in {time.monotonic() - t0:.1f} s", file=status)
    if args.verify:
        from kbench.engine.advise_verify import verify

        return verify(
            advice, bootstrap=args.bootstrap, duration_s=args.verify_duration, out=out_dir, rate=args.verify_rate
        )
    return 0
