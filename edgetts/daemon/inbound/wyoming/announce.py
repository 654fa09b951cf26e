"""Announcement audio from Wyoming into the daemon's queue, and the wait for its end (issue 17).

The audio goes to the loop as an announcement of its own id (``ServiceContext.announce_audio``):
admitted like an MQTT message (its events on the events topic), queued by priority, played
with the usual fades.  `played` is sent once its `finished` event is out; a `rejected`,
`expired`, `failed` or `cancelled` one becomes an `error` event with its reason.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import uuid
from collections.abc import Callable
from typing import Any

from edgetts.daemon.inbound.ready_audio import ReadyAudio
from edgetts.daemon.inbound.wyoming.audio_announcer import AudioAnnouncer, Received

_LOGGER = logging.getLogger(__name__)

#: The label its events and logs show (the audio itself is what plays).
LABEL = "Wyoming announcement"

_ENDED = {"finished": None, "failed": "failed", "cancelled": "cancelled", "expired": "expired", "rejected": "rejected"}

#: Longest wait for its end, seconds: the default time to live and then some.
_MAX_WAIT_S = 900.0


def announcer_for(ctx: Any, loop: Callable[[], asyncio.AbstractEventLoop | None]) -> AudioAnnouncer | None:
    """Where a session's announcement audio goes; None when the context has no loop to play it."""
    if getattr(ctx, "announce_audio", None) is None:
        return None

    async def submit(received: Received) -> str | None:
        return await _announce(ctx, received)

    return AudioAnnouncer(submit)


async def _announce(ctx: Any, received: Received) -> str | None:
    running = asyncio.get_running_loop()
    ident = f"wyoming-{uuid.uuid4().hex[:16]}"
    verdict: asyncio.Future[Any] = running.create_future()

    def settle(v: Any) -> None:
        if not verdict.done():
            verdict.set_result(v)

    def reply(v: Any) -> None:  # on the daemon loop's thread: hand over, never block
        running.call_soon_threadsafe(settle, v)

    sub = ctx.feed.subscribe()  # before announcing: its end cannot slip past
    gone = threading.Event()
    try:
        payload = json.dumps({"id": ident, "text": LABEL}).encode("utf-8")
        ctx.announce_audio(payload, ReadyAudio(received.audio, received.sample_rate), reply)
        answer = await asyncio.wait_for(verdict, 30.0)
        if not answer.accepted:
            return str(answer.reason or "rejected")
        return await asyncio.to_thread(_wait_end, sub, ident, gone)
    except asyncio.TimeoutError:
        return "no answer from the daemon's loop"
    finally:
        gone.set()  # a client that left stops the wait; the announcement itself still plays
        sub.close()


def _wait_end(sub: Any, ident: str, gone: threading.Event) -> str | None:
    waited = 0.0
    while not gone.is_set() and waited < _MAX_WAIT_S:
        item = sub.get(timeout=0.5)
        if item is None:
            waited += 0.5
            continue
        payload = item.payload
        if item.kind == "event" and payload.get("id") == ident and payload.get("event") in _ENDED:
            what = _ENDED[payload["event"]]
            return None if what is None else f"{what}: {payload.get('reason') or ''}".rstrip(": ")
    return "no end of the announcement seen"


__all__ = ["LABEL", "announcer_for"]
