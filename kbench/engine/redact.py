"""Secrets never leave the process: redaction of configs, command lines and free text.

Which keys are secret is decided by the one secret rule, :func:`kbench.kafka.secret.is_secret_property`
(defined in C and shared with the librdkafka config path); the value of a secret key is replaced by
:data:`REDACTED`.  :class:`Scrubber` also removes the secret *values* from any text (error messages,
logs, the saved command line) in case a library echoes them: as the value of its key
(``sasl.password=v``) or of a URL at any length, elsewhere only as a whole word of at least
:data:`~kbench.kafka.secret.MIN_SCRUB_LEN` characters.

Credentials in URLs (``--broker-metrics http://user:pw@host:port/metrics``, a plan's
``[transport] broker_metrics``, a URL quoted in a log line) are the same kind of secret, by the one
URL rule :func:`kbench.kafka.secret.redact_url_credentials`: every string :func:`redact`,
:func:`redact_argv` and :class:`Scrubber` hand back has them replaced, and their values are
scrubbed from free text like the values of secret properties.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kbench.kafka.secret import MIN_SCRUB_LEN, REDACTED, is_secret_property, redact_url_credentials, url_credentials

__all__ = [
    "REDACTED",
    "Scrubber",
    "is_secret_property",
    "redact",
    "redact_argv",
    "redact_url_credentials",
    "secret_values",
]


def _is_secret_key(key: object) -> bool:
    return isinstance(key, str) and is_secret_property(key)


def redact(obj: Any) -> Any:
    """A copy of ``obj`` (nested dicts/lists) with the values of secret keys and the credentials
    of URLs (in any string) replaced."""
    if isinstance(obj, Mapping):
        return {k: (REDACTED if _is_secret_key(k) else redact(v)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact(v) for v in obj]
    if isinstance(obj, str):
        return redact_url_credentials(obj)
    return obj


def secret_values(obj: Any) -> set[str]:
    """Every value held under a secret key anywhere in ``obj`` (as strings), and every credential
    of a URL in any string of it."""
    out: set[str] = set()
    if isinstance(obj, str):
        return url_credentials(obj)
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            if _is_secret_key(k) and not isinstance(v, (Mapping, list, tuple)):
                if str(v):
                    out.add(str(v))
                out |= url_credentials(str(v))
            else:
                out |= secret_values(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            out |= secret_values(v)
    return out


def _secret_value_at(arg: str) -> int | None:
    """Index of the ``=`` after which a command-line argument holds a secret value, or None.

    Understands ``key=value``, ``-Xkey=value`` and ``--option=key=value``."""
    start = 0
    for i, ch in enumerate(arg):
        if ch != "=":
            continue
        key = arg[start:i]
        if start == 0:
            key = key[2:] if key.startswith("-X") else key.lstrip("-")
        if is_secret_property(key):
            return i
        start = i + 1
    return None


def redact_argv(argv: Iterable[str]) -> list[str]:
    """A command line with ``key=value`` secrets (``-X sasl.password=...``, ``-Xssl.key.pem=...``) and
    the credentials of URLs (``--broker-metrics http://user:pw@host/metrics``) redacted."""
    out: list[str] = []
    for a in argv:
        at = _secret_value_at(a)
        out.append(redact_url_credentials(a) if at is None else f"{a[: at + 1]}{REDACTED}")
    return out


#: ``key=value`` and ``"key": "value"`` in free text (a library echoing its config, a JSON text):
#: the value is redacted when the key is secret, whatever the value's length.
_KEY_VALUE = re.compile(r"(?P<key>[A-Za-z0-9_.\-]+)(?P<sep>=|\"\s*:\s*\")(?P<value>[^\s\"',;&]+)")


def _redact_key_values(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        return f"{m['key']}{m['sep']}{REDACTED}" if is_secret_property(m["key"]) else m[0]

    return _KEY_VALUE.sub(one, text) if "=" in text or '":' in text else text


@dataclass(frozen=True)
class Scrubber:
    """Removes known secret values from text: as values of their keys and of URLs always, and as
    whole words elsewhere when at least ``MIN_SCRUB_LEN`` characters long (never as a substring
    of an unrelated word: a password ``json`` leaves the corpus ``json`` alone)."""

    values: frozenset[str] = frozenset()

    @classmethod
    def of(cls, *objs: Any) -> Scrubber:
        vals: set[str] = set()
        for o in objs:
            vals |= secret_values(o)
        # a value with quotes, backslashes or newlines also appears JSON-escaped in logs and JSON texts
        forms = vals | {json.dumps(v)[1:-1] for v in vals}
        return cls(frozenset(v for v in forms if len(v) >= MIN_SCRUB_LEN))

    def __call__(self, text: str) -> str:
        text = _redact_key_values(redact_url_credentials(text))
        for v in sorted(self.values, key=len, reverse=True):
            if v in text:
                text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(v)}(?![A-Za-z0-9])", REDACTED, text)
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
