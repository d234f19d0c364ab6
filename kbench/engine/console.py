"""The end-of-run console tables of a run directory (headline per experiment, notes, cells short
of OK repetitions with cause and fix, excluded rows), from its CSVs and manifest."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from kbench.engine import host_speed, knee, rules, store, verdict
from kbench.engine import manifest as manifest_mod
from kbench.engine.status import EXPLAIN, Status, parse_status, worst
from kbench.experiments import registry

__all__ = ["run_notes", "short_cells", "tables"]


def run_notes(run_dir: Path) -> list[str]:
    """What every table of the run must carry next to its numbers: a steal limit above the
    method's, an injected steal source, a common rate that fell back."""
    man = manifest_mod.read(run_dir) if (run_dir / "manifest.json").exists() else {}
    out = []
    lim = man.get("rules", {}).get("steal_limit_pct")
    if isinstance(lim, (int, float)) and lim > rules.STEAL_LIMIT_PCT:
        out.append(
            f"NOTE: this plan accepts CPU steal up to {lim:g}% per run (the method's limit is {rules.STEAL_LIMIT_PCT:g}%)"
        )
    src = str(man.get("steal_source", ""))
    if src.startswith("injected"):
        out.append(f"NOTE: steal was not measured but {src} (a test)")
    fb = man.get("rate_derivation", {}).get("fallback")
    if fb:
        out.append(f'NOTE: rate = "auto" fell back: {fb}')
    return out


def short_cell_lines(exp: str, rows: Sequence[Mapping[str, str]], want: int, excluded_only: bool = False) -> list[str]:
    """One line per cell (and role) with fewer than ``want`` OK repetitions: cause and fix.
    ``excluded_only``: only the cells a rule excluded repetitions of (not those merely NA: a figure
    the transport does not measure)."""
    e = registry.get(exp)
    out = []
    for cs in verdict.summarise(exp, rows, e.verdict_on):
        if cs.n >= want:
            continue
        mine = [r for r in rows if (r["cell_id"], *(r.get(k, "") for k in e.row_key)) == cs.key]
        bad = [r for r in mine if r["status"] != Status.OK]
        attempts = len({(r["rep"], store.attempt_of(r)) for r in mine})
        status = worst(r["status"] for r in bad) if bad else Status.NA
        if excluded_only and all(r["status"] == Status.NA for r in bad):
            continue
        known = parse_status(status)
        cause, fix = (EXPLAIN[known].cause, EXPLAIN[known].fix) if known else ("", "see the reasons")
        example = next((r["reason"] for r in bad if r["status"] == status), "")
        out.append(
            f"{'/'.join(cs.key)}: n = {cs.n} OK of {attempts} attempts (want {want}): {cause}"
            + (f" ({example})" if example else "")
            + f"; fix: {fix}"
        )
    return out


def ok_wanted(run_dir: Path) -> int:
    """OK repetitions a cell needs for its verdict: 2 (or the plan's repetitions when fewer)."""
    man = manifest_mod.read(run_dir) if (run_dir / "manifest.json").exists() else {}
    return min(2, int(man.get("repetitions", 2) or 2))


def short_cells(run_dir: Path, experiments: Sequence[str]) -> list[str]:
    """The tables' "cells short of OK repetitions" lines (every experiment) of the cells short
    because repetitions were measured and excluded by a rule (INVALID, REJECTED, SATURATED,
    FAILED_*); a cell short only of figures its transport does not measure (NA) is not counted.
    ``kbench run`` exits non-zero when this is not empty."""
    want = ok_wanted(run_dir)
    out = []
    for exp in experiments:
        rows = store.read_rows(run_dir / f"{exp}.csv")
        out += [f"{exp} {line}" for line in short_cell_lines(exp, rows, want, excluded_only=True)] if rows else []
    return out


def tables(run_dir: Path, experiments: Sequence[str]) -> str:
    """The headline tables of a run directory, from its CSVs (and the manifest's notes)."""
    out = []
    man = manifest_mod.read(run_dir) if (run_dir / "manifest.json").exists() else {}
    probed = isinstance(man.get("host_speed"), Mapping) and man["host_speed"].get("probed")
    host = host_speed.summary(man) if probed else None  # a run that probed nothing says so in its manifest
    premises = knee.summary(man) + ([host] if host else [])
    if premises:
        out.append("== premises ==\n" + "\n".join(premises))
    notes = run_notes(run_dir)
    want = ok_wanted(run_dir)
    settings = verdict.run_settings(man)
    for exp in experiments:
        rows = store.read_rows(run_dir / f"{exp}.csv")
        title = f"== {exp}: {registry.get(exp).title} =="
        if not rows:
            out.append(f"{title}\n(no rows)")
            continue
        text = verdict.headline(exp, rows, *settings)
        if notes:
            text = "\n".join(notes) + "\n" + text
        excluded: dict[tuple[str, str, str, str], list[str]] = {}
        for r in rows:
            if r["status"] != "OK":
                rep = r["rep"] + (f" attempt {r['attempt']}" if store.attempt_of(r) > 1 else "")
                excluded.setdefault((r["cell_id"], rep, r["status"], r["reason"]), []).append(r.get("role", ""))
        retried = sum(1 for r in rows if store.attempt_of(r) > 1)
        if retried:
            text += f"\n\n{retried} rows come from retried attempts (column attempt > 1)"
        short = short_cell_lines(exp, rows, want)
        if short:
            text += "\n\ncells short of OK repetitions:\n  " + "\n  ".join(short)
        if excluded:
            items = [
                f"{cid} rep {rep}{(' [' + ', '.join(x for x in roles if x) + ']') if any(roles) else ''}: {st} ({why})"
                for (cid, rep, st, why), roles in excluded.items()
            ]
            text += f"\n\nexcluded ({sum(map(len, excluded.values()))} rows):\n  " + "\n  ".join(items[:12])
            if len(items) > 12:
                text += f"\n  ... {len(items) - 12} more (see {exp}.csv)"
        note = registry.get(exp).console_note
        if note:
            text += f"\n{note}"
        out.append(f"{title}\n{text}")
    return "\n\n".join(out)
