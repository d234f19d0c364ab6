"""The secret rule: which client properties hold secrets, and what replaces their values.

The rule is defined once, in C (``csrc/core/secret.c``), where the librdkafka config path uses
it to scrub librdkafka's own error messages; this module is its only Python face, used by
:mod:`kbench.kafka.drivers` and :mod:`kbench.engine.redact`.

A property (case-insensitive) is secret when its name contains one of :data:`SECRET_WORDS`
(``password``, ``passphrase``, ``secret``) or is, or ends with ``.`` plus, one of
:data:`SECRET_NAMES`: every property librdkafka marks sensitive or the Java client types
``PASSWORD``, plus the locations of private credentials (private key, keystore, keytab, OAuth
assertion).  Public material (``ssl.certificate.pem``, ``ssl.ca.location``,
``ssl.truststore.location``) is not secret.

Inside free text a secret value is replaced only where the whole value appears and only when
it has at least :data:`MIN_SCRUB_LEN` characters; shorter values are still redacted under
their own key, but a one-character secret never blanks every matching character of a text.
"""

from __future__ import annotations

from collections.abc import Mapping

from kbench import _native

__all__ = ["MIN_SCRUB_LEN", "REDACTED", "SECRET_NAMES", "SECRET_WORDS", "is_secret_property", "redact_props"]

REDACTED: str = _native.REDACTED
MIN_SCRUB_LEN: int = _native.SECRET_MIN_SCRUB_LEN
SECRET_NAMES: tuple[str, ...] = _native.SECRET_NAMES
SECRET_WORDS: tuple[str, ...] = _native.SECRET_WORDS


def is_secret_property(name: str) -> bool:
    """Whether the value of client property ``name`` must never be written, logged or printed."""
    return _native.is_secret_property(name)


def redact_props(props: Mapping[str, object]) -> dict[str, str]:
    """A copy of client properties (values as strings) with every secret value replaced."""
    return {k: (REDACTED if is_secret_property(k) else str(v)) for k, v in props.items()}
