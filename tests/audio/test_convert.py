"""The one float <-> 16-bit conversion, and the blocking `play_chunks` path with an injected stream."""

from __future__ import annotations

import time
import wave
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from edgetts.audio.convert import Converter, DeviceFormat, float_to_int16, int16_to_float
from edgetts.audio.say import play_chunks
from edgetts.audio.wav import wav_bytes, write_chunks, write_wav
from edgetts.daemon.playout.clips import read_wav
from edgetts.engine import AudioChunk
from edgetts.errors import AudioDeviceError


def _noise(dtype: type = np.float32) -> np.ndarray:
    return np.random.default_rng(7).uniform(-1.3, 1.3, 4000).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_to_int16_is_the_piper_formula(dtype: type) -> None:
    audio = _noise(dtype)
    expected = np.clip(audio * 32767.0, -32767.0, 32767.0).astype(np.int16)
    got = float_to_int16(audio)
    assert got.dtype == np.int16 and np.array_equal(got, expected)
    assert got.max() == 32767 and got.min() == -32767  # symmetric: -1.0 is -32767, never -32768


def test_int16_to_float_is_the_inverse() -> None:
    pcm = np.arange(-32767, 32768, 7, dtype=np.int16)
    as_float = int16_to_float(pcm)
    assert as_float.dtype == np.float32
    assert np.array_equal(as_float, pcm.astype(np.float32) / 32767.0)
    assert np.array_equal(float_to_int16(as_float), pcm)


def test_every_writer_gets_the_same_integers(tmp_path: Path) -> None:
    audio = _noise()
    reference = float_to_int16(audio)
    assert np.array_equal(AudioChunk(audio, 22050, 0).to_int16(), reference)
    assert np.array_equal(np.frombuffer(Converter(DeviceFormat(22050)).to_bytes(audio), "<i2"), reference)
    write_wav(tmp_path / "clip.wav", audio, 22050)
    blob = (tmp_path / "clip.wav").read_bytes()
    assert blob == wav_bytes(audio, 22050)
    assert np.array_equal(np.frombuffer(blob[44:], "<i2"), reference)
    write_chunks(tmp_path / "synth.wav", [AudioChunk(audio, 22050, 0)])
    with wave.open(str(tmp_path / "synth.wav"), "rb") as w:
        assert np.array_equal(np.frombuffer(w.readframes(w.getnframes()), "<i2"), reference)
    back, rate = read_wav(tmp_path / "clip.wav")
    assert rate == 22050 and np.array_equal(back, int16_to_float(reference))


class _Recording:
    def __init__(self, device: str | int | None, fmt: DeviceFormat, block: int) -> None:
        self.device, self.format, self.block = device, fmt, block
        self.data = bytearray()
        self.closed = False

    def write(self, data: bytes) -> None:
        self.data += data

    def drain(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def test_play_chunks_writes_through_the_injected_stream() -> None:
    opened: list[_Recording] = []

    def factory(device: str | int | None, fmt: DeviceFormat, block: int) -> _Recording:
        opened.append(_Recording(device, fmt, block))
        return opened[-1]

    chunks = [AudioChunk(_noise()[:1000], 16000, 0), AudioChunk(_noise()[1000:1500], 16000, 1)]
    play_chunks(iter(chunks), factory, device="hw:1", lead_in_s=0.01)
    assert len(opened) == 1
    stream = opened[0]
    assert (stream.device, stream.format, stream.block) == ("hw:1", DeviceFormat(16000), 1024)
    played = np.frombuffer(bytes(stream.data), "<i2")
    assert not played[:160].any()  # 10 ms of lead-in at 16 kHz
    assert np.array_equal(played[160:], np.concatenate([c.to_int16() for c in chunks]))
    assert stream.closed


def test_play_chunks_opens_nothing_for_no_audio_and_passes_device_errors() -> None:
    def failing(device: str | int | None, fmt: DeviceFormat, block: int) -> _Recording:
        raise AudioDeviceError("no audio output device named 'x'")

    play_chunks(iter([]), failing)
    with pytest.raises(AudioDeviceError, match="no audio output device"):
        play_chunks(iter([AudioChunk(_noise(), 22050, 0)]), failing, device="x")


def test_play_chunks_holds_the_first_write_for_the_lead_and_synthesizes_meanwhile() -> None:
    opened: list[_Recording] = []
    produced: list[float] = []
    opened_at: list[float] = []

    def factory(device: str | int | None, fmt: DeviceFormat, block: int) -> _Recording:
        opened_at.append(time.monotonic())
        opened.append(_Recording(device, fmt, block))
        return opened[-1]

    def chunks(lead_s: float, n: int) -> Iterator[AudioChunk]:
        for i in range(n):
            produced.append(time.monotonic())
            yield AudioChunk(_noise()[i * 500 : (i + 1) * 500], 16000, 0, lead_s=lead_s if i == 0 else 0.0)
            time.sleep(0.1)  # the synthesis of the next chunk

    play_chunks(chunks(0.35, 6), factory)
    # Nothing written before the lead was over; the chunks made meanwhile were not waited for.
    assert opened_at[0] - produced[0] >= 0.35
    assert sum(1 for t in produced if t < opened_at[0]) >= 3
    played = np.frombuffer(bytes(opened[0].data), "<i2")
    assert np.array_equal(
        played, np.concatenate([AudioChunk(_noise()[i * 500 : (i + 1) * 500], 16000, 0).to_int16() for i in range(6)])
    )
    # A later chunk's lead, before the first one's is over, extends the wait.
    produced.clear()
    opened_at.clear()

    def extended() -> Iterator[AudioChunk]:
        for i, lead in enumerate((0.2, 0.0, 0.4, 0.0, 0.0, 0.0, 0.0, 0.0)):
            produced.append(time.monotonic())
            yield AudioChunk(_noise()[i * 500 : (i + 1) * 500], 16000, 0, lead_s=lead)
            time.sleep(0.15)  # (the text goes on past both leads)

    play_chunks(extended(), factory)
    assert opened_at[0] - produced[2] >= 0.4
    assert len(opened[-1].data) == 2 * 4000
    # A text that ends during its lead plays at once, all of it.
    produced.clear()
    opened_at.clear()
    play_chunks(chunks(5.0, 2), factory)
    assert opened_at[0] - produced[0] < 1.0
    assert len(opened[-1].data) == 2 * 1000
