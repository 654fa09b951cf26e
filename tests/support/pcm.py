"""PCM helpers: test clips and tones, and exact comparison of what was played."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def write_clip(path: Path, audio: np.ndarray, rate: int = 22050) -> Path:
    """A 16-bit mono WAV clip (what most sites have)."""
    from edgetts.audio.wav import write_wav

    write_wav(path, audio, rate)
    return path


def tone(freq: float, seconds: float, amp: float = 0.3, rate: int = 22050) -> np.ndarray:
    """A sine with 10 ms ramps: a clip that is easy to find in a capture."""
    t = np.arange(int(seconds * rate), dtype=np.float32)
    env = np.minimum(1.0, np.minimum(t, t[::-1]) / (0.01 * rate))
    return (amp * np.sin(2 * np.pi * freq * t / rate) * env).astype(np.float32)


def clip_pcm(clip: Any, gain: float = 1.0) -> np.ndarray:
    """The int16 the device gets for a library clip played at job gain ``gain``: its unscaled
    audio times its loudness gain times ``gain``, one float32 multiplication (what the one
    converter does; with ``gain`` 1, the integers of the pre-scaled clips before issue 12)."""
    level = float(clip.gain) * gain
    x = clip.audio if level == 1.0 else clip.audio * np.float32(level)
    return np.clip(x * 32767.0, -32767.0, 32767.0).astype(np.int16)


def find(haystack: np.ndarray, needle: np.ndarray, start: int = 0) -> int:
    """Index of the first exact occurrence of ``needle`` in ``haystack`` at or after start; -1."""
    n = needle.size
    if n == 0 or haystack.size - start < n:
        return -1
    first = np.flatnonzero(haystack[start : haystack.size - n + 1] == needle[0]) + start
    for i in first:
        if np.array_equal(haystack[i : i + n], needle):
            return int(i)
    return -1


def assert_played(captured: np.ndarray, expected: np.ndarray, fade: int, start: int = 0) -> int:
    """``expected`` (int16) was played, bit-exact except the ``fade`` samples at each end,
    where each captured sample may only be quieter than the reference; returns its index."""
    assert expected.size > 2 * fade + 64, "reference too short to compare"
    core = expected[fade:-fade] if fade else expected
    at = find(captured, core, start)
    assert at >= 0, "the announcement's samples are not in the capture"
    at -= fade
    got = captured[at : at + expected.size].astype(np.int32)
    ref = expected.astype(np.int32)
    assert got.size == ref.size, "capture ends inside the announcement"
    assert np.all(np.abs(got[:fade]) <= np.abs(ref[:fade])), "fade-in louder than the reference"
    assert np.all(np.abs(got[-fade:]) <= np.abs(ref[-fade:]) + 1), "fade-out louder than the reference"
    return at
