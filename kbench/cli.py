"""The ``kbench`` command line: one subcommand per job.

Each subcommand lives in its own module under ``kbench.commands`` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` (args -> exit code).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: Subcommand modules, in the order ``kbench --help`` lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "kbench.commands.codecs",
    "kbench.commands.run",
    "kbench.commands.plans",
    "kbench.commands.gate",
    "kbench.commands.report",
    "kbench.commands.cluster",
    "kbench.commands.sim",
    "kbench.commands.inspect",
    "kbench.commands.produce",
    "kbench.commands.advise",
    "kbench.commands.corpus",
)


class UserError(Exception):
    """Bad input from the user: printed as one line, exit status 2."""


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser, or (``only``: a subcommand's name) one with just that subcommand, so
    that running a command imports its module and no other."""
    parser = argparse.ArgumentParser(
        prog="kbench",
        description="kbench: measure Apache Kafka compression (codecs, batches, latency, throughput, CPU per role).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        if only is None or name.rsplit(".", 1)[1] == only:
            importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    first = argv[0] if argv else None
    known = {name.rsplit(".", 1)[1] for name in COMMAND_MODULES}
    parser = build_parser(first if first in known else None)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("kbench: interrupted", file=sys.stderr)
        return 130
    except (UserError, ValueError, FileNotFoundError) as e:
        print(f"kbench: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
