"""One announcement's audio on its way to the device, where it has got to, and the loop that plays it."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from edgetts.audio.convert import Converter
from edgetts.audio.timed_start import TimedStart

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
        self.timed: TimedStart | None = None
        """Set before submit: the first sample is heard at ``timed.at_unix`` (edgetts.audio.timed_start)."""
        # Speech and a fallback clip race for the job (issue 6): whoever comes first under
        # the lock wins, so a late sentence never follows the clip that replaced it.
        self._lock = threading.Lock()
        self._speech_fed = False
        self._closed = False
        self.taken_over = False
        """True once a fallback clip replaced (or ended) the speech; later feeds are dropped."""
        # Held for the engine's lead (issue 14): the first speech piece with a lead (``_hold_piece``,
        # by the identity of its samples) is not heard before ``_hold_until``; until the audio thread
        # begins it, a deadline fallback may still void the speech fed so far (``_speech_ids``).
        self._hold_until: float | None = None
        self._hold_piece: int | None = None
        self._speech_begun = False
        self._speech_ids: set[int] = set()
        self._void: frozenset[int] = frozenset()
        self._generation = 0

    # producer side
    def feed(
        self,
        audio: np.ndarray,
        rate: int,
        position: Position,
        *,
        speech: bool = False,
        gain: float = 1.0,
        lead_s: float = 0.0,
    ) -> bool:
        """Queue audio at its level ``gain``; ``speech`` marks synthesized speech (a deadline fallback
        then no longer applies, unless that speech is held and not yet begun).

        ``lead_s`` (the engine's AudioChunk.lead_s): the first speech piece with one is held: it is
        heard no earlier than ``lead_s`` from now (audio queued ahead of it, a chime, plays
        meanwhile and so counts towards the wait), unless the job ends first.  A later piece's
        ``lead_s`` extends a hold that has not ended yet to at least that long from now (the
        engine learned the text needs more buffering before anything was heard).
        False when the job was taken over by a fallback or has ended: stop producing.
        """
        samples = self.converter.resample(audio, rate)
        with self._lock:
            if self._closed:
                return False
            if speech and not self._speech_begun:
                if lead_s > 0 and not self._speech_fed:
                    self._hold_until = time.monotonic() + lead_s
                    self._hold_piece = id(samples)
                elif lead_s > 0 and self._hold_until is not None:
                    self._hold_until = max(self._hold_until, time.monotonic() + lead_s)
                if self._hold_piece is not None:
                    self._speech_ids.add(id(samples))
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
        self,
        audio: np.ndarray,
        rate: int,
        position: Position,
        *,
        before_speech: bool,
        times: int = 1,
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
            if self._closed or (before_speech and self._speech_committed()):
                return False
            if before_speech and self._speech_fed:
                # Held speech not heard yet: the clip replaces it (the deadline is about what the
                # listener hears).  The audio thread drops the void pieces, whether queued or in hand.
                self._void = frozenset(self._speech_ids)
                self._hold_piece = self._hold_until = None
                self._generation += 1
            self._closed = self.taken_over = True
            for n in range(max(1, times)):
                self._pieces.put((samples, (position[0] + n, position[1]), gain))
            self._pieces.put(JobEnd())
        return True

    @property
    def speech_fed(self) -> bool:
        with self._lock:
            return self._speech_fed

    def _speech_committed(self) -> bool:
        return self._speech_fed and (self._speech_begun or self._hold_piece is None)

    @property
    def speech_committed(self) -> bool:
        """Speech was fed and will be heard: it is not held, or the audio thread has begun it.
        Until then a deadline fallback (``take_over(before_speech=True)``) still wins."""
        with self._lock:
            return self._speech_committed()

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
    @property
    def generation(self) -> int:
        """Bumped when a fallback voided held speech: drop what :meth:`is_void` says from what is in hand."""
        return self._generation

    def is_void(self, piece: Piece) -> bool:
        return id(piece[0]) in self._void

    def hold(self) -> tuple[int, float] | None:
        """(identity of the held piece's samples, monotonic time it may be heard), until it is begun."""
        with self._lock:
            if self._speech_begun or self._hold_piece is None or self._hold_until is None:
                return None
            return self._hold_piece, self._hold_until

    def begin(self, generation: int) -> bool:
        """The audio thread is about to write the held piece; False when a fallback voided the
        speech since ``generation`` (drop the void pieces and go on)."""
        with self._lock:
            if generation != self._generation:
                return False
            self._speech_begun = True
            self._speech_ids.clear()
            return True

    def next_piece(self, timeout: float) -> Piece | JobEnd | None:
        """The next piece or the end marker, waiting up to ``timeout`` seconds; None if none came
        (or it was void)."""
        try:
            item = self._pieces.get(timeout=timeout)
        except queue.Empty:
            return None
        if self._void and not isinstance(item, JobEnd) and self.is_void(item):
            return None
        return item


Outcome = tuple[str, str | None]
"""How a job's play ended: finished | failed | stopped, and the failure's reason."""


class Stage(Protocol):
    """A job's samples between its queue and the device (edgetts.audio.player._Stage): what the loop needs."""

    avail: int
    fade_n: int
    barrier: int | None
    timed: bool
    sync_error_ms: float | None
    late_ms: float

    def add(self, piece: Piece) -> None: ...
    def take(self, n: int) -> tuple[np.ndarray, Position, float | np.ndarray]: ...
    def emit(self, samples: np.ndarray, pos: Position, gain: float | np.ndarray) -> None: ...
    def drop(self, void: Callable[[Piece], bool]) -> None: ...
    def fade_out_preempted(self) -> None: ...
    def play_tail(self, end: JobEnd) -> None: ...


class JobRun:
    """The loop a job is played by on the audio thread, untimed (edgetts.audio.player) or timed
    (edgetts.audio.timeline): before each :meth:`turn`, a preemption fades out what is in hand (the
    job `stopped`) and a deadline fallback that voided held speech has it dropped from the stage."""

    def __init__(self, job: PlaybackJob, stage: Stage) -> None:
        self.job, self.stage = job, stage
        self.end: JobEnd | None = None
        """The end marker, once it came: the producer finished or failed."""
        self.generation = job.generation
        """The job's generation the stage's pieces are of (see :attr:`PlaybackJob.generation`)."""

    def run(self) -> Outcome:
        job, stage = self.job, self.stage
        self.generation = job.generation
        while True:
            if job.stop_requested:
                stage.fade_out_preempted()
                return "stopped", None
            if job.generation != self.generation:  # a deadline fallback voided the held speech
                stage.drop(job.is_void)
                self.generation = job.generation
            if self.turn():
                assert self.end is not None
                return ("failed", self.end.reason) if self.end.reason is not None else ("finished", None)

    def turn(self) -> bool:
        """Move the job on a step (write, wait or pull); True once it has played its end marker's tail."""
        raise NotImplementedError

    def pull(self, timeout: float) -> bool:
        """The next piece into the stage, waiting up to ``timeout`` seconds (the end marker, if that
        came, is kept in :attr:`end`); True when a piece was added."""
        item = self.job.next_piece(timeout)
        if isinstance(item, JobEnd):
            self.end = item
            return False
        if item is None:
            return False
        self.stage.add(item)
        return True
