"""``kbench report``: run directories → ``report.md``, ``report.html``, ``plots/`` and
``provenance.json``, from the CSVs and manifests alone.

Sections, in order: headline figures; experiments A–F (and M when a run holds ``M.csv``),
one row per machine × codec (× corpus and the other labels that vary), median and range
over OK repetitions, verdict rows where ranges are compared; plots; excluded data points
with their reasons; the environment; the threats to validity that the data shows.
How to read it: ``docs/reports.md``.  Every number is a :class:`~kbench.reporting.provenance.Fig`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbench.engine.experiments import LABELS, M_LABELS, SATURATED_FLAG
from kbench.engine.store import atomic_write
from kbench.reporting import document as doc
from kbench.reporting.frames import Run, frames, load_runs, unique_dirs
from kbench.reporting.provenance import Fig, Ledger
from kbench.reporting.summary import Stat, empty_stat, label_text, overlap_verdict, stats, stats_many, varying

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ReportFiles", "build", "write"]

#: The codec every other codec is compared with (A–D), when the runs have it.
BASELINE = "none"
TITLES = {
    "A": "Experiment A · latency at a common fixed rate (the latency cost of a codec)",
    "B": "Experiment B · saturated throughput (the throughput cost)",
    "C": "Experiment C · compression ratio and corpus entropy",
    "D": "Experiment D · who pays the CPU (producer, consumer, each broker)",
    "E": "Experiment E · batch-size effect",
    "F": "Experiment F · broker recompression",
    "M": "Experiment M · codec micro-benchmark (in memory)",
}


@dataclass(frozen=True)
class ReportFiles:
    markdown: Path
    html: Path
    provenance: Path
    plots: tuple[Path, ...]


@dataclass
class _Ctx:
    runs: list[Run]
    frames: Mapping[str, pd.DataFrame]
    ledger: Ledger = field(default_factory=Ledger)
    blocks: list[doc.Block] = field(default_factory=list)
    headline: list[str] = field(default_factory=list)

    def add(self, *blocks: doc.Block) -> None:
        self.blocks.extend(blocks)

    def machine_run(self, label: str) -> Run:
        return next(r for r in self.runs if r.label == label)

    def mfig(self, label: str, field_: str) -> Fig:
        r = self.machine_run(label)
        return self.ledger.manifest(r.machine.get(field_), r.index, f"machine/{field_}", "int")


def _is_text(s: pd.Series) -> bool:
    import pandas as pd

    return not pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def _rows_keys(df: pd.DataFrame, keys: Sequence[str]) -> list[tuple[str, ...]]:
    """Every group of ``keys`` in ``df`` (OK or not), as label texts, sorted."""
    if df.empty:
        return []
    uniq = df[list(keys)].drop_duplicates()
    if all(_is_text(uniq[k]) for k in keys):
        out = set(uniq.itertuples(index=False, name=None))
    else:
        out = {tuple(label_text(v) for v in row) for row in uniq.itertuples(index=False, name=None)}
    order: dict[str, tuple[int, float, str]] = {}
    for k in out:
        for x in k:
            if x not in order:
                order[x] = _sort_key(x)
    return sorted(out, key=lambda k: tuple(order[x] for x in k))


def _sort_key(x: str) -> tuple[int, float, str]:
    """Numbers in numeric order, before text."""
    try:
        return (0, float(x), "")
    except ValueError:
        return (1, 0.0, x)


def _na_stat(ctx: _Ctx, metric: str) -> Stat:
    return empty_stat(ctx.ledger, metric)


def _baseline(codecs: Sequence[str]) -> str:
    return BASELINE if BASELINE in codecs else sorted(codecs)[0]


def _label_cols(df: pd.DataFrame, extra: Sequence[str] = ()) -> list[str]:
    return ["codec"] + [c for c in varying(df, [x for x in LABELS if x != "codec"]) if c not in extra] + list(extra)


def _pairs(keys: Sequence[tuple[str, ...]], codec_pos: int) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """(baseline key, other key) pairs equal on every label but the codec."""
    codecs = sorted({k[codec_pos] for k in keys})
    if len(codecs) < 2:
        return []
    base = _baseline(codecs)
    have = set(keys)
    out = []
    for k in keys:
        if k[codec_pos] == base:
            continue
        b = k[:codec_pos] + (base,) + k[codec_pos + 1 :]
        if b in have:
            out.append((b, k))
    return out


# --------------------------------------------------------------------------- A


def _section_a(ctx: _Ctx, df: pd.DataFrame) -> None:
    labels = _label_cols(df)
    keys = ["machine"] + labels
    metrics = [
        ("corrected_p50_us", "p50 µs"),
        ("corrected_p95_us", "p95 µs"),
        ("corrected_p99_us", "p99 µs"),
        ("corrected_p999_us", "p99.9 µs"),
    ]
    st = stats_many(ctx.ledger, df, "A", {m: "auto" for m, _ in metrics}, keys)
    rate = stats(ctx.ledger, df, "A", "target_rate_msgs", keys, "int", only_ok=False)  # a setting, not a measurement
    achieved = stats(ctx.ledger, df, "A", "rate_error_pct", keys, "f2")
    headers = [
        "machine",
        "arch",
        "physical cores",
        "fixed rate (msgs/s)",
        *labels,
        *(h for _, h in metrics),
        "rate error %",
        "n",
    ]
    rows: list[list[str]] = []
    emph: set[int] = set()
    all_keys = _rows_keys(df, keys)
    p99 = "corrected_p99_us"
    pairs = _pairs(all_keys, 1)
    for machine in sorted({k[0] for k in all_keys}):
        arch = ctx.machine_run(machine).machine.get("arch", "NA")
        cores = ctx.mfig(machine, "physical_cores")
        for k in (k for k in all_keys if k[0] == machine):
            s = {m: st[m].get(k) or _na_stat(ctx, m) for m, _ in metrics}
            r = rate.get(k)
            rows.append(
                [
                    machine,
                    str(arch),
                    cores.text,
                    r.median.text if r else "NA",
                    *k[1:],
                    *(s[m].median.text for m, _ in metrics),
                    (achieved[k].cell() if k in achieved else "NA"),
                    s[p99].n.text,
                ]
            )
        for b, k in (p for p in pairs if p[0][0] == machine):
            sb, sk = st[p99].get(b) or _na_stat(ctx, p99), st[p99].get(k) or _na_stat(ctx, p99)
            v = overlap_verdict(sb, sk)
            emph.add(len(rows))
            rest = " ".join(x for x in k[2:])
            rows.append(
                [
                    f"{machine}{(' ' + rest) if rest else ''} p99 verdict",
                    f"{b[1]} range {sb.range()} / {k[1]} range {sk.range()} → {v}",
                    *[""] * (len(headers) - 2),
                ]
            )
            if sb.ok and sk.ok:
                delta = ctx.ledger.derive("diff", [sb.median, sk.median])
                ctx.headline.append(
                    f"Latency increment at the fixed rate, {machine}{(' ' + rest) if rest else ''}: p99 {k[1]} − {b[1]} = "
                    f"{delta} µs (medians {sk.median} vs {sb.median} µs): {v}."
                )
    ctx.add(
        doc.Heading(2, TITLES["A"], "exp-a"),
        doc.Para(
            "Every cell runs at the same fixed rate (see the environment section for how it was derived), so a latency "
            "difference is the codec's, not queueing. Latencies are the corrected histogram (ack − intended send "
            "time: no coordinated omission); columns show medians over OK repetitions, verdict rows compare p99 ranges.",
            "note",
        ),
        doc.Table(headers, rows, emphasis_rows=frozenset(emph)),
    )
    _phases_a(ctx, df)


PHASES = (
    ("phase_queue_p50_us", "queue / linger wait µs"),
    ("phase_compress_p50_us", "compression µs"),
    ("phase_request_p50_us", "request (queue + round trip) µs"),
    ("service_p50_us", "service p50 µs (measured)"),
)


def _phases_a(ctx: _Ctx, df: pd.DataFrame) -> None:
    """Where producer latency goes: the phases' medians beside the measured service latency."""
    if "phase_queue_p50_us" not in df.columns or not df["phase_queue_p50_us"].notna().any():
        return
    keys = ["machine"] + _label_cols(df)
    st = stats_many(ctx.ledger, df, "A", {m: "auto" for m, _ in PHASES}, keys)
    rows = []
    for k in _rows_keys(df, keys):
        rows.append([*k, *((st[m].get(k) or _na_stat(ctx, m)).median.text for m, _ in PHASES)])
    ctx.add(
        doc.Heading(3, "Where producer latency goes", "exp-a-phases"),
        doc.Para(
            "Medians over OK repetitions of each phase, from librdkafka's statistics: the wait in the producer's "
            "queue until the message is written into a batch (linger.ms and batch fill), the compression of a batch "
            "of the median size timed on this machine, and the request (transmit queue plus round trip, acks "
            "included). Their sum approximates the service median (docs/methodology.md states the tolerance).",
            "note",
        ),
        doc.Table(["machine", *_label_cols(df), *(h for _, h in PHASES)], rows),
    )


