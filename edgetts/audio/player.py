"""Sound output: one converter to the device format, one audio thread.

Speech, chimes and clips all pass through :class:`Converter` (rate, gain,
sample format, channels), so the device sees one format.  :class:`Player`
owns the device on its own thread: it is handed :class:`PlaybackJob` s whose
audio a producer (the synthesis thread) feeds; the audio thread never waits on
MQTT or inference, only on its own job queue, and it alone decides fades.

:func:`play_chunks` is the simple blocking path `edgetts say` uses.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import ctypes.util
import functools
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edgetts.engine import AudioChunk
from edgetts.errors import AudioDeviceError
from edgetts.runtime.affinity import pin_audio_thread

_LOGGER = logging.getLogger(__name__)

#: Position of a piece of audio: (repeat index, sentence index); sentence -1 = chime.
Position = tuple[int, int]


# ----------------------------------------------------------------- conversion


@dataclass(frozen=True)
class DeviceFormat:
    """What the output device is opened with."""

    rate: int
    """Hertz."""

    channels: int = 1
    sample_format: str = "int16"
    """int16 | int32 | float32."""

    @property
    def bytes_per_frame(self) -> int:
        return self.channels * (2 if self.sample_format == "int16" else 4)


def resample_linear(audio: np.ndarray, rate: int, to_rate: int) -> np.ndarray:
    """Mono float32 at ``rate`` -> mono float32 at ``to_rate`` (linear interpolation).

    Cheap and good enough for speech and clips; the one resampler of speech,
    chimes and clips alike.
    """
    audio = np.asarray(audio, dtype=np.float32).reshape(-1)
    if rate == to_rate or audio.size == 0:
        return audio
    n_out = int(round(audio.size * to_rate / rate))
    positions = np.arange(n_out, dtype=np.float64) * (rate / to_rate)
    return np.interp(positions, np.arange(audio.size), audio).astype(np.float32)


class Converter:
    """The one place audio becomes device samples."""

    def __init__(self, fmt: DeviceFormat) -> None:
        if fmt.sample_format not in ("int16", "int32", "float32"):
            raise ValueError(f"unsupported sample format {fmt.sample_format!r}")
        self.format = fmt

    def resample(self, audio: np.ndarray, rate: int) -> np.ndarray:
        """Mono float32 at ``rate`` -> mono float32 at the device rate.

        Linear interpolation: cheap and good enough for speech; configure
        audio/sample_rate to the voice's rate (the default) to skip it.
        """
        return resample_linear(audio, rate, self.format.rate)

    def to_bytes(self, mono: np.ndarray, gain: float = 1.0) -> bytes:
        """Mono float32 at the device rate -> interleaved device frames."""
        x = mono if gain == 1.0 else mono * np.float32(gain)
        fmt = self.format.sample_format
        if fmt == "int16":
            # Exactly AudioChunk.to_int16(), so the device gets what `edgetts synth` writes.
            out: np.ndarray = np.clip(x * 32767.0, -32767.0, 32767.0).astype(np.int16)
        elif fmt == "int32":
            out = np.clip(x.astype(np.float64) * 2147483647.0, -2147483647.0, 2147483647.0).astype(
                np.int32
            )
        else:
            out = np.clip(x, -1.0, 1.0).astype(np.float32)
        if self.format.channels > 1:
            out = np.repeat(out[:, None], self.format.channels, axis=1)
        return out.astype(out.dtype.newbyteorder("<"), copy=False).tobytes()

    def silence(self, frames: int) -> bytes:
        return bytes(frames * self.format.bytes_per_frame)


def load_wav(path: str | Path) -> tuple[np.ndarray, int]:
    """A WAV file (any rate, integer or float width, channels) as mono float32 and its rate.

    The reader is :func:`edgetts.daemon.clips.read_wav` (issue 6); 16-bit PCM reads
    exactly as before (sample / 32767).  Raises ClipError (an EdgeTTSError).
    """
    from edgetts.daemon.clips import read_wav

    return read_wav(path)


# ----------------------------------------------------------------- the device


_AlsaErrorHandler = ctypes.CFUNCTYPE(
    None, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p
)
_JackMessageHandler = ctypes.CFUNCTYPE(None, ctypes.c_char_p)


def _alsa_message(file: bytes | None, line: int, function: bytes | None, err: int, fmt: bytes | None) -> None:
    _LOGGER.debug("ALSA %s:%s %s: %s", (file or b"").decode(errors="replace"), line,
                  (function or b"").decode(errors="replace"), (fmt or b"").decode(errors="replace"))


def _jack_message(message: bytes | None) -> None:
    _LOGGER.debug("JACK %s", (message or b"").decode(errors="replace"))


@functools.cache
def _route_native_audio_messages() -> tuple[object, ...]:
    """Send ALSA's and JACK's own stderr chatter to the debug log.

    PortAudio probes every ALSA PCM and tries a JACK server each time it starts,
    and both libraries print dozens of lines to stderr (about 70 on a machine
    without a sound card), burying the one line that says what is wrong.  The
    handlers are returned (and cached) so ctypes keeps them alive.
    """
    kept: list[object] = []
    for name, setters, handler in (
        ("asound", ("snd_lib_error_set_handler",), _AlsaErrorHandler(_alsa_message)),
        ("jack", ("jack_set_error_function", "jack_set_info_function"), _JackMessageHandler(_jack_message)),
    ):
        path = ctypes.util.find_library(name)
        if path is None:
            continue
        try:
            library = ctypes.CDLL(path)
            for setter in setters:
                getattr(library, setter)(handler)
        except (OSError, AttributeError) as exc:
            _LOGGER.debug("cannot route %s messages: %s", name, exc)
            continue
        kept.append(handler)
    return tuple(kept)


def _pyaudio() -> Any:
    try:
        import pyaudio
    except ImportError as exc:  # the [audio] extra is not installed
        raise AudioDeviceError(f"PyAudio is not installed ({exc}); pip install 'edgetts[audio]'") from None
    _route_native_audio_messages()
    return pyaudio


def resolve_device(pa: Any, spec: str | int | None) -> int:
    """The PortAudio index of an output device: None/`default`, an index, or (part of) a name."""
    if spec is None or spec == "default":
        try:
            return int(pa.get_default_output_device_info()["index"])
        except (OSError, IOError) as exc:
            raise AudioDeviceError(f"no default audio output device ({exc})") from None
    if isinstance(spec, str) and spec.isdigit():  # `--device 2` from a command line
        spec = int(spec)
    outputs = []
    for i in range(pa.get_device_count()):
        info = pa.get_device_info_by_index(i)
        if int(info.get("maxOutputChannels", 0)) > 0:
            outputs.append((i, str(info.get("name", ""))))
    if isinstance(spec, int):
        if any(i == spec for i, _ in outputs):
            return spec
        raise AudioDeviceError(f"no audio output device with index {spec}")
    for i, name in outputs:
        if name == spec:
            return i
    for i, name in outputs:
        if spec.lower() in name.lower():
            return i
    known = ", ".join(repr(n) for _, n in outputs) or "none"
    raise AudioDeviceError(f"no audio output device named {spec!r} (outputs: {known})")


class OutputStream:
    """A blocking PyAudio output stream in a :class:`DeviceFormat`."""

    def __init__(self, device: str | int | None, fmt: DeviceFormat, block_frames: int) -> None:
        pyaudio = _pyaudio()
        self.format = fmt
        self._pa = pyaudio.PyAudio()
        pa_format = {"int16": pyaudio.paInt16, "int32": pyaudio.paInt32, "float32": pyaudio.paFloat32}
        try:
            index = resolve_device(self._pa, device)
            self._stream = self._pa.open(
                format=pa_format[fmt.sample_format], channels=fmt.channels, rate=fmt.rate,
                output=True, output_device_index=index, frames_per_buffer=block_frames,
            )
        except AudioDeviceError:
            self._pa.terminate()
            raise
        except (OSError, IOError, ValueError) as exc:
            self._pa.terminate()
            raise AudioDeviceError(f"cannot open audio device {device!r} at {fmt.rate} Hz: {exc}") from None

    def write(self, data: bytes) -> None:
        # Blocking write: callback mode would prepend PortAudio's priming silence (system recipe §2).
        try:
            self._stream.write(data, exception_on_underflow=False)
        except (OSError, IOError) as exc:
            raise AudioDeviceError(f"audio device write failed: {exc}") from None

    def drain(self) -> None:
        """Return once everything written has been played; the stream stays usable."""
        try:
            self._stream.stop_stream()
            self._stream.start_stream()
        except (OSError, IOError) as exc:
            raise AudioDeviceError(f"audio device drain failed: {exc}") from None

    def close(self) -> None:
        with contextlib.suppress(OSError, IOError):
            self._stream.stop_stream()  # drains what was written
        with contextlib.suppress(OSError, IOError):
            self._stream.close()
        self._pa.terminate()

    def __enter__(self) -> OutputStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def play_chunks(
    chunks: Iterable[AudioChunk], *, device: str | int | None = None, lead_in_s: float = 0.0
) -> None:
    """Play synthesized chunks on ``device`` and return when they have been played.

    The device is opened at the first chunk's rate, 16-bit mono; ``lead_in_s``
    seconds of silence go first.  Raises :class:`AudioDeviceError` (one line)
    when there is no usable output device.
    """
    stream: OutputStream | None = None
    converter: Converter | None = None
    try:
        for chunk in chunks:
            if stream is None:
                fmt = DeviceFormat(rate=chunk.sample_rate)
                stream = OutputStream(device, fmt, 1024)
                converter = Converter(fmt)
                if lead_in_s > 0:
                    stream.write(converter.silence(int(round(lead_in_s * fmt.rate))))
            assert converter is not None
            stream.write(converter.to_bytes(converter.resample(chunk.audio, chunk.sample_rate)))
    finally:
        if stream is not None:
            stream.close()


# ----------------------------------------------------------------- the player


class _End:
    def __init__(self, reason: str | None = None) -> None:
        self.reason = reason  # None = finished normally, else the failure


@dataclass(frozen=True)
class PlayerSettings:
    """What the audio thread needs (from config.audio)."""

    device: str | int
    format: DeviceFormat
    block_frames: int = 256
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


class PlaybackJob:
    """One announcement's audio on its way to the device.

    The producer calls :meth:`feed` (audio at any rate) then :meth:`end` or
    :meth:`fail`; the daemon may call :meth:`stop` (preemption).  The audio
    thread consumes it and reports through the player's callback.
    """

    def __init__(self, token: Any, converter: Converter, gain: float) -> None:
        self.token = token
        self.converter = converter
        self.gain = gain
        self._pieces: queue.SimpleQueue[tuple[np.ndarray, Position] | _End] = queue.SimpleQueue()
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
    def feed(self, audio: np.ndarray, rate: int, position: Position, *, speech: bool = False) -> bool:
        """Queue audio; ``speech`` marks synthesized speech (a deadline fallback then no longer applies).

        False when the job was taken over by a fallback or has ended: stop producing.
        """
        samples = self.converter.resample(audio, rate)
        with self._lock:
            if self._closed:
                return False
            self._speech_fed = self._speech_fed or speech
            self._pieces.put((samples, position))
        return True

    def end(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._pieces.put(_End())

    def fail(self, reason: str) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._pieces.put(_End(reason))

    def take_over(
        self, audio: np.ndarray, rate: int, position: Position, *, before_speech: bool, times: int = 1
    ) -> bool:
        """Play ``audio`` (a fallback clip) ``times`` times and end the job; False if too late.

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
                self._pieces.put((samples, (position[0] + n, position[1])))
            self._pieces.put(_End())
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


