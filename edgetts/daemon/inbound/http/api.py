"""The console's JSON API: announce, stop, cancel, and the read-only views.

Like the MQTT callback these only parse and enqueue: an announcement goes to
the loop as its payload bytes (the loop admits it, exactly as from MQTT, and
answers with a Verdict), a stop or cancel as a Control.  What they show is read
from the feed (status, events) and the assets in use (clips, voices, cache).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from typing import Any

import numpy as np
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from edgetts.audio.convert import float_to_int16
from edgetts.audio.wav import wav_bytes
from edgetts.daemon.admission.admit import parse
from edgetts.daemon.admission.intake import PayloadError, decode_json, prescan
from edgetts.daemon.inbound.control import Control, Verdict
from edgetts.daemon.inbound.http.common import Console, Problem, console, dumps, read_body
from edgetts.daemon.playout.clips import ClipError, check_clip_name
from edgetts.vocabulary import NAME_RE

_LOGGER = logging.getLogger(__name__)

VERDICT_TIMEOUT_S = 15.0
"""How long an announcement waits for the loop's verdict before the answer is 503."""

MAX_ID_CHARS = 160


def _json(obj: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(obj, status_code=status, headers={"cache-control": "no-store"})


# ------------------------------------------------------------------ announce


def _split_zone(body: bytes) -> tuple[bytes, str, dict[str, Any] | None]:
    """(payload, zone, object) where zone is `device`, `all` or `group:<name>`; the payload goes on
    unchanged unless it is a JSON object naming a zone (anything unreadable is the loop's to reject)."""
    text = body.decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    if not text.startswith("{"):
        return body, "device", None
    try:
        prescan(body)
        obj = decode_json(body.decode("utf-8"))
    except (PayloadError, UnicodeDecodeError):
        return body, "device", None
    if not isinstance(obj, dict) or "zone" not in obj:
        return body, "device", None
    zone = obj.pop("zone")
    if not isinstance(zone, str) or not (
        zone in ("device", "all") or (zone.startswith("group:") and NAME_RE.match(zone[6:]))
    ):
        raise Problem(400, "zone must be device, all or group:<name>")
    return json.dumps(obj, ensure_ascii=False).encode(), zone, obj


async def _submit(c: Console, payload: bytes) -> Verdict:
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[Verdict] = loop.create_future()

    def settle(verdict: Verdict) -> None:
        if not answer.done():
            answer.set_result(verdict)

    def reply(verdict: Verdict) -> None:  # on the loop's thread: hand over, never block
        loop.call_soon_threadsafe(settle, verdict)

    c.ctx.announce(payload, reply)
    try:
        return await asyncio.wait_for(answer, VERDICT_TIMEOUT_S)
    except asyncio.TimeoutError:
        raise Problem(503, "the daemon did not answer in time") from None


async def announce(request: Request) -> Response:
    c = console(request)
    payload, zone, obj = _split_zone(await read_body(request))
    if zone == "device":
        verdict = await _submit(c, payload)
        if not verdict.accepted:
            raise Problem(400, verdict.reason or "rejected", id=verdict.id)
        out: dict[str, Any] = {"id": verdict.id, "zone": zone}
        if verdict.duplicate:
            out["duplicate"], out["reason"] = True, verdict.reason
        return _json(out, 202)
    assert obj is not None
    # Published to the zone's topic: every device there (this one too, if it is in the zone)
    # admits it from MQTT.  Checked here first, so a bad one is answered 400 and not spread.
    obj.setdefault("id", f"http-{uuid.uuid4().hex[:16]}")
    payload = json.dumps(obj, ensure_ascii=False).encode()
    assets = c.ctx.assets()
    try:
        parse(payload, time.time(), assets)
    except PayloadError as exc:
        raise Problem(400, str(exc), id=str(obj["id"])[:MAX_ID_CHARS]) from None
    prefix = assets.config.mqtt.topic_prefix
    topic = f"{prefix}/all/announce" if zone == "all" else f"{prefix}/group/{zone[6:]}/announce"
    c.ctx.publish(topic, payload, False)
    return _json({"id": obj["id"], "zone": zone, "topic": topic}, 202)


async def stop(request: Request) -> Response:
    await read_body(request)
    console(request).ctx.control(Control("stop", None, "http"))
    return _json({"cmd": "stop"}, 202)


async def cancel(request: Request) -> Response:
    c = console(request)
    ident = request.path_params["id"]
    if not ident or len(ident) > MAX_ID_CHARS:
        raise Problem(400, f"an id is 1-{MAX_ID_CHARS} characters")
    if ident not in _known_ids(c):
        raise Problem(404, "no such announcement queued or playing", id=ident)
    c.ctx.control(Control("cancel", ident, "http"))
    return _json({"cmd": "cancel", "id": ident}, 202)


# ------------------------------------------------------------------ views


def _queue_view(c: Console) -> dict[str, Any]:
    status = c.pump.status or {}
    snapshot = getattr(c.ctx, "queue", None)
    entries = list(snapshot()) if callable(snapshot) else []
    return {"current": status.get("current"), "queue_depth": status.get("queue_depth", len(entries)), "queue": entries}


def _known_ids(c: Console) -> set[str]:
    view = _queue_view(c)
    known = {e["id"] for e in view["queue"]}
    if view["current"]:
        known.add(view["current"])
    return known


async def status(request: Request) -> Response:
    current = console(request).pump.status
    if current is None:
        raise Problem(503, "no status published yet")
    return _json(current)


async def queue(request: Request) -> Response:
    return _json(_queue_view(console(request)))


async def clips(request: Request) -> Response:
    library = console(request).ctx.assets().clips
    out = []
    for name in sorted(library):
        clip = library.get(name)
        if clip is not None:
            out.append({"name": name, "duration_s": round(clip.duration_s, 3), "sample_rate": clip.rate})
    return _json({"clips": out})


async def clip_wav(request: Request) -> Response:
    raw = request.path_params["name"]
    try:
        name = check_clip_name(raw)  # a name, never a path: no "/" "..", no file is opened here
    except ClipError as exc:
        raise Problem(400, str(exc)) from None
    clip = console(request).ctx.assets().clips.get(name)
    if clip is None:
        raise Problem(404, f"no clip {name!r}")
    # what the device plays: the file at the library's rate and loudness gain
    pcm = float_to_int16(np.asarray(clip.audio, dtype=np.float32) * np.float32(clip.gain))
    return Response(
        wav_bytes(pcm, clip.rate),
        media_type="audio/wav",
        headers={"cache-control": "no-store", "content-disposition": f'inline; filename="{name}.wav"'},
    )


async def voices(request: Request) -> Response:
    assets = console(request).ctx.assets()
    out = []
    for name, settings in assets.config.all_voices().items():
        voice = assets.voices.get(name)
        out.append(
            {
                "name": name,
                "default": name == assets.config.voice.name,
                "loaded": voice is not None,
                "sample_rate": None if voice is None else voice.sample_rate,
                "streaming": settings.streaming,
                "error": assets.voice_errors.get(name),
            }
        )
    return _json({"default": assets.config.voice.name, "voices": out})


async def cache(request: Request) -> Response:
    phrases = console(request).ctx.assets().cache
    if phrases is None:
        return _json({"enabled": False})
    s = phrases.stats
    return _json(
        {
            "enabled": True,
            "entries": len(phrases),
            "bytes": phrases.total_bytes,
            "max_bytes": phrases.max_bytes,
            "hits": s.hits,
            "misses": s.misses,
            "writes": s.writes,
            "evictions": s.evictions,
            "corrupt": s.corrupt,
        }
    )


SECRET_KEYS = ("password",)


def redacted(obj: Any) -> Any:
    """``obj`` with every secret value replaced (paths of secret files stay: they tell where, not what)."""
    if isinstance(obj, dict):
        return {k: ("<redacted>" if k in SECRET_KEYS and v is not None else redacted(v)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [redacted(v) for v in obj]
    return obj


async def config(request: Request) -> Response:
    return _json(redacted(console(request).ctx.assets().config.to_dict()))


async def recent(request: Request) -> Response:
    return _json({"events": list(console(request).pump.recent)})


async def events(request: Request) -> Response:
    c = console(request)
    if c.pump.full:
        raise Problem(503, "too many event streams open")

    async def lines() -> Any:
        if c.pump.status is not None:
            yield f"event: status\ndata: {dumps(c.pump.status)}\n\n"
        async for item in c.pump.stream():
            yield ": keep-alive\n\n" if item is None else f"event: {item.kind}\ndata: {dumps(item.payload)}\n\n"

    return StreamingResponse(
        lines(), media_type="text/event-stream", headers={"cache-control": "no-store", "x-accel-buffering": "no"}
    )


__all__ = [
    "announce",
    "cache",
    "cancel",
    "clip_wav",
    "clips",
    "config",
    "events",
    "queue",
    "recent",
    "redacted",
    "status",
    "stop",
    "voices",
]