def _claims(ctx: _Ctx, experiments: Sequence[str]) -> None:
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


# --------------------------------------------------------------------------- B


def _section_b(ctx: _Ctx, df: pd.DataFrame) -> None:
    labels = _label_cols(df)
    keys = ["machine"] + labels
    st = stats(ctx.ledger, df, "B", "achieved_rate_msgs", keys, "int")
    mb = stats(ctx.ledger, df, "B", "payload_mb_per_s", keys)
    all_keys = _rows_keys(df, keys)
    base = {k: b for b, k in _pairs(all_keys, 1)}
    headers = [
        "machine",
        "arch",
        "physical cores",
        "vCPU",
        *labels,
        "msgs/s median [range]",
        "payload MB/s",
        f"vs {_baseline(sorted({k[1] for k in all_keys}) or [BASELINE])}",
        "msgs/s per vCPU",
        "msgs/s per physical core",
        "n",
    ]
    rows: list[list[str]] = []
    for k in all_keys:
        machine = k[0]
        s = st.get(k) or _na_stat(ctx, "achieved_rate_msgs")
        cores, vcpu = ctx.mfig(machine, "physical_cores"), ctx.mfig(machine, "logical_cores")
        vs = "baseline" if k not in base else "NA"
        if k in base and base[k] in st and s.ok:
            vs = ctx.ledger.derive("share_pct", [s.median, st[base[k]].median], "pct1").text
        per_v = ctx.ledger.derive("ratio", [s.median, vcpu], "int")
        per_c = ctx.ledger.derive("ratio", [s.median, cores], "int")
        rows.append(
            [
                machine,
                str(ctx.machine_run(machine).machine.get("arch", "NA")),
                cores.text,
                vcpu.text,
                *k[1:],
                s.cell(),
                mb[k].median.text if k in mb else "NA",
                vs,
                per_v.text,
                per_c.text,
                s.n.text,
            ]
        )
    flagged = df[df.get("latency_flag", "") == SATURATED_FLAG] if "latency_flag" in df.columns else df.iloc[0:0]
    nflag = ctx.ledger.agg(
        "count",
        [0.0] * len(flagged),
        ctx.ledger.row_set("B", flagged["_gid"].to_numpy(), {"latency_flag": SATURATED_FLAG}),
        "latency_flag",
        "int",
    )
    ctx.add(
        doc.Heading(2, TITLES["B"], "exp-b"),
        doc.Para(
            f"Latency columns are deliberately left out: at saturation each codec runs at a different rate, so its "
            f"latency is queueing, not service. {nflag} rows carry {SATURATED_FLAG} and no latency conclusion uses them.",
            "note",
        ),
        doc.Table(headers, rows),
    )
    # Spread across machines per codec (and labels): (max − min) / min of the machines' medians.
    machines = sorted({k[0] for k in all_keys})
    for lab in sorted({k[1:] for k in all_keys}):
        meds = [st[(m, *lab)].median for m in machines if (m, *lab) in st and st[(m, *lab)].ok]
        what = " ".join(lab)
        if len(meds) >= 2:
            spread = ctx.ledger.derive("spread_pct", meds, "pct1")
            ctx.headline.append(
                f"Saturated throughput spread across machines, {what}: {spread} ((max − min) / min of the machines' medians)."
            )
        elif len(meds) == 1:
            ctx.headline.append(
                f"Saturated throughput, {what}: {meds[0]} msgs/s on one machine (no spread across machines to show)."
            )


