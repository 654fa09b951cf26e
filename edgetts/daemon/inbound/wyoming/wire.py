"""Reading Wyoming events from a client that may send anything (issue 17).

The `wyoming` package's own reader ends the connection on the first bad line and
reads whatever `data_length`/`payload_length` a header claims.  A server facing the
network needs both bounded and recoverable: a header line that is not a JSON event
gets an `error` event and the next line is read; a header or a length over the
limits cannot be resynchronised (the bytes after it are not known to be a header),
so it gets an `error` event and the connection is closed.  Writing uses the
package's writer, so the bytes are exactly what every Wyoming peer expects.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from wyoming.error import Error
from wyoming.event import Event, async_write_event

from edgetts.errors import EdgeTTSError


class BadEvent(EdgeTTSError):
    """A client sent something that is not a Wyoming event; ``fatal``: the stream cannot go on."""

    def __init__(self, reason: str, fatal: bool = False) -> None:
        super().__init__(reason)
        self.fatal = fatal


@dataclass(frozen=True)
class Limits:
    """What one event may be."""

    header_bytes: int = 65536
    """Longest header line (and data block), bytes."""

    payload_bytes: int = 4194304
    """Largest payload, bytes."""


async def read_event(reader: asyncio.StreamReader, limits: Limits) -> Event | None:
    """The next event, None at the end of the stream; BadEvent for what is not an event.

    ``reader`` must have been made with a limit above ``limits.header_bytes``
    (asyncio's default 64 KiB is enough for the default).
    """
    try:
        line = await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial.strip():
            return None
        raise BadEvent("the stream ended inside an event header", fatal=True) from None
    except asyncio.LimitOverrunError:
        raise BadEvent(f"event header longer than {limits.header_bytes} bytes", fatal=True) from None
    if len(line) > limits.header_bytes:
        raise BadEvent(f"event header longer than {limits.header_bytes} bytes", fatal=True)
    header = _header(line)
    data = header.get("data") or {}
    if not isinstance(data, dict):
        raise BadEvent("`data` is not an object")
    data_length = _length(header, "data_length", limits.header_bytes)
    payload_length = _length(header, "payload_length", limits.payload_bytes)
    try:
        if data_length:
            more = _json_object(await reader.readexactly(data_length), "data block")
            data = {**data, **more}
        payload = await reader.readexactly(payload_length) if payload_length else None
    except asyncio.IncompleteReadError:
        raise BadEvent("the stream ended inside an event", fatal=True) from None
    return Event(type=header["type"], data=data, payload=payload)


def _header(line: bytes) -> dict[str, Any]:
    if not line.strip():
        raise BadEvent("empty event header")
    header = _json_object(line, "event header")
    if not isinstance(header.get("type"), str) or not header["type"]:
        raise BadEvent("event header without a `type`")
    return header


def _json_object(raw: bytes, what: str) -> dict[str, Any]:
    try:
        obj = json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        # A data block is counted in bytes: if it is no JSON the stream is still in step.
        raise BadEvent(f"{what} is not JSON") from None
    if not isinstance(obj, dict):
        raise BadEvent(f"{what} is not a JSON object")
    return obj


def _length(header: dict[str, Any], key: str, top: int) -> int:
    value = header.get(key)
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        # The bytes that follow are of unknown length: nothing after them can be trusted.
        raise BadEvent(f"`{key}` is not a byte count", fatal=True)
    if value > top:
        raise BadEvent(f"`{key}` {value} is over the limit of {top} bytes", fatal=True)
    return value


async def write_event(event: Event, writer: asyncio.StreamWriter) -> None:
    """Send ``event`` (the `wyoming` package's framing); ConnectionError when the client is gone."""
    if writer.is_closing():
        raise ConnectionResetError("client gone")
    await async_write_event(event, writer)


async def send_error(writer: asyncio.StreamWriter, text: str, code: str) -> None:
    """An `error` event; a client already gone is not an error of ours."""
    try:
        await write_event(Error(text=text, code=code).event(), writer)
    except (ConnectionError, OSError):
        pass


__all__ = ["BadEvent", "Limits", "read_event", "send_error", "write_event"]
