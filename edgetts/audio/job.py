"""One announcement's audio on its way to the device, and where it has got to."""

from __future__ import annotations

import queue
import threading
from typing import Any

import numpy as np

from edgetts.audio.convert import Converter

#: Position of a piece of audio: (repeat index, sentence index); sentence -1 = chime.
Position = tuple[int, int]


class JobEnd:
    """The marker after a job's last piece: the producer finished (``reason`` None) or failed."""

    def __init__(self, reason: str | None = None) -> None:
        self.reason = reason  # None = finished normally, else the failure


Piece = tuple[np.ndarray, Position, float]
"""Mono float32 samples at the job's device rate, what they are, and their level gain (a voice's or a
clip's loudness gain), which the converter applies with the job's gain when it makes device frames."""


class PlaybackJob:
    """One announcement's audio on its way to the device.

    The producer calls :meth:`feed` (audio at any rate) then :meth:`end` or
    :meth:`fail`; the daemon may call :meth:`stop` (preemption).  The audio
    thread consumes it (:meth:`next_piece`) and reports through the player's
    callback.  No one scales the samples on the way: each piece carries its
    level gain, and the converter applies it times ``gain`` once (issue 12).
    """

    def __init__(self, token: Any, converter: Converter, gain: float) -> None:
        self.token = token
        self.converter = converter
        self.gain = gain
        """The job's gain (audio.volume x the announcement's volume)."""
        self._pieces: queue.SimpleQueue[Piece | JobEnd] = queue.SimpleQueue()
        self._stop = threading.Event()
        self.position: Position = (0, 0)
        """What is playing now (written by the audio thread)."""
        self.first_audio_mono: float | None = None
        # Speech and a fallback clip race for the job (issue 6): whoever comes first under
        # the lock wins, so a late sentence never follows the clip that replaced it.
        self._lock = threading.Lock()
        self._speech_fed = False
        self._closed = False
        self.taken_over = False
        """True once a fallback clip replaced (or ended) the speech; later feeds are dropped."""

    # producer side
    def feed(self, audio: np.ndarray, rate: int, position: Position, *, speech: bool = False,
             gain: float = 1.0) -> bool:
        """Queue audio at its level ``gain``; ``speech`` marks synthesized speech (a deadline fallback
        then no longer applies).

        False when the job was taken over by a fallback or has ended: stop producing.
        """
        samples = self.converter.resample(audio, rate)
        with self._lock:
            if self._closed:
                return False
            self._speech_fed = self._speech_fed or speech
            self._pieces.put((samples, position, gain))
        return True

    def end(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._pieces.put(JobEnd())

    def fail(self, reason: str) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._pieces.put(JobEnd(reason))

    def take_over(
        self, audio: np.ndarray, rate: int, position: Position, *, before_speech: bool, times: int = 1,
        gain: float = 1.0,
    ) -> bool:
        """Play ``audio`` (a fallback clip, at its level ``gain``) ``times`` times and end the job;
        False if too late.

        ``before_speech``: only while no speech was fed (the deadline); else the
        clip follows whatever already played (a synthesis error mid-way).  The
        n-th play has position (``position[0]`` + n, ``position[1]``): the clip
        stands in for each repetition of the announcement still to come.
        """
        samples = self.converter.resample(audio, rate)
        with self._lock:
            if self._closed or (before_speech and self._speech_fed):
                return False
            self._closed = self.taken_over = True
            for n in range(max(1, times)):
                self._pieces.put((samples, (position[0] + n, position[1]), gain))
            self._pieces.put(JobEnd())
        return True

    @property
    def speech_fed(self) -> bool:
        with self._lock:
            return self._speech_fed

    @property
    def closed(self) -> bool:
        """end(), fail() or take_over() happened: nothing more will be fed."""
        with self._lock:
            return self._closed

    # daemon side
    def stop(self) -> None:
        """Fade out within preempt_fade_ms and end the job as `stopped`."""
        self._stop.set()

    @property
    def stop_requested(self) -> bool:
        return self._stop.is_set()

    # audio thread side
    def next_piece(self, timeout: float) -> Piece | JobEnd | None:
        """The next piece or the end marker, waiting up to ``timeout`` seconds; None if none came."""
        try:
            return self._pieces.get(timeout=timeout)
        except queue.Empty:
            return None
