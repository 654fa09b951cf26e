"""A message as any front door hands it to the loop, not parsed yet: MQTT, HTTP or Wyoming.

Only a broker's message has something to acknowledge (its packet id, once its announcement has
ended); a message from the console or a Wyoming client has none, and says so with ``ack=None``
instead of borrowing a packet id it never had.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from edgetts.daemon.inbound.control import Verdict
from edgetts.daemon.inbound.ready_audio import ReadyAudio

_SERIALS = itertools.count(1)


@dataclass(frozen=True)
class AckHandle:
    """What acknowledging one message received from the broker needs."""

    mid: int
    """The MQTT packet id (the broker reuses it for a redelivery)."""
    qos: int
    generation: int
    """Which paho client received it (a protocol fallback makes a new one)."""


@dataclass(frozen=True)
class Inbound:
    """A message received on an announce or control topic, or from a service, not parsed yet."""

    topic: str
    payload: bytes
    ack: AckHandle | None
    """How to acknowledge it to the broker once its announcement has ended; None: nothing to
    acknowledge (a service's message: HTTP, Wyoming)."""
    dup: bool
    """The broker's DUP flag: a redelivery of a message it may have delivered before."""
    received_at: float
    """Unix seconds."""
    received_mono: float
    """Monotonic seconds."""
    retain: bool = False
    """Delivered from the broker's retained store (on subscribing), not as it was published."""
    reply: Callable[[Verdict], None] | None = None
    """Not from the broker but from a service (HTTP, Wyoming): told admission's verdict."""
    audio: ReadyAudio | None = None
    """The announcement's audio, given by a service (Wyoming announce); None = from its payload."""
    serial: int = field(default_factory=lambda: next(_SERIALS))
    """This process's receipt number: tells apart two messages with the same payload that no broker
    numbered (an id derived from a service's message uses it where an MQTT one uses the packet id)."""

    def acks(self) -> list[AckHandle]:
        """What to acknowledge when its announcement ends: the broker's handle, or nothing."""
        return [] if self.ack is None else [self.ack]

    @property
    def delivery(self) -> str:
        """What one delivery of this message is known by: the same for the broker's redeliveries."""
        return str(self.ack.mid) if self.ack is not None else f"local-{self.serial}"


__all__ = ["AckHandle", "Inbound"]
