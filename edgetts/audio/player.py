"""The audio thread: plays :class:`PlaybackJob` s one after the other on one device.

:class:`Player` owns the device on its own thread: it is handed jobs whose
audio a producer (the synthesis thread) feeds; the audio thread never waits on
MQTT or inference, only on its own job queue, and it alone decides fades.  The
device comes from an injected :data:`StreamFactory` (the daemon passes the
sound card of :mod:`edgetts.daemon.playout.sound_card`; tests a recording stream).

The simple blocking path `edgetts say` uses is :mod:`edgetts.audio.say`.
"""

from __future__ import annotations

import collections
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from edgetts.audio.convert import Converter, DeviceFormat
from edgetts.audio.device import OutputStreamLike, StreamFactory
from edgetts.audio.job import JobEnd, JobRun, Outcome, Piece, PlaybackJob, Position
from edgetts.audio.timed_start import Clocks
from edgetts.audio.timeline import TimedPlay
from edgetts.audio.writer import DeviceWriter
from edgetts.errors import AudioDeviceError
from edgetts.runtime.affinity import pin_audio_thread
from edgetts.vocabulary import BLOCK_FRAMES

TIMED_BLOCK_FRAMES = 256
"""Largest write and device buffer of a timed job (``play_at``): it is placed by the device's queue,
which a larger buffer makes coarser (test_timed_paced: a late joiner 100 ms out at 1024 frames)."""

_LOGGER = logging.getLogger(__name__)

Gain = float | np.ndarray
"""The level gain of samples taken from a job: one number, or one per sample (see Converter.to_bytes)."""


@dataclass(frozen=True)
class PlayerSettings:
    """What the audio thread needs (from config.audio)."""

    device: str | int
    format: DeviceFormat
    block_frames: int = BLOCK_FRAMES
    lead_in_ms: int = 0
    fade_ms: int = 5
    preempt_fade_ms: int = 20
    close_idle_s: float = 5.0
    reopen_min_s: float = 0.5
    reopen_max_s: float = 30.0
    realtime_pacing: bool = False
    audio_core: int | None = None
    """CPU the audio thread is pinned to (cpu.audio_core); None = not pinned."""
    realtime: bool = False
    """SCHED_FIFO for the audio thread where permitted (cpu.realtime_audio)."""


@dataclass(frozen=True)
class PlayerReport:
    """What the audio thread tells the daemon (through the callback)."""

    job: PlaybackJob | None
    kind: str
    """started | finished | stopped | failed | device_ok | device_failed | thread_setup."""

    reason: str | None = None
    at_mono: float = 0.0
    position: Position = (0, 0)
    underruns: int = 0
    """On finished/stopped/failed: times the device ran dry during the job (audio.writer)."""
    gap_ms: float = 0.0
    """On finished/stopped/failed: milliseconds it was dry in all."""
    sync_error_ms: float | None = None
    """On started of a timed job: estimated error of its first heard sample vs at_unix (ms)."""
    late_ms: float = 0.0
    """On started of a timed job: milliseconds of its start skipped to join in step."""


