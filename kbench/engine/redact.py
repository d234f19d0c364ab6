"""Secrets never leave the process: redaction of configs, command lines and free text.

A key is secret when its name contains ``password`` or ``secret``, or starts with
``sasl.`` (all case-insensitive); the value is replaced by :data:`REDACTED`.
:class:`Scrubber` also removes the secret *values* from any text (error messages,
logs), in case a library echoes them.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["REDACTED", "Scrubber", "is_secret_key", "redact", "redact_argv", "secret_values"]

REDACTED = "<redacted>"
SECRET_PATTERNS: tuple[str, ...] = ("*password*", "*secret*", "sasl.*")


def is_secret_key(key: str) -> bool:
    k = key.lower()
    return any(fnmatch.fnmatchcase(k, p) for p in SECRET_PATTERNS)


def redact(obj: Any) -> Any:
    """A copy of ``obj`` (nested dicts/lists) with the values of secret keys replaced."""
    if isinstance(obj, Mapping):
        return {k: (REDACTED if isinstance(k, str) and is_secret_key(k) else redact(v)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact(v) for v in obj]
    return obj


def secret_values(obj: Any) -> set[str]:
    """Every value held under a secret key anywhere in ``obj`` (as strings)."""
    out: set[str] = set()
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            if isinstance(k, str) and is_secret_key(k) and not isinstance(v, (Mapping, list, tuple)):
                if str(v):
                    out.add(str(v))
            else:
                out |= secret_values(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            out |= secret_values(v)
    return out


def redact_argv(argv: Iterable[str]) -> list[str]:
    """A command line with ``key=value`` secrets (``-X sasl.password=...``) redacted."""
    out: list[str] = []
    for a in argv:
        key, sep, _ = a.partition("=")
        out.append(f"{key}={REDACTED}" if sep and is_secret_key(key.lstrip("-")) else a)
    return out


@dataclass(frozen=True)
class Scrubber:
    """Removes known secret values from text."""

    values: frozenset[str] = frozenset()

    @classmethod
    def of(cls, *objs: Any) -> Scrubber:
        vals: set[str] = set()
        for o in objs:
            vals |= secret_values(o)
        return cls(frozenset(v for v in vals if len(v) >= 1))

    def __call__(self, text: str) -> str:
        for v in sorted(self.values, key=len, reverse=True):
            text = text.replace(v, REDACTED)
        return text

    def deep(self, obj: Any) -> Any:
        """Redact secret keys, then scrub secret values from every string left."""
        obj = redact(obj)
        if isinstance(obj, Mapping):
            return {k: self.deep(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [self.deep(v) for v in obj]
        if isinstance(obj, str):
            return self(obj)
        return obj
