"""Argument types and option shapes shared by the commands (the grammar of docs/cli.md)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kbench.model import limits
from kbench.model.corpus import DEFAULT_SIZE, FORMATS
from kbench.model.paths import atomic_write, check_output_file
from kbench.model.units import SIZE_RULE, parse_size

__all__ = [
    "SIZE_HELP",
    "add_client_props",
    "add_corpus",
    "add_csv",
    "add_json",
    "add_list",
    "add_output",
    "corpus_size",
    "emit_json",
    "key_value",
    "listed",
    "output_file",
    "publish",
    "ready",
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


def corpus_size(args: argparse.Namespace) -> int:
    """Bytes of ``--corpus-size`` (add_corpus's option), within what this machine's memory holds."""
    return limits.check_corpus_size("--corpus-size", size("--corpus-size", args.corpus_size))


def sizes(where: str, items: Sequence[str] | None, default: Sequence[int]) -> list[int]:
    """Bytes of a list-of-sizes option's items, or ``default`` when it was not given."""
    if items is None:
        return list(default)
    if not items:
        raise ValueError(f"{where} is empty; give e.g. {where} 16KiB,1MiB")
    return [parse_size(t, where) for t in items]


#: The one meaning of ``-o/--output`` (docs/cli.md): a directory, made if missing.
OUTPUT_RULE = "-o names a directory (docs/cli.md)"

#: Suffixes that say a file was meant: ``-o sim.csv`` is refused with the file flag to use instead.
FILE_SUFFIXES = frozenset({".csv", ".json", ".bin", ".txt", ".png", ".md", ".html"})


def add_output(p: argparse.ArgumentParser, writes: str, *legacy: str, **kw: Any) -> argparse.Action:
    """``-o/--output DIR``: the directory the command writes ``writes`` into (made if missing), the
    same kind of thing on every command.  ``legacy`` spellings stay as hidden aliases."""
    action = p.add_argument(
        "-o", "--output", type=Path, default=None, metavar="DIR", help=f"directory to write {writes} in", **kw
    )
    for flag in legacy:
        p.add_argument(flag, dest="output", type=Path, help=argparse.SUPPRESS)
    return action


def add_csv(p: argparse.ArgumentParser, what: str) -> argparse.Action:
    """``--csv FILE``: one CSV file, named exactly (the file form beside ``-o DIR``)."""
    return p.add_argument(
        "--csv", type=Path, default=None, metavar="FILE", help=f"write {what} to this CSV file (atomically)"
    )


def _check_output_dir(flag: str, d: Path, file_flag: str | None) -> None:
    other = f", or {file_flag} FILE for one file" if file_flag else ""
    if d.exists() and not d.is_dir():
        raise ValueError(f"{flag} {d}: is not a directory; {OUTPUT_RULE}: give a directory{other}")
    if not d.exists() and d.suffix.lower() in FILE_SUFFIXES:
        raise ValueError(f"{flag} {d}: looks like a file name; {OUTPUT_RULE}: give a directory{other}")
    parent = d.absolute()
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{flag} {d}: cannot be made in {parent}; give a directory in a writable place")


def output_file(args: argparse.Namespace, name: str, file_flag: str | None = None) -> tuple[str, Path] | None:
    """Where the command's result file goes, checked before any work: ``file_flag``'s FILE when
    given (e.g. ``--csv``), else ``-o DIR`` / ``name``; None when neither was given.  Returns the
    flag to name in messages and the path; the directory is made by :func:`ready`."""
    if file_flag is not None:
        f = getattr(args, file_flag.lstrip("-").replace("-", "_"), None)
        if f is not None:
            check_output_file(file_flag, f)
            return file_flag, Path(f)
    d = getattr(args, "output", None)
    if d is None:
        return None
    d = Path(d)
    _check_output_dir("-o", d, file_flag)
    if d.is_dir():
        check_output_file("-o", d / name)
    return "-o", d / name


def ready(path: Path) -> Path:
    """``path`` with its directory made (``-o DIR`` may name a new one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def add_json(p: argparse.ArgumentParser, what: str) -> argparse.Action:
    """``--json``: the results as one JSON document on stdout (for scripts), status lines on stderr."""
    return p.add_argument(
        "--json", action="store_true", help=f"print {what} as one JSON document on stdout (for scripts)"
    )


def emit_json(doc: Any) -> None:
    """The ``--json`` document on stdout (one, indented; non-JSON values as their text)."""
    sys.stdout.write(json.dumps(doc, indent=1, default=str) + "\n")


def publish(
    out: dict[str, Any], result_file: tuple[str, Path] | None, as_json: bool, show: Callable[[dict[str, Any]], None]
) -> None:
    """A client command's result: written whole to its result file (``-o DIR``), then on stdout as
    the ``--json`` document or as ``show`` prints it."""
    if result_file is not None:
        atomic_write(ready(result_file[1]), json.dumps(out, indent=2).encode())
    if as_json:
        emit_json(out)
    else:
        show(out)


def add_cluster_target(p: argparse.ArgumentParser) -> None:
    """--bootstrap and --cluster-dir: the cluster a client command talks to (the one place both are defined)."""
    from kbench.model.paths import default_cluster_dir

    p.add_argument("--bootstrap", help="bootstrap servers (default: the cluster of --cluster-dir)")
    p.add_argument(
        "--cluster-dir",
        type=Path,
        default=None,
        help=f"cluster started by 'kbench cluster up' (default {default_cluster_dir()})",
    )
