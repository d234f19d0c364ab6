"""The end of the report's first section: the choice for the measured workload.

Every cell measured at the run's fixed rate (C: stored bytes, D: CPU-s per GB of each role and
the producer's bytes on the wire, A: p99) is priced per month with ``kbench advise``'s cost model
(kbench.reporting.pricing) from these *measured* figures, and ``kbench advise``'s rule picks:
among the cells within the default p99 budget (p99 added against no compression at the same
batch.size and linger.ms), the knee of (cost, added p99) (kbench.model.advise.recommend).  Then
the runner-up, and what would change the choice: the CPU or network price at which the runner-up
costs as little.  Every number is a ledger figure (kbench.reporting.provenance)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from kbench.model import advise as adv
from kbench.reporting import document as doc
from kbench.reporting.context import BASELINE
from kbench.reporting.pricing import ASSUMED
from kbench.reporting.provenance import Fig, Ledger
from kbench.reporting.summary import Stat, stats_many

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["choice_blocks"]

#: A cell: what the choice is made of, at one rate on one machine and corpus.
KEYS = ("machine", "corpus", "client", "partitions", "rate", "codec", "batch_size", "linger_ms")


@dataclass(frozen=True)
class Priced:
    key: tuple[str, ...]
    cpu: Fig  # $/month
    net: Fig
    storage: Fig
    total: Fig
    ratio: Fig  # payload / stored
    added_p99: Fig | None  # µs against none at the same batch.size and linger.ms (None: A not measured)

    @property
    def codec(self) -> str:
        return self.key[5]

    @property
    def label(self) -> str:
        return f"{self.codec}, batch.size {self.key[6]}, linger.ms {self.key[7]}"


def _med(s: Mapping[tuple[str, ...], Stat], key: tuple[str, ...]) -> Fig | None:
    st = s.get(key)
    return None if st is None or not st.median.ok else st.median


def _price(
    ledger: Ledger, fr: Mapping[str, pd.DataFrame], key: tuple[str, ...], c: dict[str, Any], d: dict[str, Any]
) -> Priced | None:
    rate, payload, msgs, stored = (
        _med(c[m], key) for m in ("achieved_rate_msgs", "payload_bytes", "messages", "stored_bytes")
    )
    roles = sorted({k[-1] for k in d["cpu_s_per_gb"] if k[:-1] == key})
    cpu_roles = [_med(d["cpu_s_per_gb"], (*key, r)) for r in roles]
    if None in (rate, payload, msgs, stored) or not roles or None in cpu_roles:
        return None  # not every figure measured: not priced (said in the notes)
    assert rate and payload and msgs and stored
    gbps = ledger.derive(
        "scale", [ledger.derive("product", [rate, ledger.derive("ratio", [payload, msgs])])], unit="B/GB->GB/GB"
    )
    stored_pp = ledger.derive("ratio", [stored, payload])
    wire, pgb = _med(d["wire_bytes"], (*key, "producer")), _med(d["payload_gb"], (*key, "producer"))
    produced_pp = (
        ledger.derive("scale", [ledger.derive("ratio", [wire, pgb])], unit="B/GB->GB/GB") if wire and pgb else stored_pp
    )
    cores = ledger.derive("product", [ledger.derive("sum", [f for f in cpu_roles if f]), gbps])
    cpu = ledger.derive("scale", [cores], "f2", unit="cores->usd/month")
    zones = ledger.derive(
        "sum",
        [
            ledger.derive("scale", [produced_pp], unit="produced->zones"),
            ledger.derive("scale", [stored_pp], unit="stored->zones"),
        ],
    )
    net = ledger.derive("scale", [ledger.derive("product", [gbps, zones])], "f2", unit="zone GB/s->usd/month")
    storage = ledger.derive("scale", [ledger.derive("product", [gbps, stored_pp])], "f2", unit="stored GB/s->usd/month")
    total = ledger.derive("sum", [cpu, net, storage], "f2")
    ratio = ledger.derive("ratio", [payload, stored], "f2")
    return Priced(key, cpu, net, storage, total, ratio, None)


def _candidate(p: Priced, budget_us: float) -> adv.Candidate:
    """advise's candidate for its rule (recommend): the measured prices and added p99; what the
    rule does not read is 0."""
    zero: dict[str, Any] = {f.name: 0.0 for f in fields(adv.Candidate) if f.type in ("float", float)}
    added = float(p.added_p99.value) if p.added_p99 is not None and p.added_p99.value is not None else math.nan
    zero.update(
        codec=p.codec,
        level=None,
        batch_size=0,
        ratio=float(p.ratio.value or 0.0),
        added_p99_ms=added / 1000 if added == added else 0.0,
        cpu_usd_month=float(p.cpu.value or 0.0),
        network_usd_month=float(p.net.value or 0.0),
        storage_usd_month=float(p.storage.value or 0.0),
        total_usd_month=float(p.total.value or 0.0),
        within_budget=added == added and added <= budget_us,
        steady=True,
    )
    return adv.Candidate(**zero)


def _what_changes(ledger: Ledger, best: Priced, runner: Priced) -> str:
    """The price change at which the runner-up costs as little as the choice (a cut of 100 % or
    more is no price: that part alone cannot make it cheaper)."""
    gap = ledger.derive("diff", [best.total, runner.total], "f2")  # runner - best, $/month
    out: list[str] = []
    if (best.cpu.value or 0) > (runner.cpu.value or 0):
        pct = ledger.derive("share_pct", [gap, ledger.derive("diff", [runner.cpu, best.cpu])], "pct1")
        out.append(f"CPU cost {pct} more than priced here")
    for part, what in (("net", "traffic between zones"), ("storage", "storage")):
        mine, theirs = getattr(best, part), getattr(runner, part)
        if (mine.value or 0) < (theirs.value or 0):
            pct = ledger.derive("share_pct", [gap, ledger.derive("diff", [mine, theirs])], "pct1")
            if (pct.value or math.inf) < 100:
                out.append(f"{what} cost {pct} less")
    if not out:
        return f"no single price change makes {runner.label} cheaper (it costs ${gap} more a month)"
    return f"the choice becomes {runner.label} if " + ", or ".join(out)


def choice_blocks(ledger: Ledger, fr: Mapping[str, pd.DataFrame]) -> list[doc.Block]:
    """The priced choice per machine and corpus, after the answer's headline figures."""
    head = doc.Heading(3, "The choice for this workload", "choice")
    if not all(e in fr for e in ("A", "C", "D")):
        return [head, doc.Para("No choice is priced: it needs experiments A, C and D measured at one fixed rate.")]
    c = stats_many(
        ledger,
        fr["C"],
        "C",
        {m: "auto" for m in ("achieved_rate_msgs", "payload_bytes", "messages", "stored_bytes")},
        KEYS,
    )
    d = stats_many(
        ledger, fr["D"], "D", {"cpu_s_per_gb": "auto", "wire_bytes": "auto", "payload_gb": "auto"}, (*KEYS, "role")
    )
    a = stats_many(ledger, fr["A"], "A", {"corrected_p99_us": "ms"}, KEYS)["corrected_p99_us"]
    budget = ledger.constant("p99 budget ms", "int")
    budget_us = float(budget.value or 0.0) * 1000
    groups: dict[tuple[str, ...], list[Priced]] = {}
    for key in sorted(c["stored_bytes"]):
        p = _price(ledger, fr, key, c, d)
        if p is None:
            continue
        base = _med(a, (*key[:5], BASELINE, *key[6:]))
        mine = _med(a, key)
        added = ledger.derive("diff", [base, mine], "ms+") if base and mine else None
        groups.setdefault(key[:5], []).append(Priced(p.key, p.cpu, p.net, p.storage, p.total, p.ratio, added))
    items: list[str] = []
    for g, priced in groups.items():
        if len(priced) < 2:
            continue
        cands = [_candidate(p, budget_us) for p in priced]
        try:
            ch = adv.recommend(cands, adv.DEFAULT_COST_TOLERANCE_PCT)
        except adv.CostError:
            items.append(f"{_where(g)}: no measured cell adds less than {budget} ms of p99; none is recommended.")
            continue
        best = priced[cands.index(ch.best)]
        runner = priced[cands.index(ch.runner_up)] if ch.runner_up is not None else None
        over = [p for p, x in zip(priced, cands) if not x.within_budget and p.added_p99 is not None]
        cheaper = min(over, key=lambda p: p.total.value or math.inf, default=None)
        text = (
            f"{_where(g)}: choose {best.label} — ${best.total}/month (CPU ${best.cpu}, network ${best.net}, storage "
            f"${best.storage}), ratio {best.ratio}, p99 added {best.added_p99 or 'not measured'} ms"
        )
        if runner is not None:
            text += (
                f"; runner-up {runner.label} at ${runner.total}/month, p99 added "
                f"{runner.added_p99 or 'not measured'} ms; {_what_changes(ledger, best, runner)}"
            )
        none = next((p for p in priced if p.codec == BASELINE), None)
        if none is not None and best is not none and none is not runner:
            text += f"; no compression would cost ${none.total}/month"
        if cheaper is not None and (cheaper.total.value or 0) < (best.total.value or 0):
            text += (
                f"; {cheaper.label} would cost ${cheaper.total}/month "
                f"(${ledger.derive('diff', [cheaper.total, best.total], 'f2')} less) but adds "
                f"{cheaper.added_p99} ms of p99, over the budget: a budget of that much would choose it"
            )
        items.append(text + ".")
    if not items:
        return [
            head,
            doc.Para("No choice is priced: no machine and corpus has two cells measured by A, C and D alike."),
        ]
    return [
        head,
        doc.Para(
            f"Priced with kbench advise's cost model from the figures measured here (CPU-s per GB of each role, "
            f"stored and produced bytes per GB, p99 at the fixed rate), with its rule: the least added p99 among "
            f"the cells within {budget} ms of p99 added (advise's default budget) costing at most "
            f"{ledger.constant('tolerance pct', 'int')}% more than the cheapest. Assumed: {_assumed(ledger)}."
        ),
        doc.Items(items),
    ]


def _assumed(ledger: Ledger) -> str:
    names = re.findall(r"\{([^}]+)\}", ASSUMED)
    money = {"core-hour usd", "zone GB usd", "GB-month usd"}
    return ASSUMED.format(**{n: ledger.constant(n, "auto" if n in money else "int").text for n in names})


def _where(g: Sequence[str]) -> str:
    machine, corpus, client, partitions, rate = g
    return f"{machine}, {corpus}, {client}, {partitions} partition(s), rate {rate}"
