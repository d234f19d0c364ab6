"""``kbench report``: run directories → ``report.md``, ``report.html``, ``plots/`` and
``provenance.json``, from the CSVs and manifests alone.

Sections, in order: the answer (each codec against the baseline: ratio, throughput, CPU per
role, p99 added, each from its experiment) and the headline figures; the setup (producer and
topic settings, cluster, hosts, records, method); the threats to validity that the data shows;
experiments A–F (and M when a run holds ``M.csv``), one row per machine × codec (× corpus and
the other labels that vary), median and range over OK repetitions, verdict rows where ranges
are compared, each with its plots; the claims; excluded data points with their reasons (once);
the environment.
How to read it: ``docs/reports.md``.  Every number is a :class:`~kbench.reporting.provenance.Fig`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbench.engine.store import atomic_write
from kbench.experiments import registry
from kbench.experiments.spec import LABELS, M_LABELS
from kbench.reporting import document as doc
from kbench.reporting.answer import answer_blocks
from kbench.reporting.choice import choice_blocks
from kbench.reporting.context import ReportContext, is_text
from kbench.reporting.frames import frames, load_runs, unique_dirs
from kbench.reporting.provenance import Ledger
from kbench.reporting.report_sections import (
    claims_section,
    environment_section,
    excluded_section,
    run_notes,
    threats_section,
)
from kbench.reporting.series import section as series_section
from kbench.reporting.setup import setup_blocks
from kbench.reporting.summary import label_text

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ReportFiles", "build", "write"]


@dataclass(frozen=True)
class ReportFiles:
    markdown: Path
    html: Path
    provenance: Path
    plots: tuple[Path, ...]


# --------------------------------------------------------------------------- A


# --------------------------------------------------------------------------- B


# --------------------------------------------------------------------------- C


# --------------------------------------------------------------------------- D


# --------------------------------------------------------------------------- E, F, M


# --------------------------------------------------------------------------- excluded, environment, threats


# --------------------------------------------------------------------------- assembly


def render_plots(fr: Mapping[str, pd.DataFrame]) -> dict[str, bytes]:
    """Every plot the frames allow, as PNG bytes by file name."""
    from kbench.reporting import plots as plots_mod

    out: dict[str, bytes] = {}
    for exp, spec in registry.plots():
        if exp in fr:
            fig = spec.draw(fr[exp])
            if fig is not None:
                out[spec.name] = plots_mod.png(fig)
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
        if c in df.columns and not is_text(df[c]):
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
    ctx = ReportContext(runs, fr)
    plans = sorted({str(r.manifest.get("plan_name", "?")) for r in runs})
    machines = sorted({r.label for r in runs})
    title = f"kbench report: {', '.join(plans)}"
    body = ReportContext(runs, fr, ctx.ledger)
    sections: list[tuple[str, list[doc.Block]]] = []
    answer_notes: list[str] = []
    for exp, e in sorted(registry.EXPERIMENTS.items(), key=lambda kv: kv[1].answer_rank):
        if exp in fr and e.answer is not None:
            body.answer += e.answer(body, fr[exp])
            if e.answer_note:
                answer_notes.append(e.answer_note)
    for exp, e in registry.EXPERIMENTS.items():
        if exp not in fr:
            continue
        if e.section is not None:
            start = len(body.blocks)
            e.section(body, fr[exp])
            if e.in_run:
                run_notes(body, exp, fr[exp])
            sections.append((exp, body.blocks[start:]))
    plots = pending() if pending is not None else {}
    ctx.add(
        doc.Heading(1, title),
        doc.Para(
            f"Machine{'s' if len(machines) > 1 else ''}: {'; '.join(machines)}. "
            f"Run directories: {', '.join(r.path.name for r in runs)}. "
            "Every number below is computed from the runs' CSVs and manifests (see provenance.json); "
            "medians and ranges are over OK repetitions; a verdict is the exact test of docs/methodology.md "
            "(its effect, interval, p and n), the seed's ranges rule shown beside it."
        ),
        *answer_blocks(body.answer, answer_notes, ctx.one_machine),
        doc.Heading(3, "Headline figures", "headline"),
        doc.Items(body.headline or ["No experiment in these runs yields a headline figure (no OK rows to compare)."]),
        *choice_blocks(ctx.ledger, fr),
    )
    ctx.add(*setup_blocks(ctx))
    ctx.answer_threats = body.answer_threats
    threats_section(ctx)
    for exp, blocks in sections:
        ctx.add(*blocks)
        ctx.add(*(doc.Image(p.name, plots[p.name], p.caption) for p in registry.get(exp).plots if p.name in plots))
    plots = {**plots, **_over_time(ctx, with_plots)}
    claims_section(ctx, sorted(fr))
    excluded_section(ctx)
    environment_section(ctx)
    return ctx.blocks, ctx.ledger, plots, title


def _over_time(ctx: ReportContext, with_plots: bool) -> dict[str, bytes]:
    """What happened during each repetition (rate and p99 over time per cell, from the runs'
    per-second series, kbench.reporting.series): after the experiments, before the claims.
    Nothing when no run has a series.csv.  Returns its plots (name → PNG)."""
    over_time = series_section(ctx.runs, ctx.ledger, with_plots)
    ctx.add(*over_time.blocks)
    return dict(over_time.plots)


def placement_problems(run_dirs: Sequence[Path | str], markdown: str, limit: int = 20) -> list[str]:
    """Where ``markdown`` differs from the report the run directories give (built again): a number
    swapped, moved or edited reads as a line that is not where the runs put it.  Presence in the
    ledger is not enough; every number must stand in the cell, row and section it was made for."""
    import difflib

    blocks, _, _, _ = build(unique_dirs(run_dirs), with_plots="](plots/" in markdown)
    want = doc.to_markdown(blocks).splitlines()
    got = markdown.splitlines()
    heading = {}
    current = ""
    for i, line in enumerate(want):
        if line.startswith("#"):
            current = line.lstrip("# ").strip()
        heading[i] = current
    out: list[str] = []
    for op, a0, a1, b0, b1 in difflib.SequenceMatcher(None, want, got, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        where = heading.get(a0, heading.get(max(0, a0 - 1), ""))
        for k in range(max(a1 - a0, b1 - b0)):
            w = want[a0 + k] if a0 + k < a1 else None
            g = got[b0 + k] if b0 + k < b1 else None
            line_no = b0 + k + 1 if g is not None else b0 + 1
            if g is None:
                out.append(
                    f"report.md line {line_no} (under “{where}”): misses {w!r}, which the run directories give there"
                )
            elif w is None:
                out.append(f"report.md line {line_no} (under “{where}”): {g!r} is no line of the report the runs give")
            else:
                out.append(
                    f"report.md line {line_no} (under “{where}”): reads {g!r} where the run directories give {w!r}: "
                    "a number moved, swapped or edited"
                )
            if len(out) >= limit:
                return out
    return out


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