# --------------------------------------------------------------------------- C


def _section_c(ctx: _Ctx, df: pd.DataFrame) -> None:
    labels = ["corpus", "codec"] + [c for c in varying(df, [x for x in LABELS if x not in ("codec", "corpus")])]
    keys = ["machine"] + labels
    many = stats_many(
        ctx.ledger,
        df,
        "C",
        {"ratio": "x", "corpus_entropy_bits": "f3", "payload_bytes": "int", "stored_bytes": "int"},
        keys,
    )
    ratio, ent, pay, sto = many["ratio"], many["corpus_entropy_bits"], many["payload_bytes"], many["stored_bytes"]
    headers = ["machine", *labels, "entropy (bits/B)", "payload bytes", "stored bytes", "ratio median [range]", "n"]
    rows = []
    for k in _rows_keys(df, keys):
        r = ratio.get(k) or _na_stat(ctx, "ratio")
        rows.append(
            [
                *k,
                ent[k].median.text if k in ent else "NA",
                pay[k].median.text if k in pay else "NA",
                sto[k].median.text if k in sto else "NA",
                r.cell(),
                r.n.text,
            ]
        )
    ctx.add(
        doc.Heading(2, TITLES["C"], "exp-c"),
        doc.Para(
            "Ratio = uncompressed payload / stored bytes (the broker's log segments, or DescribeLogDirs on a remote cluster). The corpus' Shannon entropy "
            "stands beside every ratio: a near-random corpus cannot compress, whatever the codec.",
            "note",
        ),
        doc.Table(headers, rows),
        *_sources(df, "stored_source", "stored bytes and codecs"),
    )
    # Headline: ratio per corpus and codec over all machines, with entropy.
    hr = stats(ctx.ledger, df, "C", "ratio", ["corpus", "codec"], "x")
    he = stats(ctx.ledger, df, "C", "corpus_entropy_bits", ["corpus"], "f3")
    for (corpus, codec), s in sorted(hr.items()):
        if codec == BASELINE or not s.ok:
            continue
        e = he.get((corpus,))
        ctx.headline.append(
            f"Ratio, {codec} on corpus {corpus} (entropy {e.median if e else 'NA'} bits/byte): {s.median} (range {s.range()})."
        )


