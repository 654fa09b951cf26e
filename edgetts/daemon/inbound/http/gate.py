"""The gate every request passes before a handler sees it: rate, size, auth, CSRF.

A plain ASGI middleware (no framework magic), so the order is visible here and
cannot be skipped by a route: 429 (rate) -> 413 (declared size) -> 401 (auth)
-> 403 (CSRF and origin).  A body longer than it said is cut off with 413 while
it is read.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from http.cookies import CookieError, SimpleCookie
from typing import Any

from edgetts.config.http import is_loopback
from edgetts.daemon.inbound.http.access import Access, RateLimit, Session, csrf_ok

_LOGGER = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
COOKIE = "edgetts_session"
CSRF_HEADER = "x-csrf-token"
SAFE_METHODS = frozenset({"GET", "HEAD"})
PUBLIC = frozenset({"/api/session", "/api/login", "/api/openapi.json"})
"""API paths open without a login (the page and its assets are outside /api/ and open too)."""


class BodyTooLarge(Exception):
    """The body went past the limit while it was read."""


async def reply(send: Send, status: int, obj: dict[str, Any], headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    body = json.dumps(obj).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None


def session_id(scope: Scope) -> str | None:
    raw = header(scope, b"cookie")
    if not raw:
        return None
    try:
        cookie = SimpleCookie(raw)
    except CookieError:
        return None
    morsel = cookie.get(COOKIE)
    return None if morsel is None else morsel.value


def _same_origin(scope: Scope) -> bool:
    """A browser's cross-site request names another origin (or says so in Sec-Fetch-Site)."""
    if header(scope, b"sec-fetch-site") in ("cross-site", "same-site"):
        return False
    origin = header(scope, b"origin")
    if origin is None:
        return True
    host = header(scope, b"host") or ""
    return origin.split("://", 1)[-1] == host


def _loopback_host(scope: Scope) -> bool:
    host = header(scope, b"host")
    if host is None:
        return True  # HTTP/1.0 without Host: not a browser
    name = host.rsplit("]", 1)[0].lstrip("[") if host.startswith("[") else host.rsplit(":", 1)[0]
    return is_loopback(name)


class Gate:
    """Wraps the app; marks each passed request with ``scope["edgetts.auth"]`` and its session."""

    def __init__(self, app: App, access: Access, rate: RateLimit, max_body: int) -> None:
        self.app, self.access, self.rate, self.max_body = app, access, rate, max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                return await self.app(scope, receive, send)
            return  # websockets: not served
        problem = self._check(scope)
        if problem is not None:
            status, obj, headers = problem
            return await reply(send, status, obj, headers)
        started = False

        async def send_marking(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, self._limited(receive), send_marking)
        except BodyTooLarge:
            if not started:
                await reply(send, 413, {"error": f"request body over {self.max_body} bytes"})

    def _limited(self, receive: Receive) -> Receive:
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise BodyTooLarge
            return message

        return limited

    def _check(self, scope: Scope) -> tuple[int, dict[str, Any], list[tuple[bytes, bytes]]] | None:
        client = (scope.get("client") or ("?", 0))[0]
        wait = self.rate.hit(client)
        if wait:
            return 429, {"error": "too many requests"}, [(b"retry-after", str(int(wait) + 1).encode())]
        length = header(scope, b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            if not length.isdigit():
                return 400, {"error": "bad Content-Length"}, []
            return 413, {"error": f"request body over {self.max_body} bytes"}, []
        path, method = scope["path"], scope["method"]
        if self.access.credentials.open and not _loopback_host(scope):
            # DNS rebinding: a page of evil.example whose name now resolves to 127.0.0.1 is "same
            # origin" to the browser; without credentials only a loopback Host is served at all
            return 403, {"error": "without credentials only a loopback Host is served"}, []
        if _CONTROL.search(path):
            # never routed: Starlette's route patterns end in `$`, which matches before a final newline
            # ("/api/clips/ding%0A" would serve the clip "ding")
            return 400, {"error": "control character in the path"}, []
        sid = session_id(scope)
        session = self.access.session(sid)
        auth = self._auth(scope, session)
        scope["edgetts.auth"], scope["edgetts.session"] = auth, (sid, session) if session else None
        if not path.startswith("/api/") or path in PUBLIC and method in SAFE_METHODS:
            return None
        if path == "/api/login":
            return None if _same_origin(scope) else (403, {"error": "cross-origin login refused"}, [])
        if auth is None:
            return (
                401,
                {"error": "log in first (POST /api/login) or send Authorization: Bearer <token>"},
                [(b"www-authenticate", b'Bearer realm="edgetts"')],
            )
        if method in SAFE_METHODS or auth == "token":
            return None
        return self._csrf(scope, session)

    def _auth(self, scope: Scope, session: Session | None) -> str | None:
        """ "token", "session", "open" (no credentials configured), or None (not authenticated)."""
        bearer = header(scope, b"authorization")
        if bearer is not None and bearer[:7].lower() == "bearer " and self.access.token_ok(bearer[7:].strip()):
            return "token"
        if session is not None:
            return "session"
        return "open" if self.access.credentials.open else None

    @staticmethod
    def _csrf(scope: Scope, session: Session | None) -> tuple[int, dict[str, Any], list[tuple[bytes, bytes]]] | None:
        # A cookie is sent by the browser on its own, so a cookie alone never changes anything: the
        # page proves it read its session (same origin) by echoing the CSRF token in a header.
        if not _same_origin(scope):
            return 403, {"error": "cross-origin request refused"}, []
        if session is None:
            return 403, {"error": "CSRF token missing: GET /api/session first and send X-CSRF-Token"}, []
        if not csrf_ok(session, header(scope, CSRF_HEADER.encode())):
            return 403, {"error": "CSRF token missing or wrong (X-CSRF-Token)"}, []
        return None


__all__ = ["COOKIE", "CSRF_HEADER", "BodyTooLarge", "Gate", "header", "reply", "session_id"]
