"""What a mixer is to the ducking worker: things with a level that it may lower and put back.

A level is plain JSON data (a percentage for MPD and Snapcast, one float per channel for a
PulseAudio stream), so what was lowered can be written to the state folder as it is and put
back after a crash.  Each mixer knows its own volume curve: ``lowered(level, db)`` is the level
that sounds ``db`` quieter.
"""

from __future__ import annotations

import socket
from typing import Any, Protocol

Level = Any
"""A mixer's level: an int percentage, or a list of floats (one per channel)."""


class MixerError(Exception):
    """The mixer cannot be reached or refused: the reason, as `degraded: duck` shows it."""


class Mixer(Protocol):
    """One connection to a mixer; used only from its ducking worker's thread."""

    kind: str
    """`pulse`, `mpd` or `snapcast` (the config key)."""

    address: str
    """HOST:PORT, or "" for the sound server this process's environment names."""

    tolerance: float
    """Two levels this close are the same (what the mixer stores is rounded)."""

    def levels(self) -> dict[str, Level]:
        """Every stream, player or client that may be lowered now: its key -> its level."""
        ...

    def set_levels(self, levels: dict[str, Level]) -> None:
        """Set each key's level (a key that is gone meanwhile is skipped)."""
        ...

    def lowered(self, level: Level, db: float) -> Level:
        """``level`` made ``db`` (<= 0) decibels quieter, on this mixer's volume curve."""
        ...

    def close(self) -> None: ...


def _values(level: Level) -> list[float]:
    return [float(v) for v in level] if isinstance(level, list) else [float(level)]


def same(mixer: Mixer, a: Level, b: Level) -> bool:
    """``a`` and ``b`` are one level, as the mixer stores it."""
    va, vb = _values(a), _values(b)
    return len(va) == len(vb) and all(abs(x - y) <= mixer.tolerance for x, y in zip(va, vb))


def on_the_way(mixer: Mixer, level: Level, low: Level, high: Level) -> bool:
    """``level`` lies between ``low`` and ``high`` (each channel): where a fade of ours may have left it."""
    v, lo, hi = _values(level), _values(low), _values(high)
    if not len(v) == len(lo) == len(hi):
        return False
    tol = mixer.tolerance
    return all(a - tol <= x <= b + tol for x, a, b in zip(v, lo, hi))


def read_line(sock: socket.socket, buf: bytes, chunk: int, limit: int, too_long: str) -> tuple[str, bytes]:
    """The next line of a line-based protocol (MPD's, Snapcast's JSON-RPC) and what was read beyond
    it; EOFError when the server closed the connection or a line grows past ``limit`` bytes."""
    while b"\n" not in buf:
        data = sock.recv(chunk)
        if not data:
            raise EOFError("the server closed the connection")
        buf += data
        if len(buf) > limit:
            raise EOFError(too_long)
    line, _, rest = buf.partition(b"\n")
    return line.decode("utf-8", "replace"), rest


def why(exc: BaseException) -> str:
    """A connection's failure as `degraded: duck` says it."""
    if isinstance(exc, socket.timeout):
        return "no answer within the timeout"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc) or type(exc).__name__


def label(kind: str, address: str) -> str:
    """How the status and the log name a mixer: `mpd 127.0.0.1:6600`, `pulse`."""
    return f"{kind} {address}" if address else kind


__all__ = ["Level", "Mixer", "MixerError", "label", "on_the_way", "read_line", "same", "why"]