def _sources(df: pd.DataFrame, col: str, what: str) -> list[doc.Para]:
    """A note naming where a measurement came from (CSV column ``col``), endpoints and
    per-partition details left out (the CSV keeps them)."""
    if col not in df.columns:
        return []
    seen: list[str] = []
    for v in df[col].dropna().astype(str):
        parts = [x.strip() for x in v.split(";") if x.strip() and not x.strip().startswith("replicas of partitions")]
        v = re.sub(r"/proc/\d+/", "/proc/<pid>/", "; ".join(parts).split(" from http")[0].strip())
        if v and v not in ("NA", "nan") and v not in seen:
            seen.append(v)
    if not seen:
        return []
    return [doc.Para(f"Source of {what}: " + " | ".join(seen) + ".", "note")]


# --------------------------------------------------------------------------- D


def _section_d(ctx: _Ctx, df: pd.DataFrame) -> None:
    labels = _label_cols(df)
    keys = ["machine", "role"] + labels
    order = ["machine"] + labels[1:] + ["role", "codec"]
    many = stats_many(ctx.ledger, df, "D", {"usr_pct": "f2", "sys_pct": "f2", "cpu_s_per_gb": "f2"}, keys)
    usr, sys_, per_gb = many["usr_pct"], many["sys_pct"], many["cpu_s_per_gb"]
    all_keys = _rows_keys(df, keys)
    base = {k: b for b, k in _pairs(all_keys, 2)}
    codecs = sorted({k[2] for k in all_keys}) or [BASELINE]
    headers = [
        "machine",
        "role",
        *labels,
        "usr / sys %",
        "total %",
        f"Δ total vs {_baseline(codecs)}",
        "CPU-s/GB median [range]",
        "n",
    ]
    rows = []

    def sort_key(k: tuple[str, ...]) -> tuple[str, ...]:
        d = dict(zip(keys, k))
        return tuple(d[c] for c in order)

    totals: dict[tuple[str, ...], Fig] = {}
    for k in sorted(all_keys, key=sort_key):
        u, s = usr.get(k), sys_.get(k)
        total = ctx.ledger.derive("sum", [u.median, s.median], "f2") if (u and s) else None
        if total is not None:
            totals[k] = total
        delta = "baseline" if k not in base else "NA"
        if k in base and base[k] in totals and total is not None:
            delta = ctx.ledger.derive("pct_change", [totals[base[k]], total], "pct").text
        g = per_gb.get(k) or _na_stat(ctx, "cpu_s_per_gb")
        n = (u or g).n.text if (u or per_gb.get(k)) else _na_stat(ctx, "usr_pct").n.text
        rows.append(
            [
                k[0],
                k[1],
                *k[2:],
                f"{u.median} / {s.median}" if (u and s) else "NA",
                total.text if total else "NA",
                delta,
                g.cell(),
                n,
            ]
        )
        if (
            k in base
            and k[1].startswith("broker")
            and base[k] in per_gb
            and k in per_gb
            and per_gb[k].ok
            and per_gb[base[k]].ok
        ):
            ch = ctx.ledger.derive("pct_change", [per_gb[base[k]].median, per_gb[k].median], "pct")
            v = overlap_verdict(per_gb[base[k]], per_gb[k])
            rest = " ".join(k[3:])
            ctx.headline.append(
                f"Broker CPU change, {k[0]} {k[1]}{(' ' + rest) if rest else ''}: {ch} CPU-s/GB with {k[2]} vs {base[k][2]} "
                f"({per_gb[base[k]].median} → {per_gb[k].median}): {v}."
            )
    ctx.add(
        doc.Heading(2, TITLES["D"], "exp-d"),
        doc.Para(
            "CPU of each role from /proc/<pid>/stat cumulative counters over the steady window, usr and sys apart, "
            "in % of one CPU; CPU-s/GB normalises to uncompressed payload so rows at different rates compare. "
            "Unreadable counters are NA, never 0.",
            "note",
        ),
        doc.Table(headers, rows),
        *_sources(df, "cpu_source", "CPU counters"),
    )


# --------------------------------------------------------------------------- E, F, M


def _section_e(ctx: _Ctx, df: pd.DataFrame) -> None:
    labels = ["codec"] + [c for c in varying(df, [x for x in LABELS if x != "codec"])]
    keys = ["machine"] + labels
    cols = [
        ("ratio", "ratio median [range]", "x"),
        ("records_per_batch_p50", "records/batch p50", "auto"),
        ("records_per_batch_p90", "records/batch p90", "auto"),
        ("bytes_per_batch_p50", "bytes/batch p50", "int"),
        ("batches", "batches", "int"),
    ]
    st = stats_many(ctx.ledger, df, "E", {c: kind for c, _, kind in cols}, keys)
    rows = []
    for k in _rows_keys(df, keys):
        r = st["ratio"].get(k) or _na_stat(ctx, "ratio")
        rows.append([*k, r.cell(), *(st[c][k].median.text if k in st[c] else "NA" for c, _, _ in cols[1:]), r.n.text])
    ctx.add(
        doc.Heading(2, TITLES["E"], "exp-e"),
        doc.Para(
            "The ratio depends on how many bytes a batch holds: batch fill (records and bytes per stored batch) stands beside it.",
            "note",
        ),
        doc.Table(["machine", *labels, *(h for _, h, _ in cols), "n"], rows),
    )


