"""The one WAV writer (edgetts.audio.wav): the bytes Python's ``wave`` module writes, for every way in.

Before there was one writer there were three (clips' struct header, the console's ``wave`` bytes,
``edgetts synth``'s ``wave`` file); each of their callers now goes through these functions, and
gets the bytes it got before: those of ``wave`` for the same 16-bit samples.
"""

from __future__ import annotations

import io
import wave
from pathlib import Path

import numpy as np
import pytest

from edgetts.audio.convert import float_to_int16
from edgetts.audio.wav import pcm16, wav_bytes, wav_header, write_chunks, write_wav
from edgetts.engine import AudioChunk
from edgetts.errors import EdgeTTSError


def _wave(pcm: np.ndarray, rate: int) -> bytes:
    """What Python's wave module writes for 16-bit mono ``pcm``: the reference."""
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.astype("<i2").tobytes())
    return out.getvalue()


def _noise(n: int, dtype: type = np.float32) -> np.ndarray:
    return np.random.default_rng(n).uniform(-1.3, 1.3, n).astype(dtype)


@pytest.mark.parametrize("rate", [16000, 22050, 48000])
@pytest.mark.parametrize("n", [0, 1, 4001])
def test_bytes_are_wave_s_for_int16_and_float(rate: int, n: int) -> None:
    audio = _noise(n)
    pcm = float_to_int16(audio)
    expected = _wave(pcm, rate)
    assert len(expected) == 44 + 2 * n
    assert wav_bytes(pcm, rate) == expected  # the console's clip download and /api/tts/batch: int16
    assert wav_bytes(audio, rate) == expected  # edgetts render's clips: float32
    # float64 is taken to float32 first (what the clips' writer did), then scaled
    wide = audio.astype(np.float64) + 1e-9
    assert wav_bytes(wide, rate) == _wave(float_to_int16(wide.astype(np.float32)), rate)


def test_files_are_the_same_bytes_and_say_their_length(tmp_path: Path) -> None:
    audio = _noise(22050)
    assert write_wav(tmp_path / "clip.wav", audio, 22050) == 1.0
    assert (tmp_path / "clip.wav").read_bytes() == _wave(float_to_int16(audio), 22050)
    parts = [_noise(700), np.zeros(0, np.float32), _noise(1301)]
    chunks = [AudioChunk(part, 16000, i) for i, part in enumerate(parts)]
    assert write_chunks(tmp_path / "synth.wav", iter(chunks)) == sum(c.duration_s for c in chunks)
    assert (tmp_path / "synth.wav").read_bytes() == _wave(float_to_int16(np.concatenate(parts)), 16000)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clip.wav", "synth.wav"]  # no .part left


def test_a_failed_write_leaves_nothing_behind(tmp_path: Path) -> None:
    with pytest.raises(EdgeTTSError, match="no audio was produced"):
        write_chunks(tmp_path / "none.wav", [])
    changing = [AudioChunk(_noise(10), 22050, 0), AudioChunk(_noise(10), 16000, 1)]
    with pytest.raises(EdgeTTSError, match=r"chunks change sample rate \(22050 -> 16000 Hz\)"):
        write_chunks(tmp_path / "changing.wav", changing)
    with pytest.raises(EdgeTTSError, match="cannot write"):
        write_wav(tmp_path / "no-such-dir" / "clip.wav", _noise(10), 22050)
    assert list(tmp_path.iterdir()) == []


def test_the_streamed_header_is_the_whole_file_s_with_sizes_unknown() -> None:
    whole = wav_header(22050, 2000)
    assert whole == _wave(np.zeros(1000, np.int16), 22050)[:44]
    assert wav_header(22050) == whole[:4] + b"\xff\xff\xff\xff" + whole[8:40] + b"\xff\xff\xff\xff"


def test_samples_are_int16_or_float() -> None:
    pcm = np.array([1, -2, 32767], np.int16)
    assert pcm16(pcm).tobytes() == pcm.astype("<i2").tobytes()
    with pytest.raises(TypeError, match="int32"):
        pcm16(pcm.astype(np.int32))