@dataclass(frozen=True)
class PlayerReport:
    """What the audio thread tells the daemon (through the callback)."""

    job: PlaybackJob | None
    kind: str
    """started | finished | stopped | failed | device_ok | device_failed | thread_setup."""

    reason: str | None = None
    at_mono: float = 0.0
    position: Position = (0, 0)


class Player:
    """The audio thread: plays jobs one after the other on one device."""

    def __init__(
        self,
        settings: PlayerSettings,
        report: Callable[[PlayerReport], None],
        *,
        stream_factory: Callable[[str | int, DeviceFormat, int], OutputStream] = OutputStream,
    ) -> None:
        self._settings = settings  # the audio thread's copy
        self._latest = settings  # the caller's: what the next job is converted to
        self._report = report
        self._stream_factory = stream_factory
        self._jobs: queue.SimpleQueue[PlaybackJob | PlayerSettings | None] = queue.SimpleQueue()
        self._stream: OutputStream | None = None
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

    def _ensure_stream(self, fmt: DeviceFormat, job: PlaybackJob) -> OutputStream | None:
        """The open stream, or None when ``job`` was stopped while waiting to reopen."""
        s = self._settings
        if self._stream is not None and self._stream.format == fmt:
            return self._stream
        self._close_stream()
        while time.monotonic() < self._next_open:  # back-off after a failure
            if job.stop_requested:
                return None
            time.sleep(min(0.02, max(0.0, self._next_open - time.monotonic())))
        try:
            self._stream = self._stream_factory(s.device, fmt, s.block_frames)
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
        try:
            outcome, reason = self._play_job(job)
            if self._stream is not None:
                # "finished" means heard: wait for the device to play the tail
                # (this also flushes it into the ALSA file plugin in tests).
                self._stream.drain()
        except AudioDeviceError as exc:
            if self._stream is not None:
                self._device_down(str(exc))
            outcome, reason = "failed", str(exc)
        self._report(PlayerReport(job, outcome, reason=reason, position=job.position))

    def _play_job(self, job: PlaybackJob) -> tuple[str, str | None]:
        s = self._settings
        fmt = job.converter.format
        if job.stop_requested:  # preempted before it got the device
            return "stopped", None
        stream = self._ensure_stream(fmt, job)
        if stream is None:
            return "stopped", None
        writer = _Writer(stream, job, s.realtime_pacing)
        block = s.block_frames
        fade_n = int(fmt.rate * s.fade_ms / 1000)
        preempt_n = int(fmt.rate * s.preempt_fade_ms / 1000)
        lead_in = int(fmt.rate * s.lead_in_ms / 1000)
        pending: collections.deque[tuple[np.ndarray, Position]] = collections.deque()
        avail = 0
        faded_in = 0
        started = False

        def take(n: int) -> tuple[np.ndarray, Position]:
            nonlocal avail
            parts, pos = [], pending[0][1]
            while n > 0 and pending:
                arr, p = pending[0]
                if arr.size <= n:
                    parts.append(arr)
                    pending.popleft()
                    n -= arr.size
                else:
                    parts.append(arr[:n])
                    pending[0] = (arr[n:], p)
                    n = 0
            out = np.concatenate(parts) if len(parts) > 1 else parts[0]
            avail -= out.size
            return out, pos

        def emit(samples: np.ndarray, pos: Position) -> None:
            nonlocal faded_in, started
            if faded_in < fade_n:
                k = min(fade_n - faded_in, samples.size)
                ramp = np.arange(faded_in, faded_in + k, dtype=np.float32) / np.float32(fade_n)
                samples = samples.copy()
                samples[:k] *= ramp
                faded_in += k
            if not started:
                started = True
                job.first_audio_mono = time.monotonic()
                if lead_in:
                    writer.write(job.converter.silence(lead_in))
                self._report(PlayerReport(job, "started", at_mono=job.first_audio_mono, position=pos))
            job.position = pos
            writer.write(job.converter.to_bytes(samples, job.gain))

        end: _End | None = None
        while True:
            if job.stop_requested:
                if started:
                    tail = np.zeros(preempt_n, dtype=np.float32)
                    if avail:
                        got, pos = take(min(preempt_n, avail))
                        tail[: got.size] = got
                    else:
                        pos = job.position
                    tail *= np.linspace(1.0, 0.0, preempt_n, endpoint=False, dtype=np.float32)
                    job.position = pos
                    writer.write(job.converter.to_bytes(tail, job.gain))
                return "stopped", None
            if end is None and avail < block + fade_n:
                try:
                    item = job._pieces.get(timeout=0.02)
                except queue.Empty:
                    continue
                if isinstance(item, _End):
                    end = item
                elif item[0].size:
                    pending.append(item)
                    avail += item[0].size
                continue
            if end is None:
                samples, pos = take(block)
                emit(samples, pos)
                continue
            # The producer is done: fade out the tail (or cut it short on failure).
            if avail:
                tail, pos = take(avail)
                n = min(fade_n if end.reason is None else preempt_n, tail.size)
                if n:
                    tail = tail.copy()
                    tail[-n:] *= np.linspace(1.0, 0.0, n, endpoint=False, dtype=np.float32)
                for i in range(0, tail.size, block):
                    emit(tail[i : i + block], pos)
            if end.reason is not None:
                return "failed", end.reason
            return "finished", None


class _Writer:
    """Writes to the stream; paces to real time when the sink does not (ALSA null)."""

    def __init__(self, stream: OutputStream, job: PlaybackJob, pace: bool) -> None:
        self._stream = stream
        self._pace = pace
        self._bpf = job.converter.format.bytes_per_frame
        self._rate = job.converter.format.rate
        self._t0: float | None = None
        self._frames = 0

    def write(self, data: bytes) -> None:
        self._stream.write(data)
        if not self._pace:
            return
        now = time.monotonic()
        if self._t0 is None:
            self._t0 = now
        self._frames += len(data) // self._bpf
        # Stay at most ~50 ms ahead of the wall clock, like a real device's buffer.
        ahead = self._frames / self._rate - (now - self._t0) - 0.05
        if ahead > 0:
            time.sleep(ahead)
