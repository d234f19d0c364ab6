"""Argument types and option shapes shared by the commands (the grammar of docs/cli.md)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kbench.model.corpus import DEFAULT_SIZE, FORMATS
from kbench.model.units import SIZE_RULE, parse_size

__all__ = [
    "SIZE_HELP",
    "add_client_props",
    "add_corpus",
    "add_json",
    "add_list",
    "add_output",
    "key_value",
    "listed",
    "size",
    "sizes",
]

#: Appended to the help of every size option.
SIZE_HELP = f"sizes: {SIZE_RULE}"


def key_value(flag: str, example: str) -> Callable[[str], tuple[str, str]]:
    """The one argparse ``type`` for ``key=value`` (``-X``, ``--topic-config``, ``--broker-config``):
    the key's surrounding whitespace is dropped, the value is kept verbatim (a secret may hold
    spaces); the error names ``flag`` and ``example`` (e.g. ``-X``, ``linger.ms=5``)."""

    def parse(text: str) -> tuple[str, str]:
        k, sep, v = text.partition("=")
        if not sep or not k.strip():
            raise argparse.ArgumentTypeError(f"{flag} '{text}': write {flag} key=value (e.g. {flag} {example})")
        return k.strip(), v

    return parse


def add_client_props(p: argparse.ArgumentParser, help: str) -> argparse.Action:
    """``-X KEY=VALUE`` (repeatable): client properties, as a list of ``(key, value)`` in ``props``."""
    return p.add_argument(
        "-X",
        dest="props",
        type=key_value("-X", "linger.ms=5"),
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"{help} (repeat, one pair each)",
    )


def add_corpus(p: argparse.ArgumentParser, *, many: Sequence[str] = (), sized: bool = True) -> None:
    """The corpus options, the same in every command that takes a corpus: ``--corpus`` (one, or a
    list defaulting to ``many``), ``--corpus-format`` and, unless the command sizes the corpus
    itself (``sized=False``: advise), ``--corpus-size`` with the one default (kbench.model.corpus)."""
    what = "json, logs, random (built in) or a file of records"
    if many:
        add_list(p, "--corpus", help=f"corpora: {what} (default {','.join(many)})")
    else:
        p.add_argument("--corpus", default="json", help=f"{what} (default json)")
    p.add_argument(
        "--corpus-format",
        default="lines",
        choices=FORMATS,
        help="how a corpus file holds records: one per line, or 4-byte length-prefixed (default lines)",
    )
    if sized:
        default = f"{DEFAULT_SIZE >> 20}MiB"
        p.add_argument(
            "--corpus-size", default=default, help=f"bytes of a built-in corpus (default {default}; {SIZE_HELP})"
        )


def listed(text: str) -> list[str]:
    """An argparse ``type`` for a list option (with ``action="extend"``): ``a,b`` is two items, and
    repeating the option adds more (``--codec none,lz4 --codec zstd:3`` = three)."""
    return [t.strip() for t in text.split(",") if t.strip()]


def add_list(p: argparse.ArgumentParser, *flags: str, help: str, **kw: Any) -> argparse.Action:
    """A list option: repeatable and comma-separated, the same everywhere.  Its value is None when
    not given (the command applies its default), else the items in order."""
    return p.add_argument(
        *flags,
        action="extend",
        type=listed,
        default=None,
        help=f"{help} (repeat the option or separate with commas)",
        **kw,
    )


def size(where: str, text: str | int) -> int:
    """Bytes of one size option's value (kbench.model.units: the one rule)."""
    return parse_size(text, where)


def sizes(where: str, items: Sequence[str] | None, default: Sequence[int]) -> list[int]:
    """Bytes of a list-of-sizes option's items, or ``default`` when it was not given."""
    if items is None:
        return list(default)
    if not items:
        raise ValueError(f"{where} is empty; give e.g. {where} 16KiB,1MiB")
    return [parse_size(t, where) for t in items]


def add_output(p: argparse.ArgumentParser, help: str, *legacy: str, **kw: Any) -> argparse.Action:
    """``-o/--output``: what the command writes.  ``legacy`` spellings (older scripts) stay as hidden
    aliases of the same destination."""
    action = p.add_argument("-o", "--output", type=Path, default=None, help=help, **kw)
    for flag in legacy:
        p.add_argument(flag, dest="output", type=Path, help=argparse.SUPPRESS)
    return action


def add_json(p: argparse.ArgumentParser, what: str) -> argparse.Action:
    """``--json``: the results as one JSON document on stdout (for scripts), status lines on stderr."""
    return p.add_argument(
        "--json", action="store_true", help=f"print {what} as one JSON document on stdout (for scripts)"
    )
