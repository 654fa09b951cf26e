"""Is another client using this daemon's MQTT client id?  (Two daemons with one device id.)

Issue 13: two daemons with the same device id take the broker session from
each other in turn: ~21 disconnects each in 45 s, announcements played twice,
and nothing said.  A broker may say so (MQTT 5 reason 0x8E "Session taken
over"); mosquitto 2.0 just closes the old connection, which paho reports as
"Unspecified error".  So a takeover is either that reason code, or
:data:`SHORT_LIMIT` connections in :data:`WINDOW_S` that each ended within
:data:`SHORT_S` of their CONNACK.  Once seen, the daemon backs off
(mqtt/takeover_backoff_s), says why in `degraded: mqtt` and logs it once; the
episode ends when a connection has held for twice the back-off.

Pure bookkeeping: the caller passes the clock (time.monotonic() seconds).
"""

from __future__ import annotations

from dataclasses import dataclass

SESSION_TAKEN_OVER = 0x8E
"""MQTT 5 DISCONNECT reason code."""

SHORT_S = 10.0
"""A connection that ends this soon after its CONNACK looks taken over."""

WINDOW_S = 60.0
SHORT_LIMIT = 3


@dataclass(frozen=True)
class Takeover:
    """A disconnect in a takeover episode."""

    reason: str
    """For `degraded: mqtt` (and the one log line)."""

    first: bool
    """The first disconnect of the episode (log it)."""


class TakeoverWatch:
    """Connects and disconnects of one client id -> whether another client keeps taking its session."""

    def __init__(self, client_id: str, device_id: str, backoff_s: float) -> None:
        self.client_id = client_id
        self.device_id = device_id
        self.backoff_s = backoff_s
        self._connected_at: float | None = None
        self._short: list[float] = []
        self.reason: str | None = None
        """Why the current episode started; None outside an episode."""

    @property
    def in_episode(self) -> bool:
        return self.reason is not None

    def connected(self, now: float) -> None:
        self._connected_at = now

    def disconnected(self, now: float, reason_code: int | None) -> Takeover | None:
        """A connection ended (``reason_code``: the broker's, when it sent one); the episode, if any."""
        since, self._connected_at = self._connected_at, None
        if since is not None and now - since < SHORT_S:
            self._short.append(now)
        self._short = [t for t in self._short if now - t <= WINDOW_S]
        first = self.reason is None
        if reason_code == SESSION_TAKEN_OVER:
            cause = "the broker says another client took the session over"
        elif len(self._short) >= SHORT_LIMIT:
            cause = (
                f"{len(self._short)} connections in {WINDOW_S:g} s ended within {SHORT_S:g} s "
                "of connecting, as when another client takes the session over"
            )
        elif self.reason is not None:
            return Takeover(self.reason, first=False)
        else:
            return None
        if first:
            self.reason = (
                f"client id {self.client_id!r} in use twice: {cause}; is a second daemon "
                f"running with device.id {self.device_id!r}? Reconnecting every "
                f"{self.backoff_s:g} s"
            )
        assert self.reason is not None
        return Takeover(self.reason, first=first)

    def stable(self, now: float) -> bool:
        """Whether the connection has held long enough to end the episode (and ends it)."""
        if self.reason is None or self._connected_at is None:
            return False
        if now - self._connected_at < 2 * self.backoff_s:
            return False
        self.reason = None
        self._short.clear()
        return True


__all__ = ["SESSION_TAKEN_OVER", "SHORT_LIMIT", "SHORT_S", "WINDOW_S", "Takeover", "TakeoverWatch"]
