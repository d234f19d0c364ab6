"""The report's sections that are not an experiment's: the claims, the run notes under each
experiment, the threats to validity, the excluded data points and the environment."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kbench.engine.status import EXPLAIN, RETRY_STATUSES, Status
from kbench.experiments import registry
from kbench.kafka.procstat import STEAL_LIMIT_PCT
from kbench.reporting import document as doc
from kbench.reporting.context import ReportContext

#: The statuses a repetition is run again after, as the report names them ("an INVALID, ... attempt").
RETRIED = (
    "an " + ", ".join(sorted(s.value for s in RETRY_STATUSES)[:-1]) + " or " + max(s.value for s in RETRY_STATUSES)
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "NTH",
    "claims_section",
    "environment_section",
    "excluded_section",
    "manifest_section",
    "run_notes",
    "threats_section",
]


def claims_section(ctx: ReportContext, experiments: Sequence[str]) -> None:
    """The seed articles' claims these experiments bear on (kbench/data/claims.toml)."""
    from kbench.reporting import claims as claims_mod

    found = claims_mod.bearing_on(experiments)
    if not found:
        return
    ctx.add(
        doc.Heading(2, "Claims these experiments bear on", "claims"),
        doc.Para(
            "Claims of the seed articles that the tables above can confirm or refute; the verdicts measured on the "
            "development machine, and the command testing each, are in docs/claims.md under the same id.",
            "note",
        ),
        doc.Table(
            ["claim (docs/claims.md id)", "in short", "experiments here"],
            [[c.id, c.topic, ", ".join(e for e in c.experiments if e in experiments)] for c in found],
        ),
    )


#: How an attempt number reads in a sentence.
NTH = {2: "second", 3: "third", 4: "fourth", 5: "fifth"}


