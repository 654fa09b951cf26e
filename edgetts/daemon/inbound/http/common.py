"""What every handler of the console shares: its state, errors as JSON, bodies read within the limits."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse

from edgetts.config import HttpSettings
from edgetts.daemon.admission.intake import PayloadError, decode_json, prescan
from edgetts.daemon.inbound.http.access import Access
from edgetts.daemon.inbound.http.gate import BodyTooLarge

if TYPE_CHECKING:
    from edgetts.daemon.inbound.http.feed import FeedPump


class Problem(Exception):
    """A request that cannot be served: answered ``{"error": reason}`` with ``status``."""

    def __init__(self, status: int, reason: str, **more: Any) -> None:
        super().__init__(reason)
        self.status, self.reason, self.more = status, reason, more


async def problem_response(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, Problem)
    headers = {"cache-control": "no-store"}
    if "retry_after" in exc.more:
        headers["retry-after"] = str(exc.more["retry_after"])
    return JSONResponse({"error": exc.reason, **exc.more}, status_code=exc.status, headers=headers)


@dataclass
class Console:
    """One console's state; touched only on its event loop's thread (the daemon's state is the loop's)."""

    ctx: Any
    """The daemon's edgetts.daemon.inbound.services.ServiceContext (not imported: services imports this package)."""
    settings: HttpSettings
    access: Access
    pump: FeedPump
    tls: bool = False
    tts_open: int = 0
    """/api/tts and /api/tts/batch requests being synthesized now."""
    loop: asyncio.AbstractEventLoop | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def console(request: Request) -> Console:
    return request.app.state.console  # type: ignore[no-any-return]


async def read_body(request: Request) -> bytes:
    try:
        return await request.body()
    except ClientDisconnect:  # gone before its body was all here: nobody to answer, nothing to log
        raise Problem(400, "the client went away") from None
    except BodyTooLarge:
        raise Problem(413, f"request body over {console(request).settings.max_body_bytes} bytes") from None


async def json_object(request: Request) -> dict[str, Any]:
    """The body as a JSON object (nesting and number sizes checked first, as for MQTT); 400 otherwise."""
    body = await read_body(request)
    try:
        text = body.decode("utf-8")
        prescan(body)
        obj = decode_json(text)
    except UnicodeDecodeError:
        raise Problem(400, "body is not UTF-8") from None
    except PayloadError as exc:
        raise Problem(400, str(exc)) from None
    if not isinstance(obj, dict):
        raise Problem(400, "a JSON object is expected")
    return obj


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


__all__ = ["Console", "Problem", "console", "json_object", "problem_response", "read_body"]
