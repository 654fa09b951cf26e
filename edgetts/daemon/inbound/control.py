"""Stop and cancel, from whoever may say so: MQTT `<prefix>/<device>/control`, HTTP, Home Assistant.

``{"cmd": "stop"}`` ends what is playing now (the queued ones play on);
``{"cmd": "cancel", "id": ...}`` ends that announcement, queued or playing;
``{"cmd": "cancel"}`` without an id ends everything queued and playing.  The
loop carries it out (:meth:`edgetts.daemon.playout.play.Playout.control`); each
announcement ended gets a `cancelled` event and its message is acknowledged.

:class:`Verdict` is what a service that announces through the loop (HTTP,
Wyoming) hears back once admission has decided.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from edgetts.daemon.admission.intake import PayloadError, decode_json, escape, prescan

Command = Literal["stop", "cancel"]
COMMANDS: tuple[Command, ...] = get_args(Command)

MAX_CONTROL_BYTES = 4096
"""A control message is a command and an id: anything longer is not one."""


@dataclass(frozen=True)
class Control:
    cmd: Command
    id: str | None = None
    origin: str = "mqtt"
    """Who asked ("mqtt", "http", "homeassistant"...): the `cancelled` event's reason names it."""

    @property
    def reason(self) -> str:
        return f"{'stopped' if self.cmd == 'stop' else 'cancelled'} from {self.origin}"


@dataclass(frozen=True)
class Verdict:
    """Admission's answer to an announcement a service submitted (called once, from the loop)."""

    id: str
    accepted: bool
    """Queued (or a duplicate of one queued, playing or played within the dedup window)."""
    reason: str | None = None
    """As the `rejected`/`expired` event says; for an accepted duplicate, why nothing new was queued."""
    duplicate: bool = False


def parse_control(payload: bytes, origin: str = "mqtt") -> Control:
    """The control message in ``payload``; PayloadError with the reason."""
    if len(payload) > MAX_CONTROL_BYTES:
        raise PayloadError(f"control message too large ({len(payload)} bytes; at most {MAX_CONTROL_BYTES})")
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        raise PayloadError("control message is not UTF-8") from None
    prescan(payload)
    obj = decode_json(text)
    if not isinstance(obj, dict):
        raise PayloadError('control message must be a JSON object like {"cmd": "stop"}')
    unknown = sorted(set(obj) - {"cmd", "id"})
    if unknown:
        raise PayloadError(f"unknown field {escape(unknown[0], 40)!r} in control message")
    cmd, ident = obj.get("cmd"), obj.get("id")
    if cmd not in COMMANDS:
        raise PayloadError(f"cmd must be one of {', '.join(COMMANDS)} (got {escape(repr(cmd), 40)})")
    if ident is not None and (not isinstance(ident, str) or not 1 <= len(ident) <= 128):
        raise PayloadError("id must be a string of 1 to 128 characters")
    if cmd == "stop" and ident is not None:
        raise PayloadError('"stop" takes no id (use "cancel" with the id)')
    return Control(cmd, ident, origin)


__all__ = ["COMMANDS", "MAX_CONTROL_BYTES", "Command", "Control", "Verdict", "parse_control"]