def manifest_section(man: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """The mapping under ``key`` of a manifest, empty when it is absent or not a mapping."""
    value = man.get(key)
    return value if isinstance(value, Mapping) else {}


def run_notes(ctx: ReportContext, exp: str, df: pd.DataFrame) -> None:
    """Next to an experiment's numbers: a steal limit above the method's, a common rate that
    fell back, and the repetitions that were run again (column ``attempt``)."""
    import pandas as pd

    L, notes = ctx.ledger, []
    for r in ctx.runs:
        rules_ = manifest_section(r.manifest, "rules")
        lim = rules_.get("steal_limit_pct")
        if isinstance(lim, (int, float)) and not isinstance(lim, bool) and lim > STEAL_LIMIT_PCT:
            fig = L.manifest(lim, r.index, "rules/steal_limit_pct", "int" if float(lim).is_integer() else "f2")
            notes.append(
                f"Run {r.path.name} accepted CPU steal up to {fig.text}% per repetition, above the method's "
                "default limit; its numbers carry that much more noise."
            )
        hs = manifest_section(r.manifest, "host_speed")
        if (
            hs.get("probed")
            and isinstance(hs.get("spread_pct"), (int, float))
            and isinstance(hs.get("limit_pct"), (int, float))
        ):
            spread = L.manifest(hs["spread_pct"], r.index, "host_speed/spread_pct", "pct1")
            limit = L.manifest(
                hs["limit_pct"], r.index, "host_speed/limit_pct", "int" if float(hs["limit_pct"]).is_integer() else "f2"
            )
            notes.append(
                f"Run {r.path.name} timed a fixed workload (loopback TCP, lz4) before and after every repetition: "
                f"its calibration's own spread was {spread.text}, and a repetition whose two probes' mean was more than "
                f"{limit.text}% off the calibration was INVALID (the machine changed under it)."
            )
        rd = manifest_section(r.manifest, "rate_derivation")
        if rd.get("fallback") and registry.get(exp).at_common_rate:
            notes.append(f'Run {r.path.name}: rate = "auto" fell back: {rd["fallback"]}.')
    if "attempt" in df.columns:
        att = pd.to_numeric(df["attempt"], errors="coerce").fillna(1)
        retried = df[att > 1]
        if not retried.empty:
            parts = []
            for a, g in retried.groupby(att[att > 1].astype(int), sort=True):
                sid = L.row_set(exp, g["_gid"].to_numpy(), {"attempt": str(a)})
                nth = NTH.get(a, "later")
                parts.append(f"{L.agg('count', [0.0] * len(g), sid, 'attempt', 'int').text} from a {nth} attempt")
            notes.append(
                f"Rows from repetitions run again after {RETRIED} attempt: {', '.join(parts)} "
                "(column attempt; the excluded attempts are listed below)."
            )
    if notes:
        ctx.add(doc.Items(notes))


def excluded_section(ctx: ReportContext) -> None:
    rows = []
    for exp, df in ctx.frames.items():
        bad = df[df["status"] != "OK"]
        if bad.empty:
            continue
        for (machine, status, reason), g in bad.groupby(["machine", "status", "reason"], sort=True):
            sid = ctx.ledger.row_set(
                exp, g["_gid"].to_numpy(), {"machine": str(machine), "status": str(status), "reason": str(reason)}
            )
            n = ctx.ledger.agg("count", [0.0] * len(g), sid, "status", "int")
            cells = (
                sorted({str(c) for c in g["cell_id"]})
                if "cell_id" in g.columns
                else sorted({str(c) for c in g["codec"]})
            )
            shown = ", ".join(cells[:6]) + (", …" if len(cells) > 6 else "")
            rows.append([exp, str(machine), str(status), str(reason), n.text, shown])
    ctx.add(doc.Heading(2, "Excluded data points", "excluded"))
    if rows:
        ctx.add(
            doc.Para(
                "Rows whose status is not OK never enter a median, range or verdict. Grouped by machine, status and reason.",
                "note",
            ),
            doc.Table(["experiment", "machine", "status", "reason", "rows", "cells"], rows),
        )
    else:
        ctx.add(doc.Para("None: every row of every CSV has status OK."))


def environment_section(ctx: ReportContext) -> None:
    L = ctx.ledger
    rows = []
    for r in ctx.runs:
        m, man = r.machine, r.manifest
        v = manifest_section(man, "versions")
        t = manifest_section(man, "transport")
        mem = L.derive(
            "scale", [L.manifest(m.get("memory_bytes"), r.index, "machine/memory_bytes")], "f2", unit="B->GiB"
        )
        rows.append(
            [
                r.path.name,
                str(man.get("run_id", "NA")),
                r.label,
                str(m.get("arch", "NA")),
                str(m.get("cpu_model", "NA")),
                L.manifest(m.get("physical_cores"), r.index, "machine/physical_cores", "int").text,
                L.manifest(m.get("logical_cores"), r.index, "machine/logical_cores", "int").text,
                mem.text,
                str(m.get("kernel", "NA")),
                str(t.get("kind", "NA")),
                str(t.get("kafka_version") or "NA"),
                str(t.get("client") or "NA"),
                " ".join(f"{k} {val}" for k, val in sorted(v.items()) if val),
                str(man.get("plan_name", "NA")),
                str(man.get("state", "NA")),
                str(man.get("started_at", "NA")),
            ]
        )
    ctx.add(
        doc.Heading(2, "Environment", "environment"),
        doc.Table(
            [
                "run directory",
                "run id",
                "machine",
                "arch",
                "CPU model",
                "physical cores",
                "vCPU",
                "memory GiB",
                "kernel",
                "transport",
                "Kafka",
                "client",
                "versions",
                "plan",
                "state",
                "started",
            ],
            rows,
            wrap=True,
        ),
    )


def threats_section(ctx: ReportContext) -> None:
    L = ctx.ledger
    items: list[str] = []
    items += ctx.answer_threats
    for r in ctx.runs:
        man = r.manifest
        lim = manifest_section(man, "rules").get("steal_limit_pct")
        if isinstance(lim, (int, float)) and not isinstance(lim, bool) and lim > STEAL_LIMIT_PCT:
            fig = L.manifest(lim, r.index, "rules/steal_limit_pct", "int" if float(lim).is_integer() else "f2")
            items.append(
                f"{r.path.name}: the plan raised the CPU steal limit to {fig.text}% per repetition (the method's is "
                f"{L.manifest(manifest_section(man, 'rules').get('method_steal_limit_pct'), r.index, 'rules/method_steal_limit_pct', 'int')}%): "
                "every figure carries that much more noise."
            )
        t = manifest_section(man, "transport")
        if t.get("kind") == "dry":
            items.append(
                f"{r.path.name}: dry transport: timings and CPU are synthetic, not measurements; only stored bytes are real."
            )
        if t.get("kind") == "sim":
            items.append(
                f"{r.path.name}: simulated transport (no broker): use it for what-if sweeps, confirm on the real Kafka transport."
            )
        if man.get("forced"):
            items.append(f"{r.path.name}: collected with --force despite a blocking gate failure.")
        if man.get("state") not in (None, "complete"):
            items.append(f"{r.path.name}: run state is {man.get('state')}, not complete.")
        gate = manifest_section(man, "gate")
        for c in gate.get("checks", []) if isinstance(gate.get("checks"), list) else []:
            if isinstance(c, Mapping) and c.get("outcome") != "pass":
                items.append(
                    f"{r.path.name}: gate check “{c.get('name')}” ({c.get('severity')}) {c.get('outcome')}: {c.get('detail')}"
                )
        corp = manifest_section(man, "corpora")
        for name, c in sorted(corp.items()):
            if isinstance(c, Mapping) and c.get("near_random"):
                items.append(
                    f"{r.path.name}: corpus {name} is near random (a labelled control): its ratios say nothing about real data."
                )
    for exp, df in ctx.frames.items():
        for st, explained in EXPLAIN.items():  # the one table of status explanations
            if st == Status.OK:
                continue
            status, what = st.value, explained.excluded
            g = df[df["status"] == status]
            if len(g):
                n = L.agg(
                    "count", [0.0] * len(g), L.row_set(exp, g["_gid"].to_numpy(), {"status": status}), "status", "int"
                )
                items.append(f"{exp}: {n} rows {what}; see Excluded data points.")
    for exp, df in ctx.frames.items():
        if "attempt" in df.columns:
            import pandas as pd

            att = pd.to_numeric(df["attempt"], errors="coerce").fillna(1)
            parts = []
            for a, g in df[att > 1].groupby(att[att > 1].astype(int), sort=True):
                sid = L.row_set(exp, g["_gid"].to_numpy(), {"attempt": str(a)})
                nth = NTH.get(a, "later")
                parts.append(f"{L.agg('count', [0.0] * len(g), sid, 'attempt', 'int')} from a {nth} attempt")
            if parts:
                items.append(
                    f"{exp}: rows of repetitions run again after {RETRIED} attempt: {', '.join(parts)} "
                    "(column attempt): the first try of those cells did not hold."
                )
    for exp, df in ctx.frames.items():
        threats = registry.get(exp).threats
        if threats is not None:
            items += threats(ctx, df)
    machines = sorted({r.label for r in ctx.runs})
    if len(machines) == 1:
        items.append("One machine only: no cross-architecture conclusion can be drawn from this report.")
    ctx.add(
        doc.Heading(2, "Threats to validity shown by the data", "threats"),
        doc.Para("What in the runs weakens the answer above: read it before the figures.", "note"),
        doc.Items(items or ["None detected in the CSVs and manifests."]),
    )
