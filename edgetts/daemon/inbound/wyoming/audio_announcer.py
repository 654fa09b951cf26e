"""Announcement audio from a Wyoming client (`assist_satellite.announce`, issue 17).

Home Assistant renders the announcement itself and sends it as `audio-start` (16 kHz,
16-bit, mono), `audio-chunk`s and `audio-stop`, then waits for `played`.  The audio is
collected (bounded), converted to mono float samples and handed to ``submit``, which
puts it through the daemon's queue as an announcement (priorities, fades, events) and
resolves once it has been played, or with the reason it was not.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import numpy as np
from wyoming.audio import AudioChunk, AudioStart
from wyoming.event import Event
from wyoming.snd import Played

from edgetts.errors import EdgeTTSError

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True)
class Received:
    """One announcement's audio as received."""

    audio: np.ndarray
    """Mono float32 samples in [-1, 1]."""

    sample_rate: int
    """Hertz."""


Submit = Callable[[Received], Awaitable[str | None]]
"""Announce ``Received``; resolves to None once played, else to why it was not."""


class AudioAnnouncer:
    """Where announcement audio goes; ``max_s``: the longest announcement taken, seconds."""

    def __init__(self, submit: Submit, max_s: float = 300.0) -> None:
        self._submit = submit
        self.max_s = max_s

    def begin(self, start: AudioStart) -> AnnouncementAudio:
        if start.width not in (1, 2, 4) or not 1 <= start.channels <= 8 or not 4000 <= start.rate <= 192000:
            raise EdgeTTSError(f"unsupported audio: {start.rate} Hz, {start.width} bytes, {start.channels} channels")
        return AnnouncementAudio(self, start)


_DTYPES = {1: np.uint8, 2: np.int16, 4: np.int32}


class AnnouncementAudio:
    """The chunks of one announcement, from `audio-start` to `audio-stop`."""

    def __init__(self, owner: AudioAnnouncer, start: AudioStart) -> None:
        self._owner = owner
        self._start = start
        self._parts: list[bytes] = []
        self._bytes = 0
        self._frame = start.width * start.channels
        self._max_bytes = int(owner.max_s * start.rate) * self._frame
        self._refused: str | None = None

    def add(self, chunk: AudioChunk) -> None:
        """Keep ``chunk``; one that cannot be kept refuses the whole announcement (said at audio-stop)."""
        if self._refused is not None:
            return
        s = self._start
        if (chunk.rate, chunk.width, chunk.channels) != (s.rate, s.width, s.channels):
            self.discard("audio-chunk format differs from its audio-start")
            return
        self._bytes += len(chunk.audio)
        if self._bytes > self._max_bytes:
            self.discard(f"announcement audio longer than {self._owner.max_s:.0f} s")
            return
        self._parts.append(chunk.audio)

    def discard(self, reason: str = "discarded") -> None:
        """Forget what was received; the rest of it is dropped, and audio-stop answered with ``reason``."""
        self._parts.clear()
        self._refused = reason

    def samples(self) -> Received:
        raw = b"".join(self._parts)
        raw = raw[: len(raw) - len(raw) % self._frame]
        s = self._start
        ints = np.frombuffer(raw, dtype=_DTYPES[s.width])
        if s.width == 1:
            audio = (ints.astype(np.float32) - 128.0) / 128.0
        else:
            audio = ints.astype(np.float32) / float(1 << (8 * s.width - 1))
        if s.channels > 1:
            audio = audio.reshape(-1, s.channels).mean(axis=1)
        return Received(np.ascontiguousarray(audio, dtype=np.float32), s.rate)

    async def play(self) -> Event:
        """Announce the audio; `played` once it has played, EdgeTTSError (an `error` event) if not."""
        if self._refused is not None:
            raise EdgeTTSError(f"announcement refused: {self._refused}")
        received = self.samples()
        if received.audio.size == 0:
            return Played().event()
        why = await self._owner._submit(received)
        if why is not None:
            raise EdgeTTSError(f"announcement not played: {why}")
        return Played().event()


__all__ = ["AudioAnnouncer", "AnnouncementAudio", "Received", "Submit"]
