"""One HTTP GET with an overall deadline, a size bound and kbench's own redirect rule.

Used for every network read of a metrics endpoint (``--broker-metrics``).  The deadline covers
everything: connecting, the status line and headers, and the whole body; each socket operation
waits at most what is left of it, so a server that sends one byte a second ends at the deadline,
and the error says so.  Redirects (301, 302, 303, 307, 308) are followed by this module, at most
:data:`MAX_REDIRECTS`, to http(s) only; the ``Authorization`` header goes only to the origin
(scheme, host, port) it was given for, never to another one after a redirect.  A reason phrase
or header quoted in an error is stripped of control characters and shortened.
"""

from __future__ import annotations

import http.client
import socket
import threading
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

from kbench.model.text import terminal_safe

__all__ = ["MAX_REDIRECTS", "HttpError", "Response", "get"]

#: Redirects followed at most.
MAX_REDIRECTS = 5


class HttpError(OSError):
    """The endpoint could not be read within the deadline and bound; one line, no credentials."""


@dataclass(frozen=True)
class Response:
    status: int
    reason: str
    body: bytes


def _origin(p: urllib.parse.SplitResult) -> tuple[str, str, int]:
    return (p.scheme, (p.hostname or "").lower(), p.port or (443 if p.scheme == "https" else 80))


def _left(deadline: float, what: str, timeout: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise HttpError(f"no complete answer within the {timeout:g} s deadline ({what})")
    return left


def _one(
    p: urllib.parse.SplitResult, headers: Mapping[str, str], deadline: float, timeout: float, max_bytes: int
) -> tuple[http.client.HTTPResponse, bytes | None]:
    cls = http.client.HTTPSConnection if p.scheme == "https" else http.client.HTTPConnection
    conn = cls(p.hostname or "", p.port, timeout=_left(deadline, "connecting", timeout))
    path = urllib.parse.urlunsplit(("", "", p.path or "/", p.query, ""))
    watchdog: threading.Timer | None = None
    got = 0

    sock: list[socket.socket] = []  # the connection's socket (http.client drops its own reference early)

    def cut() -> None:  # the deadline: a server trickling bytes is cut off, whatever it sends
        for s in sock:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    try:
        conn.connect()
        if conn.sock is not None:
            sock.append(conn.sock)
        watchdog = threading.Timer(_left(deadline, "connected", timeout), cut)
        watchdog.daemon = True
        watchdog.start()
        conn.request("GET", path, headers=dict(headers))
        resp = conn.getresponse()
        if resp.status in (301, 302, 303, 307, 308):
            return resp, None
        chunks: list[bytes] = []
        while True:
            chunk = resp.read1(65536)
            if not chunk:
                break
            got += len(chunk)
            if got > max_bytes:
                raise HttpError(f"answer over {max_bytes >> 20} MiB")
            chunks.append(chunk)
        _left(deadline, f"body, {got} bytes read", timeout)  # cut by the watchdog: not a whole answer
        return resp, b"".join(chunks)
    except (OSError, http.client.HTTPException) as e:
        if isinstance(e, HttpError):
            raise
        if time.monotonic() >= deadline or isinstance(e, TimeoutError):
            raise HttpError(
                f"no complete answer within the {timeout:g} s deadline ({got} bytes of body read)"
            ) from None
        raise
    finally:
        if watchdog is not None:
            watchdog.cancel()
        conn.close()


def get(url: str, headers: Mapping[str, str], timeout: float, max_bytes: int, auth: str | None = None) -> Response:
    """GET ``url`` (no credentials in it) within ``timeout`` seconds overall; ``auth`` (an
    ``Authorization`` value) is sent to ``url``'s origin only.  Raises :class:`HttpError`."""
    deadline = time.monotonic() + timeout
    p = urllib.parse.urlsplit(url)
    origin = _origin(p)
    for _ in range(MAX_REDIRECTS + 1):
        h = dict(headers)
        if auth is not None and _origin(p) == origin:
            h["Authorization"] = auth
        try:
            resp, body = _one(p, h, deadline, timeout, max_bytes)
        except HttpError:
            raise
        except (OSError, http.client.HTTPException, ValueError) as e:
            raise HttpError(terminal_safe(str(e) or type(e).__name__)) from None
        loc = resp.getheader("Location") or ""
        resp.close()
        if body is not None:
            return Response(resp.status, terminal_safe(resp.reason or ""), body)
        nxt = urllib.parse.urlsplit(urllib.parse.urljoin(urllib.parse.urlunsplit(p), loc))
        if nxt.scheme not in ("http", "https") or not nxt.hostname:
            raise HttpError(f"HTTP {resp.status} redirect to '{terminal_safe(loc)}', not an http(s) URL")
        if nxt.username is not None or nxt.password is not None:
            raise HttpError(f"HTTP {resp.status} redirect to a URL with credentials; not followed")
        p = nxt
    raise HttpError(f"more than {MAX_REDIRECTS} redirects")
