"""The seed articles' claims and the experiments that bear on them (``kbench/data/claims.toml``,
the one place this mapping is defined); verdicts measured on the development machine are in
``docs/claims.md`` under the same ids."""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources

__all__ = ["Claim", "bearing_on", "load"]


@dataclass(frozen=True)
class Claim:
    id: str
    seed: str
    topic: str  # without numbers: what a report prints (reports print no number that is not measured)
    claim: str
    experiments: tuple[str, ...]


def load() -> list[Claim]:
    data = tomllib.loads(resources.files("kbench").joinpath("data/claims.toml").read_text())
    return [Claim(c["id"], c["seed"], c["topic"], c["claim"], tuple(c["experiments"])) for c in data["claim"]]


def bearing_on(experiments: Iterable[str]) -> list[Claim]:
    """The claims at least one of ``experiments`` bears on, in file order."""
    have = set(experiments)
    return [c for c in load() if have & set(c.experiments)]
