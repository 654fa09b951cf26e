"""Logging in and out, and the session a page starts from.

The session cookie is HttpOnly (no script reads it) and SameSite=Strict (no
other site's page sends it), Secure under TLS.  The CSRF token comes back in
the JSON only: the page sends it as X-CSRF-Token with every change, which a
page of another origin cannot read, so cannot send.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from edgetts.daemon.inbound.http.access import Session
from edgetts.daemon.inbound.http.common import Console, Problem, console, json_object
from edgetts.daemon.inbound.http.gate import COOKIE


def _with_cookie(c: Console, body: dict[str, object], sid: str | None) -> JSONResponse:
    response = JSONResponse(body, headers={"cache-control": "no-store"})
    if sid is None:
        response.delete_cookie(COOKIE, path="/", secure=c.tls, httponly=True, samesite="strict")
    else:
        response.set_cookie(
            COOKIE, sid, max_age=int(c.settings.session_ttl_s), path="/", secure=c.tls, httponly=True, samesite="strict"
        )
    return response


def _body(c: Console, session: Session | None, auth: str | None) -> dict[str, object]:
    return {
        "auth_required": not c.access.credentials.open,
        "authenticated": auth is not None,
        "csrf": None if session is None else session.csrf,
        "how": auth,
    }


async def session(request: Request) -> Response:
    """The page's first call: who it is, and its CSRF token (open mode: a session made on the spot)."""
    c = console(request)
    auth = request.scope.get("edgetts.auth")
    held = request.scope.get("edgetts.session")
    if held is not None:
        return _with_cookie(c, _body(c, held[1], auth), held[0])
    if auth == "open":
        sid, new = c.access.new_session()
        return _with_cookie(c, _body(c, new, "session"), sid)
    return JSONResponse(_body(c, None, auth), headers={"cache-control": "no-store"})


async def login(request: Request) -> Response:
    c = console(request)
    client = request.client.host if request.client else "?"
    wait = c.access.wait_s(client)
    if wait > 0:  # refused unread: the back-off holds for a right password too
        raise Problem(429, f"too many failed logins: wait {wait:.0f} s", retry_after=int(wait) + 1)
    obj = await json_object(request)
    password = obj.get("password")
    if not isinstance(password, str) or set(obj) != {"password"}:
        raise Problem(400, 'expected {"password": "..."}')
    if c.access.credentials.password is None:
        raise Problem(400, "no password is configured (http/password_file)")
    made = c.access.login(client, password)
    if made is None:
        raise Problem(401, "wrong password")
    sid, new = made
    return _with_cookie(c, _body(c, new, "session"), sid)


async def logout(request: Request) -> Response:
    c = console(request)
    held = request.scope.get("edgetts.session")
    if held is not None:
        c.access.end(held[0])
    return _with_cookie(c, {"authenticated": False}, None)


__all__ = ["login", "logout", "session"]