def _section_f(ctx: _Ctx, df: pd.DataFrame) -> None:
    labels = ["codec", "topic_compression"] + [
        c for c in varying(df, [x for x in LABELS if x not in ("codec", "topic_compression")])
    ]
    keys = ["machine"] + labels
    cpu = stats(ctx.ledger, df, "F", "broker_cpu_s_per_gb", keys, "f2")
    all_keys = _rows_keys(df, keys)
    rows = []
    for k in all_keys:
        sel = df
        for c, v in zip(keys, k):
            sel = sel[sel[c].map(label_text) == v]
        stored = " ".join(sorted({str(x) for x in sel["stored_codecs"]})) if "stored_codecs" in sel else "NA"
        rec = " ".join(sorted({str(x) for x in sel["recompressed"]})) if "recompressed" in sel else "NA"
        c = cpu.get(k) or _na_stat(ctx, "broker_cpu_s_per_gb")
        delta = "baseline" if k[2] == "producer" else "NA"
        b = k[:2] + ("producer",) + k[3:]
        if k[2] != "producer" and b in cpu and cpu[b].ok and c.ok:
            delta = ctx.ledger.derive("pct_change", [cpu[b].median, c.median], "pct").text
            ctx.headline.append(
                f"Broker recompression, {k[0]}: topic compression.type={k[2]} with producer {k[1]} costs {delta} broker CPU-s/GB vs compression.type=producer ({overlap_verdict(cpu[b], c)})."
            )
        rows.append([*k, stored, rec, c.cell(), delta, c.n.text])
    ctx.add(
        doc.Heading(2, TITLES["F"], "exp-f"),
        doc.Para(
            "Recompression is read from the stored batches' codec against the producer's; broker CPU per GB of payload.",
            "note",
        ),
        doc.Table(
            [
                "machine",
                "producer codec",
                "topic compression.type",
                *labels[2:],
                "stored codecs",
                "recompressed",
                "broker CPU-s/GB median [range]",
                "Δ vs producer",
                "n",
            ],
            rows,
        ),
    )


def _section_m(ctx: _Ctx, df: pd.DataFrame) -> None:
    keys = ["machine", "corpus", "codec", "level", "block_size"]
    df = df.assign(level=df["level"].replace({"": "-", "NA": "-"})) if "level" in df.columns else df
    many = stats_many(
        ctx.ledger,
        df,
        "M",
        {"ratio": "f3", "corpus_entropy_bits_per_byte": "f3", "compress_mb_s": "auto", "decompress_mb_s": "auto"},
        keys,
    )
    ratio, ent, comp, dec = (
        many["ratio"],
        many["corpus_entropy_bits_per_byte"],
        many["compress_mb_s"],
        many["decompress_mb_s"],
    )
    rows = []
    for k in _rows_keys(df, keys):
        c = comp.get(k) or _na_stat(ctx, "compress_mb_s")
        rows.append(
            [
                *k,
                ent[k].median.text if k in ent else "NA",
                ratio[k].median.text if k in ratio else "NA",
                c.cell(),
                dec[k].cell() if k in dec else "NA",
                c.n.text,
            ]
        )
    ctx.add(
        doc.Heading(2, TITLES["M"], "exp-m"),
        doc.Para(
            "In-memory compress/decompress of the corpus cut into blocks, in Kafka's framing; warm-up repetitions excluded; MB = a million bytes.",
            "note",
        ),
        doc.Table(
            [
                "machine",
                "corpus",
                "codec",
                "level",
                "block bytes",
                "entropy (bits/B)",
                "ratio",
                "compress MB/s median [range]",
                "decompress MB/s median [range]",
                "n",
            ],
            rows,
        ),
    )


SECTIONS: dict[str, Callable[[_Ctx, pd.DataFrame], None]] = {
    "A": _section_a,
    "B": _section_b,
    "C": _section_c,
    "D": _section_d,
    "E": _section_e,
    "F": _section_f,
    "M": _section_m,
}


# --------------------------------------------------------------------------- excluded, environment, threats


#: The method's steal limit (seed 000); a plan may accept more, and the report then says so.
METHOD_STEAL_LIMIT_PCT = 1.0


