"""The sound card: the one edge that talks to PortAudio (PyAudio).

:class:`OutputStream` is the stream factory the daemon and `edgetts say` hand
to the player (:mod:`edgetts.audio.player`); audio/ itself never imports
PyAudio, so it runs (and is tested) without the [audio] extra.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import logging
import time
from typing import Any

from edgetts.audio.convert import DeviceFormat
from edgetts.audio.player import PlayerSettings
from edgetts.config import Config
from edgetts.errors import AudioDeviceError

_LOGGER = logging.getLogger(__name__)

MAX_DRAIN_S = 2.0
"""The longest a drain waits for what the device says it has queued (a device buffer is well under it)."""

_AlsaErrorHandler = ctypes.CFUNCTYPE(
    None, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p
)
_JackMessageHandler = ctypes.CFUNCTYPE(None, ctypes.c_char_p)


def _alsa_message(file: bytes | None, line: int, function: bytes | None, err: int, fmt: bytes | None) -> None:
    _LOGGER.debug(
        "ALSA %s:%s %s: %s",
        (file or b"").decode(errors="replace"),
        line,
        (function or b"").decode(errors="replace"),
        (fmt or b"").decode(errors="replace"),
    )


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
    """A blocking PyAudio output stream in a :class:`DeviceFormat` (an audio.device.StreamFactory)."""

    def __init__(self, device: str | int | None, fmt: DeviceFormat, block_frames: int) -> None:
        pyaudio = _pyaudio()
        self.format = fmt
        self._pa = pyaudio.PyAudio()
        pa_format = {"int16": pyaudio.paInt16, "int32": pyaudio.paInt32, "float32": pyaudio.paFloat32}
        try:
            index = resolve_device(self._pa, device)
            self._stream = self._pa.open(
                format=pa_format[fmt.sample_format],
                channels=fmt.channels,
                rate=fmt.rate,
                output=True,
                output_device_index=index,
                frames_per_buffer=block_frames,
            )
        except AudioDeviceError:
            self._pa.terminate()
            raise
        except (OSError, IOError, ValueError) as exc:
            self._pa.terminate()
            raise AudioDeviceError(f"cannot open audio device {device!r} at {fmt.rate} Hz: {exc}") from None
        self.latency_s: float = float(self._stream.get_output_latency())
        """The device's buffer latency (seconds): how late the player's underrun count may see a write."""
        # Room in the device's buffer when nothing is queued: PortAudio's blocking API tells only what
        # is free (Pa_GetStreamWriteAvailable), so what is queued is the rest.
        self._capacity = self._write_available()
        self._rate = fmt.rate

    def _write_available(self) -> int | None:
        try:
            return int(self._stream.get_write_available())
        except (OSError, IOError, ValueError):
            return None

    def delay_s(self) -> float | None:
        """Seconds until the next frame written is heard: the frames queued in the device's buffer.

        Through ALSA's pulse plugin (the paced sink) the buffer is the pulse stream's (768 frames at
        22050 Hz, block 256): what is queued there reaches the null sink's monitor when the server
        renders it, so this is the delay to the monitor; measured right after a blocking write it
        varies by 0-6 ms with the server's 10 ms ticks (the timeline takes the earliest).  On a
        sound card (ALSA hw) it is the ring buffer; the DAC and amplifier beyond it are
        audio.output_delay_ms.  Behind a sound server on a board (PulseAudio, PipeWire) it is the
        server's client buffer only: the server's own latency to the card is not in it.
        """
        free = self._write_available()
        if free is None or not self._capacity:
            return None
        return max(0, self._capacity - free) / self._rate

    def write(self, data: bytes) -> None:
        # Blocking write: callback mode would prepend PortAudio's priming silence (system recipe §2).
        try:
            self._stream.write(data, exception_on_underflow=False)
        except (OSError, IOError) as exc:
            raise AudioDeviceError(f"audio device write failed: {exc}") from None

    def drain(self) -> None:
        """Return once everything written has been played; the stream stays usable.

        PortAudio's stop waits for what is queued on a sound card, but through ALSA's pulse plugin
        (PulseAudio, PipeWire) it returns at once and drops it: the last ~0.1 s of every
        announcement went unheard, and `finished` came before its tail. So what the device says it
        has queued is waited out first (at most MAX_DRAIN_S, should it misreport)."""
        queued = self.delay_s()
        if queued:
            time.sleep(min(queued, MAX_DRAIN_S))
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


def player_settings(config: Config, default_rate: int) -> PlayerSettings:
    """The audio section as the player takes it (``default_rate`` when audio/sample_rate is not set)."""
    a = config.audio
    fmt = DeviceFormat(a.sample_rate or default_rate, a.channels, a.sample_format)
    return PlayerSettings(
        device=a.device,
        format=fmt,
        block_frames=a.block_frames,
        lead_in_ms=a.lead_in_ms,
        fade_ms=a.fade_ms,
        preempt_fade_ms=a.preempt_fade_ms,
        close_idle_s=a.close_idle_s,
        reopen_min_s=a.reopen_min_s,
        reopen_max_s=a.reopen_max_s,
        realtime_pacing=a.realtime_pacing,
        audio_core=config.cpu.audio_core,
        realtime=config.cpu.realtime_audio,
    )
