"""``kbench report RUN_DIR... -o OUT``: tables, verdicts and plots from run directories.

Writes ``OUT/report.md``, a self-contained ``OUT/report.html`` (plots embedded, no
network), ``OUT/plots/*.png`` and ``OUT/provenance.json`` (where every number comes from),
from the CSVs and manifests alone.  Several run directories (one or more per machine)
make one cross-machine report.  How to read it: docs/reports.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kbench.commands.args import add_json
from kbench.install import pip_install


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write report.md + report.html from run directories", description=__doc__)
    p.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR", help="run directories made by kbench run")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="OUT", help="directory for the report files")
    p.add_argument("--no-plots", action="store_true", help="tables only (faster)")
    p.add_argument(
        "--verify",
        action="store_true",
        help="re-check every figure (its rows and its value) and every number of report.md against the inputs",
    )
    p.add_argument(
        "--verify-only",
        action="store_true",
        help="check the report already under OUT against the run directories; write nothing",
    )
    add_json(p, "the files written (and the verification's result) instead of the status line")
    p.set_defaults(func=run)


def _check(provenance_path: Path, markdown_path: Path, run_dirs: list[Path], quiet: bool = False) -> int:
    from kbench.model import textfile
    from kbench.reporting import provenance, report
    from kbench.reporting.frames import unique_dirs
    from kbench.reporting.verify_html import html_problems

    md = markdown_path.read_text()
    prov = textfile.loads_json(textfile.read_text(provenance_path, "provenance"), str(provenance_path))
    problems = provenance.verify(prov, unique_dirs(run_dirs), md)
    problems += report.placement_problems(run_dirs, md)
    html = markdown_path.with_name("report.html")  # every artefact the report wrote, the page too
    problems += html_problems(run_dirs, html.read_text(), markdown_path.parent)
    if problems:
        for p in problems[:20]:
            print(f"kbench: provenance: {p}", file=sys.stderr)
        if len(problems) > 20:
            print(f"kbench: provenance: … and {len(problems) - 20} more problems", file=sys.stderr)
        return 1
    print(
        "verified: every figure is the OK rows of its cell and recomputes from the run directories;"
        " every number in report.md and report.html is a figure or an input label, in the place the runs give it",
        file=sys.stderr if quiet else sys.stdout,
    )
    return 0


def run(args: argparse.Namespace) -> int:
    try:
        import matplotlib  # noqa: F401
        import pandas  # noqa: F401
    except ImportError as e:
        raise ValueError(
            f"kbench report needs pandas and matplotlib ({e}); install them: {pip_install('report')}"
        ) from None
    import gc

    from kbench.reporting import report

    if args.verify_only:
        prov, md = args.output / "provenance.json", args.output / "report.md"
        missing = [p.name for p in (prov, md, args.output / "report.html") if not p.is_file()]
        if missing:
            raise ValueError(
                f"{args.output}: no {' or '.join(missing)}; write the report first (kbench report … -o OUT)"
            )
        code = _check(prov, md, args.run_dirs, quiet=args.json)
        if args.json:
            print(json.dumps({"verified": code == 0, "markdown": str(md), "provenance": str(prov)}, indent=1))
        return code

    # A report allocates a few hundred thousand small objects that live until it is written
    # (figures, ledger entries, table cells) and makes no cycles worth collecting early: with
    # the default thresholds the collector re-walks that growing heap many times (~0.5 s CPU).
    thresholds = gc.get_threshold()
    gc.freeze()  # the imported modules: never collected, never walked
    gc.set_threshold(100_000, 50, 1000)
    try:
        files = report.write(args.run_dirs, args.output, with_plots=not args.no_plots)
    except (PermissionError, IsADirectoryError, NotADirectoryError, FileNotFoundError) as e:
        raise ValueError(
            f"cannot write the report under {args.output} ({e.strerror}: {e.filename}); choose another -o"
        ) from None
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
    status = sys.stderr if args.json else sys.stdout
    print(f"wrote {files.markdown}, {files.html} ({len(files.plots)} plots), {files.provenance}", file=status)
    code = _check(files.provenance, files.markdown, args.run_dirs, quiet=args.json) if args.verify else 0
    if args.json:
        doc = {
            "markdown": str(files.markdown),
            "html": str(files.html),
            "plots": [str(x) for x in files.plots],
            "provenance": str(files.provenance),
            "verified": (code == 0) if args.verify else None,
        }
        print(json.dumps(doc, indent=1))
    return code