def _run_notes(ctx: _Ctx, exp: str, df: pd.DataFrame) -> None:
    """Next to an experiment's numbers: a steal limit above the method's, a common rate that
    fell back, and the repetitions that were run again (column ``attempt``)."""
    import pandas as pd

    L, notes = ctx.ledger, []
    for r in ctx.runs:
        rules_ = r.manifest.get("rules") if isinstance(r.manifest.get("rules"), Mapping) else {}
        lim = rules_.get("steal_limit_pct")
        if isinstance(lim, (int, float)) and not isinstance(lim, bool) and lim > METHOD_STEAL_LIMIT_PCT:
            fig = L.manifest(lim, r.index, "rules/steal_limit_pct", "int" if float(lim).is_integer() else "f2")
            notes.append(
                f"Run {r.path.name} accepted CPU steal up to {fig.text}% per repetition, above the method's "
                "default limit; its numbers carry that much more noise."
            )
        rd = r.manifest.get("rate_derivation") if isinstance(r.manifest.get("rate_derivation"), Mapping) else {}
        if rd.get("fallback") and exp in ("A", "C", "D", "E", "F"):
            notes.append(f'Run {r.path.name}: rate = "auto" fell back: {rd["fallback"]}.')
    if "attempt" in df.columns:
        att = pd.to_numeric(df["attempt"], errors="coerce").fillna(1)
        retried = df[att > 1]
        if not retried.empty:
            parts = []
            for a, g in retried.groupby(att[att > 1].astype(int), sort=True):
                sid = L.row_set(exp, g["_gid"].to_numpy(), {"attempt": str(a)})
                nth = {2: "second", 3: "third", 4: "fourth", 5: "fifth"}.get(a, "later")
                parts.append(f"{L.agg('count', [0.0] * len(g), sid, 'attempt', 'int').text} from a {nth} attempt")
            notes.append(
                f"Rows from repetitions run again after an INVALID or REJECTED attempt: {', '.join(parts)} "
                "(column attempt; the excluded attempts are listed below)."
            )
    if notes:
        ctx.add(doc.Items(notes))


def _excluded(ctx: _Ctx) -> None:
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


def _environment(ctx: _Ctx) -> None:
    L = ctx.ledger
    rows = []
    for r in ctx.runs:
        m, man = r.machine, r.manifest
        v = man.get("versions") if isinstance(man.get("versions"), Mapping) else {}
        t = man.get("transport") if isinstance(man.get("transport"), Mapping) else {}
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
        ),
    )
    prow = []
    for r in ctx.runs:
        man = r.manifest
        rd = man.get("rate_derivation") if isinstance(man.get("rate_derivation"), Mapping) else {}
        prow.append(
            [
                r.path.name,
                L.manifest(man.get("seed"), r.index, "seed", "int").text if man.get("seed") is not None else "NA",
                L.manifest(man.get("repetitions"), r.index, "repetitions", "int").text
                if man.get("repetitions") is not None
                else "NA",
                str(man.get("warmup", "NA")).lower(),
                L.manifest(man.get("duration_s"), r.index, "duration_s").text
                if man.get("duration_s") is not None
                else "NA",
                L.manifest(rd.get("rate_msgs"), r.index, "rate_derivation/rate_msgs", "int").text
                if rd.get("rate_msgs") is not None
                else "NA",
                (
                    f"{rd.get('method', '')}; fraction {L.manifest(rd.get('fraction'), r.index, 'rate_derivation/fraction')}; "
                    f"slowest cell {rd.get('min_cell', 'NA')}"
                )
                if rd
                else "no derived rate in this run",
            ]
        )
    ctx.add(
        doc.Table(
            [
                "run directory",
                "seed",
                "repetitions",
                "warm-up",
                "duration s",
                "common rate msgs/s",
                "how the rate was derived",
            ],
            prow,
            caption="Method: order seed, repetitions and the common fixed rate",
        )
    )
    crow = []
    for r in ctx.runs:
        corp = r.manifest.get("corpora") if isinstance(r.manifest.get("corpora"), Mapping) else {}
        for name, c in sorted(corp.items()):
            if not isinstance(c, Mapping):
                continue
            crow.append(
                [
                    r.path.name,
                    name,
                    str(c.get("source", "NA")),
                    L.manifest(
                        c.get("entropy_bits_per_byte"), r.index, f"corpora/{name}/entropy_bits_per_byte", "f3"
                    ).text,
                    L.manifest(c.get("records"), r.index, f"corpora/{name}/records", "int").text,
                    L.manifest(c.get("bytes"), r.index, f"corpora/{name}/bytes", "int").text,
                    str(c.get("near_random", "NA")).lower(),
                    str(c.get("sha256", "NA")),
                ]
            )
    if crow:
        ctx.add(
            doc.Table(
                ["run directory", "corpus", "source", "entropy bits/B", "records", "bytes", "near random", "sha256"],
                crow,
                caption="Corpora (fingerprints from the manifest)",
            )
        )


