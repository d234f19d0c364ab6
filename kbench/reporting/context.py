"""What an experiment's report section works with: the report's context (runs, frames, ledger,
blocks, headline) and the helpers sections share (row keys, label columns, baseline pairs, sources).

Every number a section prints is a :class:`~kbench.reporting.provenance.Fig` of ``ctx.ledger``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kbench.experiments.spec import CONTROL_COLUMN, LABELS, AnswerCell
from kbench.reporting import document as doc
from kbench.reporting.provenance import Fig, Ledger
from kbench.reporting.runs import Run
from kbench.reporting.summary import Stat, empty_stat, label_text, varying

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "BASELINE",
    "ReportContext",
    "answer_pairs",
    "baseline",
    "is_text",
    "label_cols",
    "na_stat",
    "pairs",
    "rows_keys",
    "sort_key",
    "sources",
]

#: The codec every other codec is compared with (A–D), when the runs have it.
BASELINE = "none"


@dataclass
class ReportContext:
    runs: list[Run]
    frames: Mapping[str, pd.DataFrame]
    ledger: Ledger = field(default_factory=Ledger)
    blocks: list[doc.Block] = field(default_factory=list)
    headline: list[str] = field(default_factory=list)
    answer: list[AnswerCell] = field(default_factory=list)
    #: Threats the experiments raise that touch the answer (shown next to it).
    answer_threats: list[str] = field(default_factory=list)

    def add(self, *blocks: doc.Block) -> None:
        self.blocks.extend(blocks)

    @property
    def one_machine(self) -> bool:
        """One machine label in the runs: tables name it once (above), not on every row."""
        return len({r.label for r in self.runs}) == 1

    def machine_cols(
        self, headers: Sequence[str], rows: Sequence[Sequence[str]], n: int = 1
    ) -> tuple[list[str], list[list[str]]]:
        """``headers`` and ``rows`` without their first ``n`` (machine) columns when the report
        has one machine (named in the report's first lines); unchanged otherwise."""
        if not self.one_machine:
            return list(headers), [list(r) for r in rows]
        return list(headers[n:]), [list(r[n:]) for r in rows]

    def machine_run(self, label: str) -> Run:
        return next(r for r in self.runs if r.label == label)

    def mfig(self, label: str, field_: str) -> Fig:
        r = self.machine_run(label)
        return self.ledger.manifest(r.machine.get(field_), r.index, f"machine/{field_}", "int")


def is_text(s: pd.Series) -> bool:
    import pandas as pd

    return not pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def rows_keys(df: pd.DataFrame, keys: Sequence[str]) -> list[tuple[str, ...]]:
    """Every group of ``keys`` in ``df`` (OK or not), as label texts, sorted."""
    if df.empty:
        return []
    uniq = df[list(keys)].drop_duplicates()
    if all(is_text(uniq[k]) for k in keys):
        out = set(uniq.itertuples(index=False, name=None))
    else:
        out = {tuple(label_text(v) for v in row) for row in uniq.itertuples(index=False, name=None)}
    order: dict[str, tuple[int, float, str]] = {}
    for k in out:
        for x in k:
            if x not in order:
                order[x] = sort_key(x)
    return sorted(out, key=lambda k: tuple(order[x] for x in k))


def sort_key(x: str) -> tuple[int, float, str]:
    """Numbers in numeric order, before text."""
    try:
        return (0, float(x), "")
    except ValueError:
        return (1, 0.0, x)


def na_stat(ctx: ReportContext, metric: str) -> Stat:
    return empty_stat(ctx.ledger, metric)


def baseline(codecs: Sequence[str]) -> str:
    return BASELINE if BASELINE in codecs else sorted(codecs)[0]


def label_cols(df: pd.DataFrame, extra: Sequence[str] = ()) -> list[str]:
    return ["codec"] + [c for c in varying(df, [x for x in LABELS if x != "codec"]) if c not in extra] + list(extra)


def pairs(keys: Sequence[tuple[str, ...]], codec_pos: int) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """(baseline key, other key) pairs equal on every label but the codec."""
    codecs = sorted({k[codec_pos] for k in keys})
    if len(codecs) < 2:
        return []
    base = baseline(codecs)
    have = set(keys)
    out = []
    for k in keys:
        if k[codec_pos] == base:
            continue
        b = k[:codec_pos] + (base,) + k[codec_pos + 1 :]
        if b in have:
            out.append((b, k))
    return out


def answer_pairs(
    df: pd.DataFrame, extra: Sequence[str] = ()
) -> tuple[list[str], list[tuple[tuple[str, ...], tuple[str, ...], str]]]:
    """The keys (machine, codec, corpus, then the other labels that vary, then ``extra``) and,
    for the answer, every (baseline key, other key, qualifier) pair equal on all but the codec;
    the qualifier names the labels besides machine, codec and corpus (e.g. ``rate auto:0.3``)."""
    others = [c for c in varying(df, [x for x in LABELS if x not in ("codec", "corpus")]) if c not in extra]
    keys = ["machine", "codec", "corpus", *others, *extra]
    out = []
    for b, k in pairs(rows_keys(df, keys), 1):
        q = " ".join(
            f"{c} {v}" for c, v in zip(others, k[3 : 3 + len(others)]) if c != CONTROL_COLUMN
        )  # never a control
        out.append((b, k, q))
    return keys, out


def sources(df: pd.DataFrame, col: str, what: str) -> list[doc.Para]:
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
