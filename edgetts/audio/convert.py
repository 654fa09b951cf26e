"""The one converter from float audio to the device format (issue 12).

Speech, chimes and clips all pass through :class:`Converter` (rate, gain,
sample format, channels), so the device sees one format and level is changed
in one place (:meth:`Converter.to_bytes`); the float <-> 16-bit
pair below is the only place samples are scaled by 32767, so a WAV file, the
phrase cache and the device all get the same integers.

numpy only: :mod:`edgetts.engine` sits above this module and imports it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

INT16_FULL_SCALE = 32767.0
"""Float 1.0 in 16-bit PCM: symmetric, so -1.0 -> -32767 (what piper-tts writes)."""

_INT32_FULL_SCALE = 2147483647.0


def float_to_int16(audio: np.ndarray) -> np.ndarray:
    """Float samples (full scale 1.0) as 16-bit PCM: clipped, rounded toward zero like piper-tts.

    Computed in the input's float width (float32 audio stays float32), so the
    integers are exactly those every writer produced before they shared this.
    """
    return np.clip(np.asarray(audio) * INT16_FULL_SCALE, -INT16_FULL_SCALE, INT16_FULL_SCALE).astype(np.int16)


def int16_to_float(samples: np.ndarray) -> np.ndarray:
    """16-bit PCM samples as float32 with full scale 1.0 (sample / 32767, the inverse of the above)."""
    return np.asarray(samples).astype(np.float32) / INT16_FULL_SCALE


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


def _level(gain: float | np.ndarray, job_gain: float) -> np.float32 | np.ndarray | None:
    """``gain`` x ``job_gain`` as float32 factors (the product taken in float64); None when it is 1."""
    if isinstance(gain, np.ndarray):
        return (gain.astype(np.float64) * job_gain).astype(np.float32)
    level = float(gain) * float(job_gain)
    return None if level == 1.0 else np.float32(level)


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

    def to_bytes(self, mono: np.ndarray, gain: float | np.ndarray = 1.0, job_gain: float = 1.0) -> bytes:
        """Mono float32 at the device rate -> interleaved device frames, at ``gain`` x ``job_gain``.

        The one place level changes: ``gain`` is the samples' own level (a voice's or a clip's
        loudness gain; one value per sample where a block spans pieces of different gains),
        ``job_gain`` the job's (audio.volume x the announcement's volume).  Their product is
        applied once, as one float32 multiplication, so a sample scaled by one gain gets exactly
        the integers it got when each stage scaled its own audio.
        """
        level = _level(gain, job_gain)
        x = mono if level is None else mono * level
        fmt = self.format.sample_format
        if fmt == "int16":
            out = float_to_int16(x)  # so the device gets what `edgetts synth` writes
        elif fmt == "int32":
            out = np.clip(x.astype(np.float64) * _INT32_FULL_SCALE, -_INT32_FULL_SCALE, _INT32_FULL_SCALE).astype(
                np.int32
            )
        else:
            out = np.clip(x, -1.0, 1.0).astype(np.float32)
        if self.format.channels > 1:
            out = np.repeat(out[:, None], self.format.channels, axis=1)
        return out.astype(out.dtype.newbyteorder("<"), copy=False).tobytes()

    def silence(self, frames: int) -> bytes:
        return bytes(frames * self.format.bytes_per_frame)