def _threats(ctx: _Ctx) -> None:
    L = ctx.ledger
    items: list[str] = []
    b = ctx.frames.get("B")
    if b is not None and "latency_flag" in b.columns:
        fl = b[b["latency_flag"] == SATURATED_FLAG]
        if len(fl):
            n = L.agg(
                "count",
                [0.0] * len(fl),
                L.row_set("B", fl["_gid"].to_numpy(), {"latency_flag": SATURATED_FLAG}),
                "latency_flag",
                "int",
            )
            items.append(
                f"Saturated latency excluded: {n} B rows are flagged {SATURATED_FLAG}; the report uses no B latency."
            )
    d = ctx.frames.get("D")
    if d is not None and "steal_pct" in d.columns and d["steal_pct"].notna().any():
        sel = d[d["steal_pct"].notna()]
        sid = L.row_set("D", sel["_gid"].to_numpy(), {})
        mx = L.agg("max", [float(x) for x in sel["steal_pct"]], sid, "steal_pct", "f2")
        items.append(
            f"CPU steal: at most {mx}% during the D runs (a run above the limit in the manifest's rules is INVALID)."
        )
    for exp, df in ctx.frames.items():
        for status, what in (
            ("INVALID", "invalid (steal above the limit)"),
            ("REJECTED", "rejected (achieved rate off the target)"),
            ("NA", "not measured (NA)"),
            ("FAILED_CPU_REGRESSED", "failed: CPU counter regressed"),
            ("FAILED_LOSS", "failed: records lost or duplicated"),
            ("FAILED_RUN", "failed runs"),
        ):
            g = df[df["status"] == status]
            if len(g):
                n = L.agg(
                    "count", [0.0] * len(g), L.row_set(exp, g["_gid"].to_numpy(), {"status": status}), "status", "int"
                )
                items.append(f"{exp}: {n} rows {what}; see Excluded data points.")
    for r in ctx.runs:
        man = r.manifest
        t = man.get("transport") if isinstance(man.get("transport"), Mapping) else {}
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
        gate = man.get("gate") if isinstance(man.get("gate"), Mapping) else {}
        for c in gate.get("checks", []) if isinstance(gate.get("checks"), list) else []:
            if isinstance(c, Mapping) and c.get("outcome") != "pass":
                items.append(
                    f"{r.path.name}: gate check “{c.get('name')}” ({c.get('severity')}) {c.get('outcome')}: {c.get('detail')}"
                )
        corp = man.get("corpora") if isinstance(man.get("corpora"), Mapping) else {}
        for name, c in sorted(corp.items()):
            if isinstance(c, Mapping) and c.get("near_random"):
                items.append(
                    f"{r.path.name}: corpus {name} is near random (a labelled control): its ratios say nothing about real data."
                )
    machines = sorted({r.label for r in ctx.runs})
    if len(machines) == 1:
        items.append("One machine only: no cross-architecture conclusion can be drawn from this report.")
    ctx.add(
        doc.Heading(2, "Threats to validity shown by the data", "threats"),
        doc.Items(items or ["None detected in the CSVs and manifests."]),
    )


# --------------------------------------------------------------------------- assembly


def render_plots(fr: Mapping[str, pd.DataFrame]) -> dict[str, bytes]:
    """Every plot the frames allow, as PNG bytes by file name."""
    from kbench.reporting import plots as plots_mod

    out: dict[str, bytes] = {}
    for exp, name, _, fn in plots_mod.PLOTS:
        if exp in fr:
            fig = fn(fr[exp])
            if fig is not None:
                out[name] = plots_mod.png(fig)
    return out


def _warm_plots() -> None:
    """Import what drawing needs (matplotlib's figure and Agg backend: ~0.8 s), in the plot
    worker while the parent reads the CSVs."""
    from matplotlib import figure  # noqa: F401
    from matplotlib.backends import backend_agg  # noqa: F401

    from kbench.reporting import plots  # noqa: F401


def _plot_worker() -> Any:
    """A forked worker process, started before the runs are loaded so that its imports overlap
    the loading (None with one CPU or without fork)."""
    import multiprocessing as mp

    if len(os.sched_getaffinity(0)) < 2 or "fork" not in mp.get_all_start_methods():
        return None
    try:
        from concurrent.futures import ProcessPoolExecutor

        pool = ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("fork"))
        pool.submit(_warm_plots)
    except OSError:
        return None
    return pool


def _start_plots(fr: Mapping[str, pd.DataFrame], pool: Any = None) -> Callable[[], dict[str, bytes]]:
    """Render the plots in a forked process (``pool``, see :func:`_plot_worker`) while the
    tables are built (when there is more than one CPU to use); returns a function that waits
    for them.  Falls back to rendering in this process."""
    if pool is None:
        return lambda: render_plots(fr)
    try:
        future = pool.submit(render_plots, dict(fr))
    except (OSError, RuntimeError):
        pool.shutdown()
        return lambda: render_plots(fr)

    def wait() -> dict[str, bytes]:
        try:
            return future.result()
        except Exception:  # noqa: BLE001 - a broken worker must not lose the report
            return render_plots(fr)
        finally:
            pool.shutdown()

    return wait


