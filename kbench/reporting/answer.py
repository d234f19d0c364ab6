"""The report's first section: the answer, one row per codec against the baseline.

Each experiment contributes its columns (:attr:`kbench.experiments.spec.Experiment.answer`):
C the ratio, B the saturated throughput, D the CPU per role, A the p99 added at the common
fixed rate (or the reason there is none: SATURATED repetitions, too few OK ones).  This module
only lays them out: one row per machine × corpus × codec, the columns in registry order, a
column an experiment of these runs did not measure for that row reads ``not measured``.
"""

from __future__ import annotations

from collections.abc import Sequence

from kbench.experiments.spec import AnswerCell
from kbench.reporting import document as doc
from kbench.reporting.context import sort_key

__all__ = ["NOT_MEASURED", "answer_blocks"]

#: What a cell of the answer reads when no experiment of the runs measured it.
NOT_MEASURED = "not measured"


def answer_blocks(cells: Sequence[AnswerCell], notes: Sequence[str], one_machine: bool) -> list[doc.Block]:
    """The answer table (and how to read it); a paragraph saying why when there is none."""
    head = doc.Heading(2, "The answer: each codec against the baseline", "answer")
    if not cells:
        return [
            head,
            doc.Para(
                "No codec can be compared with a baseline in these runs (one codec only, or no OK row): "
                "the experiments below give each cell on its own."
            ),
        ]
    columns = list(dict.fromkeys(c.column for c in cells))
    rows: dict[tuple[str, str, str, str], dict[str, list[AnswerCell]]] = {}
    for c in cells:
        rows.setdefault((c.machine, c.corpus, c.codec, c.baseline), {}).setdefault(c.column, []).append(c)
    headers = [*([] if one_machine else ["machine"]), "codec", "corpus", *columns]
    table = []
    for key in sorted(rows, key=lambda k: tuple(sort_key(x) for x in k)):
        machine, corpus, codec, base = key
        texts = []
        for col in columns:
            got = rows[key].get(col, [])
            if not got:
                texts.append(NOT_MEASURED)
            elif len(got) == 1 and not got[0].qualifier:
                texts.append(got[0].text)
            else:
                # one line each in the page; "; " between them in report.md
                texts.append(";\n".join(f"{c.qualifier}: {c.text}" if c.qualifier else c.text for c in got))
        table.append([*([] if one_machine else [machine]), f"{codec} vs {base}", corpus, *texts])
    return [
        head,
        doc.Table(headers, table, wrap=True),
        doc.Items(list(notes)),
    ]
