"""The ``kbench`` command line: one subcommand per job.

Each subcommand lives in its own module under ``kbench.commands`` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` (args -> exit code).
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from kbench.model.text import SafeStream

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
    "kbench.commands.consume",
    "kbench.commands.advise",
    "kbench.commands.corpus",
)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage block): ``kbench: error: ...; see kbench CMD --help``."""

    def format_help(self) -> str:
        """Plain text: the modules' docstrings are the descriptions, without their reStructuredText marks."""
        return super().format_help().replace("``", "").replace("`", "")

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"kbench: error: {message}; see {self.prog} --help\n")


def _values_may_start_with_dash(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``--block-sizes -1KiB`` as ``--block-sizes=-1KiB``: an option that takes one value gets the next
    word even when it starts with '-' (unless that word is itself an option), so the value is
    checked and refused with its own message instead of argparse's "expected one argument"."""
    takes_value: set[str] = set()
    options: set[str] = set()
    stack = [parser]
    while stack:
        p = stack.pop()
        for a in p._actions:
            options.update(a.option_strings)
            if a.option_strings and a.nargs is None and not isinstance(a, argparse._StoreConstAction):
                if a.type is not None or a.const is None:
                    takes_value.update(a.option_strings)
            if isinstance(a, argparse._SubParsersAction):
                stack.extend(a.choices.values())
    out: list[str] = []
    i = 0
    while i < len(argv):
        w = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if w in takes_value and nxt is not None and nxt.startswith("-") and nxt not in options and nxt != "--":
            out.append(f"{w}={nxt}")
            i += 2
            continue
        out.append(w)
        i += 1
    return out


class _VersionAction(argparse.Action):
    """``--version``: :func:`kbench.versions.lines`, then exit."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        from kbench.versions import lines

        sys.stdout.write("\n".join(lines()) + "\n")
        parser.exit(0)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser, or (``only``: a subcommand's name) one with just that subcommand, so
    that running a command imports its module and no other."""
    parser = _Parser(
        prog="kbench",
        description="kbench: measure Apache Kafka compression (codecs, batches, latency, throughput, CPU per role).",
    )
    parser.add_argument(
        "--version",
        action=_VersionAction,
        help="print kbench's version and its libraries' (librdkafka, codecs, Kafka, drivers), and exit",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        if only is None or name.rsplit(".", 1)[1] == only:
            importlib.import_module(name).register(sub)
    return parser


#: The exit status of a command whose reader went away: 128 + SIGPIPE, as a shell reports ``yes | head``.
EXIT_READER_GONE = 128 + 13


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command.  Output into a pipe whose reader has gone (``kbench plans --json | head``)
    ends quietly: no message, exit 141.  stdout is flushed here, not at interpreter exit, so that
    the broken pipe is seen even when the whole output fitted in the buffer."""
    try:
        try:
            return _run(argv)
        finally:
            sys.stdout.flush()
    except BrokenPipeError:
        # Python's advice (the signal module's note on SIGPIPE): point stdout at devnull, so that
        # the flush at exit does not fail again with "Exception ignored ... BrokenPipeError".
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_READER_GONE


def _dist_error(e: BaseException) -> bool:
    """Java, Maven, Go or Kafka's jars missing (KafkaDistError: one line naming what and how to get
    it); its module is not imported to ask: whoever raised one had imported it."""
    dist = sys.modules.get("kbench.kafka.kafka_dist")
    return dist is not None and isinstance(e, dist.KafkaDistError)


def _run(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    first = argv[0] if argv else None
    known = {name.rsplit(".", 1)[1] for name in COMMAND_MODULES}
    # --version alone: no command module imported, so the report stays fast
    parser = build_parser(first if first in known else "" if first == "--version" else None)
    args = parser.parse_args(_values_may_start_with_dash(parser, argv))
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = SafeStream(out), SafeStream(err)  # no control character reaches a terminal
    try:
        return _call(args)
    finally:
        sys.stdout, sys.stderr = out, err


def _call(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("kbench: interrupted", file=sys.stderr)
        return 130
    except ValueError as e:  # first: an input error may also be a RuntimeError (MetricsURLError)
        print(f"kbench: error: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:
        if not _dist_error(e):
            raise
        print(f"kbench: error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # not a path's fault: main() ends quietly
        raise
    except OSError as e:  # a path that cannot be read or written: one line, not a traceback
        if e.errno is None:  # raised by kbench with its own message
            print(f"kbench: error: {e}", file=sys.stderr)
        elif e.errno in (errno.ENOSPC, errno.EDQUOT):
            where = f" of {e.filename}" if e.filename else ""
            print(
                f"kbench: error: the disk{where} is full ({e.strerror}); free space there or write elsewhere",
                file=sys.stderr,
            )
        else:
            where = f": {e.filename}" if e.filename else ""
            print(f"kbench: error: {e.strerror}{where}; check the path and its permissions", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