def _textify(df: pd.DataFrame) -> pd.DataFrame:
    """Label columns as the CSV wrote them (text), so tables group and print them verbatim."""
    for c in dict.fromkeys((*LABELS, *M_LABELS, "role", "machine")):
        if c in df.columns and not _is_text(df[c]):
            df[c] = df[c].map({v: label_text(v) for v in df[c].unique()})
    return df


def build(
    run_dirs: Sequence[Path | str], with_plots: bool = True
) -> tuple[list[doc.Block], Ledger, dict[str, bytes], str]:
    """The report's blocks, its ledger, its plots (name → PNG) and its title."""
    pool = _plot_worker() if with_plots else None
    try:
        runs = load_runs(list(run_dirs))
        fr = {e: _textify(f) for e, f in frames(runs).items()}
    except BaseException:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        raise
    pending = _start_plots(fr, pool) if with_plots else None
    ctx = _Ctx(runs, fr)
    plans = sorted({str(r.manifest.get("plan_name", "?")) for r in runs})
    machines = sorted({r.label for r in runs})
    title = f"kbench report: {', '.join(plans)}"
    body = _Ctx(runs, fr, ctx.ledger)
    for exp in ("A", "B", "C", "D", "E", "F", "M"):
        if exp in fr:
            SECTIONS[exp](body, fr[exp])
            if exp != "M":
                _run_notes(body, exp, fr[exp])
    ctx.headline = body.headline
    plots = pending() if pending is not None else {}
    from kbench.reporting.plots import PLOTS

    images: list[doc.Block] = [doc.Image(name, plots[name], caption) for _, name, caption, _ in PLOTS if name in plots]
    ctx.add(
        doc.Heading(1, title),
        doc.Para(
            f"Machines: {'; '.join(machines)}. Run directories: {', '.join(r.path.name for r in runs)}. "
            "Every number below is computed from the runs' CSVs and manifests (see provenance.json); "
            "medians and ranges are over OK repetitions; two cells whose ranges overlap read “no significant difference”."
        ),
        doc.Heading(2, "Headline figures", "headline"),
        doc.Items(ctx.headline or ["No experiment in these runs yields a headline figure (no OK rows to compare)."]),
    )
    ctx.add(*body.blocks)
    _claims(ctx, sorted(fr))
    if images:
        ctx.add(doc.Heading(2, "Plots", "plots"), *images)
    _excluded(ctx)
    _environment(ctx)
    _threats(ctx)
    return ctx.blocks, ctx.ledger, plots, title


#: The ownership marker in a report directory: the files ``kbench report`` wrote there.
OWNED = ".kbench-report.json"


def _owned(out: Path) -> set[str]:
    try:
        data = json.loads((out / OWNED).read_text())
        return {str(f) for f in data.get("files", [])}
    except (OSError, ValueError, AttributeError):
        return set()


def check_output(out: Path, names: Sequence[str]) -> None:
    """Refuse to write into ``out`` if a file we would write is there and kbench report did not
    write it (not listed in ``out``'s ownership marker): a user's report.md is never overwritten."""
    if out.exists() and not out.is_dir():
        raise ValueError(
            f"{out}: exists and is not a directory; give -o a directory for report.md, report.html and plots/"
        )
    owned = _owned(out)
    for name in names:
        if (out / name).exists() and name not in owned:
            raise ValueError(
                f"{out / name} exists and was not written by kbench report; choose another -o or move that file"
            )


def write(run_dirs: Sequence[Path | str], out: Path | str, with_plots: bool = True) -> ReportFiles:
    """Build the report, then write it under ``out`` (each file atomically).  Only files listed in
    ``out/.kbench-report.json`` (written by an earlier report) are ever replaced."""
    out = Path(out)
    run_dirs = unique_dirs(run_dirs)
    check_output(out, ["report.md", "report.html", "provenance.json", "plots"])
    blocks, ledger, plots, title = build(run_dirs, with_plots)
    names = ["report.md", "report.html", "provenance.json", "plots", *(f"plots/{n}" for n in plots)]
    check_output(out, names)
    (out / "plots").mkdir(parents=True, exist_ok=True)
    atomic_write(out / OWNED, (json.dumps({"files": sorted(_owned(out) | set(names))}) + "\n").encode())
    paths = []
    for name, data in plots.items():
        p = out / "plots" / name
        atomic_write(p, data)
        paths.append(p)
    md, html_, prov = out / "report.md", out / "report.html", out / "provenance.json"
    atomic_write(
        prov, json.dumps(ledger.as_dict([str(Path(d).resolve()) for d in run_dirs]), separators=(",", ":")).encode()
    )
    atomic_write(md, _utf8(doc.to_markdown(blocks)))
    atomic_write(html_, _utf8(doc.to_html(blocks, title)))
    return ReportFiles(md, html_, prov, tuple(paths))


def _utf8(text: str) -> bytes:
    """UTF-8 of a text that may hold a non-UTF-8 file name (surrogate escapes): shown as U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace").encode()
