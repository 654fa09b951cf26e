"""The console's routes: the API, the page and its assets (all from the package, nothing fetched)."""

from __future__ import annotations

from importlib import resources

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from edgetts.daemon.inbound.http import api, session, tts
from edgetts.daemon.inbound.http.access import RateLimit
from edgetts.daemon.inbound.http.common import Console, Problem, problem_response
from edgetts.daemon.inbound.http.gate import App, Gate
from edgetts.daemon.inbound.http.openapi import document

ASSETS = {"console.js": "text/javascript", "console.css": "text/css", "favicon.svg": "image/svg+xml"}
"""The page's files (edgetts/daemon/inbound/http/static/); a request names one of these or gets 404."""

_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self' blob:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)


def _asset(name: str) -> bytes:
    return (resources.files("edgetts.daemon.inbound.http") / "static" / name).read_bytes()


def _page_headers() -> dict[str, str]:
    return {
        "content-security-policy": _CSP,
        "x-content-type-options": "nosniff",
        "x-frame-options": "DENY",
        "referrer-policy": "no-referrer",
        "cache-control": "no-cache",
    }


async def index(_request: Request) -> Response:
    return Response(_asset("index.html"), media_type="text/html; charset=utf-8", headers=_page_headers())


async def static(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in ASSETS:  # a fixed list: a name, never a path
        raise Problem(404, "no such file")
    return Response(_asset(name), media_type=ASSETS[name], headers=_page_headers())


async def openapi(_request: Request) -> Response:
    return JSONResponse(document())


async def not_found(_request: Request, _exc: Exception) -> Response:
    return JSONResponse({"error": "not found"}, status_code=404)


async def not_allowed(_request: Request, _exc: Exception) -> Response:
    return JSONResponse({"error": "method not allowed"}, status_code=405)


async def crashed(_request: Request, _exc: Exception) -> Response:
    return JSONResponse({"error": "internal error (logged)"}, status_code=500)


ROUTES = [
    Route("/", index, methods=["GET"]),
    Route("/static/{name}", static, methods=["GET"]),
    Route("/api/session", session.session, methods=["GET"]),
    Route("/api/login", session.login, methods=["POST"]),
    Route("/api/logout", session.logout, methods=["POST"]),
    Route("/api/announce", api.announce, methods=["POST"]),
    Route("/api/stop", api.stop, methods=["POST"]),
    Route("/api/announcements/{id:path}", api.cancel, methods=["DELETE"]),
    Route("/api/status", api.status, methods=["GET"]),
    Route("/api/queue", api.queue, methods=["GET"]),
    Route("/api/events", api.events, methods=["GET"]),
    Route("/api/events/recent", api.recent, methods=["GET"]),
    Route("/api/clips", api.clips, methods=["GET"]),
    Route("/api/clips/{name:path}", api.clip_wav, methods=["GET"]),
    Route("/api/voices", api.voices, methods=["GET"]),
    Route("/api/cache", api.cache, methods=["GET"]),
    Route("/api/config", api.config, methods=["GET"]),
    Route("/api/tts", tts.tts, methods=["POST"]),
    Route("/api/tts/batch", tts.batch, methods=["POST"]),
    Route("/api/openapi.json", openapi, methods=["GET"]),
]


def build_app(c: Console) -> App:
    """The app behind its gate (the gate's checks run before any route)."""
    app = Starlette(
        routes=ROUTES, exception_handlers={Problem: problem_response, 404: not_found, 405: not_allowed, 500: crashed}
    )
    app.state.console = c
    return Gate(app, c.access, RateLimit(c.settings.rate_per_min), c.settings.max_body_bytes)


__all__ = ["ASSETS", "ROUTES", "build_app"]
