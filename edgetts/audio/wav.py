"""16-bit mono WAV: the one writer (files, bytes, a streamed header) and a reader for tests and tools.

Every WAV edgetts makes (``edgetts synth``, ``edgetts render``'s clips, the console's /api/tts and
clip downloads) is built here, from the same header, so they cannot drift apart.  Samples are 16-bit
PCM as they are, or float (full scale 1.0) converted by :func:`float_to_int16` at float32 (the one
conversion: the device and the phrase cache get the same integers).
"""

from __future__ import annotations

import itertools
import struct
import wave
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from edgetts.audio.convert import float_to_int16, int16_to_float
from edgetts.engine import AudioChunk
from edgetts.errors import EdgeTTSError

_PCM = 0x0001
_STREAMED = 0xFFFFFFFF


def wav_header(rate: int, data_bytes: int | None = None) -> bytes:
    """The 44-byte header of a 16-bit mono WAV with ``data_bytes`` of samples after it; None = streamed
    (sizes not known yet: 0xFFFFFFFF, which readers take as "read to the end")."""
    data = _STREAMED if data_bytes is None else data_bytes
    riff = _STREAMED if data_bytes is None else 36 + data_bytes
    fmt = struct.pack("<IHHIIHH", 16, _PCM, 1, rate, rate * 2, 2, 16)
    return b"RIFF" + struct.pack("<I", riff) + b"WAVE" + b"fmt " + fmt + b"data" + struct.pack("<I", data)


def pcm16(samples: np.ndarray) -> np.ndarray:
    """``samples`` as little-endian 16-bit PCM: int16 as they are, float through :func:`float_to_int16`
    (in float32, whatever float they came as)."""
    samples = np.asarray(samples)
    if samples.dtype == np.int16:
        return samples.astype("<i2", copy=False)
    if np.issubdtype(samples.dtype, np.floating):
        return float_to_int16(samples.astype(np.float32, copy=False)).astype("<i2", copy=False)
    raise TypeError(f"WAV samples are int16 or float, not {samples.dtype}")


def wav_bytes(samples: np.ndarray, rate: int) -> bytes:
    """A whole WAV file of ``samples`` (int16, or float: see :func:`pcm16`) at ``rate``, in memory."""
    pcm = pcm16(samples)
    return wav_header(rate, pcm.nbytes) + pcm.tobytes()


def write_wav(path: str | Path, samples: np.ndarray, rate: int) -> float:
    """Write ``samples`` (int16, or float: see :func:`pcm16`) at ``rate`` to ``path``; the seconds written.
    Atomic, like :func:`write_chunks`."""
    pcm = pcm16(samples)
    _write(Path(path), rate, [pcm])
    return pcm.size / rate


def write_chunks(path: str | Path, chunks: Iterable[AudioChunk]) -> float:
    """Write ``chunks`` (one sample rate) to ``path`` as they come; returns the seconds written.

    Nothing is created until the first chunk exists, and the file is written
    beside ``path`` and renamed into place, so a failed synthesis never leaves
    an empty or truncated WAV behind.
    """
    iterator = iter(chunks)
    first = next(iterator, None)
    if first is None:
        raise EdgeTTSError("no audio was produced")
    rate = first.sample_rate
    seconds = 0.0

    def samples() -> Iterator[np.ndarray]:
        nonlocal seconds
        for chunk in itertools.chain([first], iterator):
            if chunk.sample_rate != rate:
                raise EdgeTTSError(f"chunks change sample rate ({rate} -> {chunk.sample_rate} Hz)")
            yield chunk.to_int16().astype("<i2", copy=False)
            seconds += chunk.duration_s

    _write(Path(path), rate, samples())
    return seconds


def _write(path: Path, rate: int, parts: Iterable[np.ndarray]) -> None:
    """A WAV of ``parts`` (16-bit PCM, written as they come: the header's sizes are filled in at the
    end) beside ``path``, renamed into place once whole; nothing is left behind on any failure."""
    tmp = path.with_name(f".{path.name}.part")
    written = 0
    try:
        with open(tmp, "wb") as fh:
            fh.write(wav_header(rate, 0))
            for part in parts:
                fh.write(part.tobytes())
                written += part.nbytes
            fh.seek(0)
            fh.write(wav_header(rate, written))
        tmp.replace(path)
    except OSError as err:
        raise EdgeTTSError(f"cannot write {path}: {err.strerror or err}") from err
    finally:
        tmp.unlink(missing_ok=True)


def read_wav(path: Path) -> tuple[np.ndarray, int]:
    """A 16-bit mono WAV as float32 samples in [-1, 1] and its rate (tests, tools)."""
    with wave.open(str(path), "rb") as wav:
        if wav.getsampwidth() != 2 or wav.getnchannels() != 1:
            raise EdgeTTSError(f"{path}: expected 16-bit mono")
        frames = wav.readframes(wav.getnframes())
        return int16_to_float(np.frombuffer(frames, dtype="<i2")), wav.getframerate()
