"""``kbench codecs``: the codecs this build supports and the library versions it links."""
from __future__ import annotations

import argparse

from kbench import codecs


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("codecs", help="list codecs and codec library versions", description=__doc__)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    print("codecs:", ", ".join(codecs.available()))
    for k, v in codecs.library_versions().items():
        print(f"{k:<8} {v}")
    return 0
