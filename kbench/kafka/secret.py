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

Credentials in a URL (``http://user:password@host:port/metrics``, ``SASL_SSL://user:pw@h:9``:
everything before the last ``@`` of the authority, as :func:`urllib.parse.urlsplit` reads it) or
in an address without a scheme (``user:pw@host:9``) are secret too, wherever the string appears:
:func:`redact_url_credentials` replaces them with :data:`REDACTED` in any text.

Inside free text a secret value is replaced as the value of its key (``sasl.password=v``,
``"sasl.password": "v"``) and of a URL, and elsewhere only where it is a whole word of at least
:data:`MIN_SCRUB_LEN` characters: a password ``json`` never turns every corpus named ``json``
into ``<redacted>`` (results damaged, and the password revealed by its context).
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping

from kbench import _native

__all__ = [
    "MIN_SCRUB_LEN",
    "REDACTED",
    "SECRET_NAMES",
    "SECRET_WORDS",
    "is_secret_property",
    "redact_props",
    "redact_url_credentials",
    "url_credentials",
]

REDACTED: str = _native.REDACTED
MIN_SCRUB_LEN: int = _native.SECRET_MIN_SCRUB_LEN
SECRET_NAMES: tuple[str, ...] = _native.SECRET_NAMES
SECRET_WORDS: tuple[str, ...] = _native.SECRET_WORDS


#: A URL's scheme and the user information of its authority: up to the last ``@`` before the
#: path, query or fragment (the ``@`` a password may hold unencoded is inside it, as urlsplit reads it).
#: Schemes such as ``SASL_SSL://`` (a bootstrap's listener name) count too.
_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-_]*://)(?P<userinfo>[^\s/?#\"'<>\\]*)@")
#: The same without a scheme (``user:password@host:9`` as a bootstrap or metrics address): a word
#: that starts at a boundary, holds ``:`` and ends at its last ``@`` before a host.
_BARE_USERINFO = re.compile(
    r"(?:(?<=^)|(?<=[\s,=\"'(\[;]))(?P<userinfo>[^\s/?#\"'<>\\,@:=]+:[^\s/?#\"'<>\\,]*)@(?=[A-Za-z0-9\[])"
)


def redact_url_credentials(text: str) -> str:
    """``text`` with the credentials of every URL or address in it replaced: ``http://u:pw@h:1/m``
    becomes ``http://<redacted>@h:1/m``, ``u:pw@h:9`` becomes ``<redacted>@h:9`` (it shows that
    credentials were given, not which)."""
    if "@" not in text:
        return text
    text = _URL_USERINFO.sub(lambda m: f"{m['scheme']}{REDACTED}@", text)
    return _BARE_USERINFO.sub(f"{REDACTED}@", text)


def url_credentials(text: str) -> set[str]:
    """The passwords in the URLs and addresses of ``text``, as written and percent-decoded (user names
    are redacted inside their URLs but not scrubbed from other text: a user name such as "admin" is a
    common word)."""
    out: set[str] = set()
    if "@" not in text:
        return out
    for rx in (_URL_USERINFO, _BARE_USERINFO):
        for m in rx.finditer(text):
            password = m["userinfo"].partition(":")[2]
            if password and password != REDACTED:
                out |= {password, urllib.parse.unquote(password)}
    return out


def is_secret_property(name: str) -> bool:
    """Whether the value of client property ``name`` must never be written, logged or printed."""
    return _native.is_secret_property(name)


def redact_props(props: Mapping[str, object]) -> dict[str, str]:
    """A copy of client properties (values as strings) with every secret value replaced."""
    return {k: (REDACTED if is_secret_property(k) else str(v)) for k, v in props.items()}