class Player:
    """The audio thread: plays jobs one after the other on one device."""

    def __init__(
        self,
        settings: PlayerSettings,
        report: Callable[[PlayerReport], None],
        *,
        stream_factory: StreamFactory,
        clocks: Clocks | None = None,
    ) -> None:
        self._settings = settings  # the audio thread's copy
        self._latest = settings  # the caller's: what the next job is converted to
        self._report = report
        self._stream_factory = stream_factory
        self._clocks = clocks or Clocks()  # for timed jobs (tests simulate them)
        self._jobs: queue.SimpleQueue[PlaybackJob | PlayerSettings | None] = queue.SimpleQueue()
        self._stream: OutputStreamLike | None = None
        self._stream_block = 0
        self._device_failed: str | None = None
        self._reopen_delay = settings.reopen_min_s
        self._next_open = 0.0
        self._thread = threading.Thread(target=self._run, name="edgetts-audio", daemon=True)

    @property
    def converter(self) -> Converter:
        """For new jobs: the format of the latest settings (a job carries its own format)."""
        return Converter(self._latest.format)

    @property
    def thread(self) -> threading.Thread:
        """The audio thread (where it runs is what cpu.audio_core decides)."""
        return self._thread

    def probe(self) -> None:
        """Open and close the device once (before READY=1); raises AudioDeviceError."""
        s = self._settings
        self._stream_factory(s.device, s.format, s.block_frames).close()

    def start(self) -> None:
        self._thread.start()

    def submit(self, job: PlaybackJob) -> None:
        self._jobs.put(job)

    def reconfigure(self, settings: PlayerSettings) -> None:
        """Applied between jobs (the device is reopened if anything changed)."""
        self._latest = settings
        self._jobs.put(settings)

    def close(self, timeout: float = 3.0) -> None:
        self._jobs.put(None)
        if self._thread.is_alive():
            self._thread.join(timeout)

    # ---------------------------------------------------------- audio thread
    def _run(self) -> None:
        s = self._settings
        if s.audio_core is not None or s.realtime:
            # On its own core (and real-time where permitted), so inference never starves it.
            pinned = pin_audio_thread(s.audio_core, realtime=s.realtime)  # logs a problem itself
            self._report(PlayerReport(None, "thread_setup", pinned.problem))
        idle_since = time.monotonic()
        while True:
            try:
                item = self._jobs.get(timeout=0.25)
            except queue.Empty:
                s = self._settings
                if self._stream is not None and time.monotonic() - idle_since >= s.close_idle_s:
                    self._close_stream()
                continue
            if item is None:
                break
            if isinstance(item, PlayerSettings):
                if item != self._settings:
                    self._close_stream()
                    self._settings = item
                    self._reopen_delay = item.reopen_min_s
                continue
            self._play(item)
            idle_since = time.monotonic()
        self._close_stream()

    def _close_stream(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def _ensure_stream(self, fmt: DeviceFormat, job: PlaybackJob, block: int) -> OutputStreamLike | None:
        """The open stream (``block`` frames a write), or None when ``job`` was stopped while waiting to reopen."""
        s = self._settings
        if self._stream is not None and self._stream.format == fmt and self._stream_block == block:
            return self._stream
        self._close_stream()
        while time.monotonic() < self._next_open:  # back-off after a failure
            if job.stop_requested:
                return None
            time.sleep(min(0.02, max(0.0, self._next_open - time.monotonic())))
        try:
            self._stream = self._stream_factory(s.device, fmt, block)
            self._stream_block = block
        except AudioDeviceError as exc:
            self._device_down(str(exc))
            raise
        if self._device_failed is not None:
            _LOGGER.info("audio device %r is back", s.device)
            self._report(PlayerReport(None, "device_ok"))
        self._device_failed = None
        self._reopen_delay = s.reopen_min_s
        return self._stream

    def _device_down(self, reason: str) -> None:
        s = self._settings
        self._close_stream()
        self._next_open = time.monotonic() + self._reopen_delay
        _LOGGER.error("%s; reopening in %.1f s", reason, self._reopen_delay)
        self._reopen_delay = min(self._reopen_delay * 2, s.reopen_max_s)
        self._device_failed = reason
        self._report(PlayerReport(None, "device_failed", reason=reason))

    def _play(self, job: PlaybackJob) -> None:
        writer: list[DeviceWriter] = []
        try:
            outcome, reason = self._play_job(job, writer)
            if self._stream is not None:
                # "finished" means heard: wait for the device to play the tail
                # (this also flushes it into the ALSA file plugin in tests).
                self._stream.drain()
        except AudioDeviceError as exc:
            if self._stream is not None:
                self._device_down(str(exc))
            outcome, reason = "failed", str(exc)
        dry = writer[0] if writer else None
        self._report(
            PlayerReport(
                job,
                outcome,
                reason=reason,
                position=job.position,
                underruns=dry.underruns if dry else 0,
                gap_ms=dry.gap_s * 1000.0 if dry else 0.0,
            )
        )

    def _play_job(self, job: PlaybackJob, writer_out: list[DeviceWriter]) -> Outcome:
        """Play ``job`` to its end, its failure or its preemption; the outcome and its reason.
        The job's writer (its underrun count) is appended to ``writer_out``."""
        if job.stop_requested:  # preempted before it got the device
            return "stopped", None
        fmt, s = job.converter.format, self._settings
        block = min(s.block_frames, TIMED_BLOCK_FRAMES) if job.timed is not None else s.block_frames
        stream = self._ensure_stream(fmt, job, block)
        if stream is None:
            return "stopped", None
        writer = DeviceWriter(stream, fmt.bytes_per_frame, fmt.rate, s.realtime_pacing, self._clocks.mono)
        writer_out.append(writer)
        stage = _Stage(job, writer, s, self._report)
        if job.timed is not None:
            return TimedPlay(job, stage, writer, stream, block, self._clocks).run()
        return _UntimedPlay(job, stage, writer).run()


class _UntimedPlay(JobRun):
    """An untimed job's run: its audio written as it comes, held speech (the engine's lead) at its time."""

    def __init__(self, job: PlaybackJob, stage: _Stage, writer: DeviceWriter) -> None:
        super().__init__(job, stage)
        self._stage = stage  # (as the player's own stage: at_barrier, block)
        self._writer = writer

    def turn(self) -> bool:
        job, stage, writer = self.job, self._stage, self._writer
        hold = None if self.end is not None else job.hold()  # (an ended text plays what it has)
        stage.barrier = None if hold is None else hold[0]
        if hold is not None and stage.at_barrier:
            # Everything before the held speech is written (a chime plays meanwhile); the speech
            # waits until its time, unless the text has ended.
            wait = hold[1] - time.monotonic() - writer.queued_s()
            if wait > 0:
                self.pull(min(0.02, wait))
            elif job.begin(self.generation):
                writer.allow_gap()  # a held start is no underrun
            return False
        if self.end is None and stage.avail <= stage.fade_n:
            # Hold fade_ms back: when the end marker comes, the last samples are still in hand
            # to be faded out.
            self.pull(0.02)
            return False
        if self.end is None:
            # Up to a block, but not a whole one before the first write: a streamed text's first
            # window (1024 samples less half a crossfade) would wait for its second.
            stage.emit(*stage.take(min(stage.block, stage.avail - stage.fade_n)))
            return False
        stage.play_tail(self.end)
        return True


class _Stage:
    """One job's samples between its queue and the device: fade in, lead-in, fade outs."""

    def __init__(
        self, job: PlaybackJob, writer: DeviceWriter, s: PlayerSettings, report: Callable[[PlayerReport], None]
    ) -> None:
        rate = job.converter.format.rate
        self._job = job
        self._writer = writer
        self._report = report
        self.block = s.block_frames
        self.fade_n = int(rate * s.fade_ms / 1000)
        self._preempt_n = int(rate * s.preempt_fade_ms / 1000)
        self._lead_in = int(rate * s.lead_in_ms / 1000)
        self._pending: collections.deque[Piece] = collections.deque()
        self.avail = 0
        """Samples in hand, not yet written."""
        self._faded_in = 0
        self._started = False
        self.barrier: int | None = None
        """Identity of the held piece's samples: :meth:`take` stops before it."""
        self.timed = False
        """A timed job: no lead-in (its silence before the target is exact); `started` says these:"""
        self.sync_error_ms: float | None = None
        self.late_ms = 0.0

    @property
    def at_barrier(self) -> bool:
        """The next sample in hand is the held piece's first."""
        return bool(self._pending) and id(self._pending[0][0]) == self.barrier

    def drop(self, void: Callable[[Piece], bool]) -> None:
        """Drop the pieces in hand that a fallback voided (held speech: never split, none written)."""
        kept = [p for p in self._pending if not void(p)]
        self._pending = collections.deque(kept)
        self.avail = sum(p[0].size for p in kept)

    def add(self, piece: Piece) -> None:
        if piece[0].size:
            self._pending.append(piece)
            self.avail += piece[0].size

    def take(self, n: int) -> tuple[np.ndarray, Position, Gain]:
        """Up to ``n`` samples in hand, with the position of the first of them and their level gain
        (one number, or one per sample when they come from pieces of different gains)."""
        parts: list[np.ndarray] = []
        gains: list[float] = []
        pos = self._pending[0][1] if self._pending else self._job.position
        while n > 0 and self._pending and id(self._pending[0][0]) != self.barrier:
            arr, p, g = self._pending[0]
            if arr.size <= n:
                parts.append(arr)
                self._pending.popleft()
                n -= arr.size
            else:
                parts.append(arr[:n])
                self._pending[0] = (arr[n:], p, g)
                n = 0
            gains.append(g)
        if not parts:  # (at the barrier: nothing may be taken yet)
            return np.zeros(0, np.float32), pos, 1.0
        out = np.concatenate(parts) if len(parts) > 1 else parts[0]
        self.avail -= out.size
        if all(g == gains[0] for g in gains):
            return out, pos, gains[0]
        return out, pos, np.concatenate([np.full(part.size, g) for part, g in zip(parts, gains, strict=True)])

    def emit(self, samples: np.ndarray, pos: Position, gain: Gain) -> None:
        """Write ``samples`` at their level ``gain`` (fading in the first fade_ms); the first write
        reports `started`."""
        job = self._job
        if self._faded_in < self.fade_n:
            k = min(self.fade_n - self._faded_in, samples.size)
            ramp = np.arange(self._faded_in, self._faded_in + k, dtype=np.float32) / np.float32(self.fade_n)
            samples = samples.copy()
            samples[:k] *= ramp
            self._faded_in += k
        if not self._started:
            self._started = True
            job.first_audio_mono = time.monotonic()
            if self._lead_in and not self.timed:
                self._writer.write(job.converter.silence(self._lead_in))
            self._report(
                PlayerReport(
                    job,
                    "started",
                    at_mono=job.first_audio_mono,
                    position=pos,
                    sync_error_ms=self.sync_error_ms,
                    late_ms=self.late_ms,
                )
            )
        job.position = pos
        self._writer.write(job.converter.to_bytes(samples, gain, job.gain))

    def fade_out_preempted(self) -> None:
        """Preempted: what is in hand fades to silence within preempt_fade_ms (if anything played)."""
        if not self._started:
            return
        job = self._job
        tail = np.zeros(self._preempt_n, dtype=np.float32)
        gain: Gain = 1.0
        if self.avail:
            got, pos, gain = self.take(min(self._preempt_n, self.avail))
            tail[: got.size] = got
            if isinstance(gain, np.ndarray):  # the silence after what was in hand takes the last gain
                gain = np.concatenate([gain, np.full(tail.size - got.size, gain[-1])])
        else:
            pos = job.position
        tail *= np.linspace(1.0, 0.0, self._preempt_n, endpoint=False, dtype=np.float32)
        job.position = pos
        self._writer.write(job.converter.to_bytes(tail, gain, job.gain))

    def play_tail(self, end: JobEnd) -> None:
        """The producer is done: fade out the tail (or cut it short on failure)."""
        if not self.avail:
            return
        tail, pos, gain = self.take(self.avail)
        n = min(self.fade_n if end.reason is None else self._preempt_n, tail.size)
        if n:
            tail = tail.copy()
            tail[-n:] *= np.linspace(1.0, 0.0, n, endpoint=False, dtype=np.float32)
        for i in range(0, tail.size, self.block):
            part = gain[i : i + self.block] if isinstance(gain, np.ndarray) else gain
            self.emit(tail[i : i + self.block], pos, part)
