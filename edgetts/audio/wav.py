"""16-bit mono WAV files from audio chunks."""

from __future__ import annotations

import itertools
import wave
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from edgetts.audio.convert import int16_to_float
from edgetts.engine import AudioChunk
from edgetts.errors import EdgeTTSError


def write_wav(path: Path, chunks: Iterable[AudioChunk]) -> float:
    """Write ``chunks`` (one sample rate) to ``path``; returns the seconds written.

    Nothing is created until the first chunk exists, and the file is written
    beside ``path`` and renamed into place, so a failed synthesis never leaves
    an empty or truncated WAV behind.
    """
    iterator = iter(chunks)
    first = next(iterator, None)
    if first is None:
        raise EdgeTTSError("no audio was produced")
    rate = first.sample_rate
    tmp = path.with_name(f".{path.name}.part")
    seconds = 0.0
    try:
        # Opened here, not by wave.open(name): a Wave_write whose open() failed prints a
        # traceback from its __del__ after the error line (issue 13).
        with open(tmp, "wb") as fh:
            wav = wave.open(fh, "wb")
            try:
                wav.setnchannels(1)
                wav.setsampwidth(2)
                wav.setframerate(rate)
                for chunk in itertools.chain([first], iterator):
                    if chunk.sample_rate != rate:
                        raise EdgeTTSError(f"chunks change sample rate ({rate} -> {chunk.sample_rate} Hz)")
                    wav.writeframes(chunk.to_int16().tobytes())
                    seconds += chunk.duration_s
            finally:
                wav.close()
        tmp.replace(path)
    except OSError as err:
        raise EdgeTTSError(f"cannot write {path}: {err.strerror or err}") from err
    finally:
        tmp.unlink(missing_ok=True)
    return seconds


def read_wav(path: Path) -> tuple[np.ndarray, int]:
    """A 16-bit mono WAV as float32 samples in [-1, 1] and its rate (tests, tools)."""
    with wave.open(str(path), "rb") as wav:
        if wav.getsampwidth() != 2 or wav.getnchannels() != 1:
            raise EdgeTTSError(f"{path}: expected 16-bit mono")
        frames = wav.readframes(wav.getnframes())
        return int16_to_float(np.frombuffer(frames, dtype="<i2")), wav.getframerate()
