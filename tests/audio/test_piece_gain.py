"""Gain applied once: each piece's level gain times the job's, one float32 multiplication when the
converter makes device frames (issue 12), also where a block spans pieces of different gains."""

from __future__ import annotations

import queue
import threading

import numpy as np

from edgetts.audio.convert import Converter, DeviceFormat
from edgetts.audio.job import PlaybackJob
from edgetts.audio.player import Player, PlayerReport, PlayerSettings

RATE = 22050


class Recording:
    """An output stream that keeps every byte written."""

    def __init__(self, fmt: DeviceFormat) -> None:
        self.format = fmt
        self.data = bytearray()
        self.lock = threading.Lock()

    def write(self, data: bytes) -> None:
        with self.lock:
            self.data += data

    def drain(self) -> None:
        pass

    def close(self) -> None:
        pass


def _reference(audio: np.ndarray, level: float) -> np.ndarray:
    return np.clip(audio * np.float32(level) * 32767.0, -32767, 32767).astype(np.int16)


def test_converter_multiplies_once() -> None:
    audio = np.random.default_rng(3).uniform(-0.9, 0.9, 4000).astype(np.float32)
    conv = Converter(DeviceFormat(RATE))
    got = np.frombuffer(conv.to_bytes(audio, 1.3, 0.7), "<i2")
    assert np.array_equal(got, _reference(audio, 1.3 * 0.7))
    per_sample = np.repeat([1.3, 0.7], 2000)
    got = np.frombuffer(conv.to_bytes(audio, per_sample, 0.7), "<i2")
    assert np.array_equal(got[:2000], _reference(audio[:2000], 1.3 * 0.7))
    assert np.array_equal(got[2000:], _reference(audio[2000:], 0.7 * 0.7))
    # one gain of 1 leaves the other's integers exactly as one stage scaling its own audio gave
    assert np.array_equal(np.frombuffer(conv.to_bytes(audio, 1.0, 0.7), "<i2"), _reference(audio, 0.7))
    assert np.array_equal(np.frombuffer(conv.to_bytes(audio, 1.3), "<i2"), _reference(audio, 1.3))


def test_each_piece_plays_at_its_own_gain_times_the_jobs() -> None:
    streams: list[Recording] = []
    reports: queue.Queue[PlayerReport] = queue.Queue()

    def factory(device, fmt, block):  # type: ignore[no-untyped-def]
        streams.append(Recording(fmt))
        return streams[-1]

    player = Player(
        PlayerSettings(device="x", format=DeviceFormat(RATE), block_frames=256, fade_ms=5),
        reports.put,
        stream_factory=factory,
    )
    player.start()
    rng = np.random.default_rng(7)
    # sizes that are no multiple of the block: blocks span two pieces of different gains
    pieces = [(rng.uniform(-0.6, 0.6, n).astype(np.float32), g) for n, g in ((1000, 1.4), (777, 0.8), (1500, 1.0))]
    try:
        job = PlaybackJob("j", player.converter, 0.7)
        player.submit(job)
        for i, (audio, gain) in enumerate(pieces):
            job.feed(audio, RATE, (0, i), speech=True, gain=gain)
        assert job.take_over(pieces[0][0], RATE, (1, 0), before_speech=False, gain=2.0)
        while (report := reports.get(timeout=10)).kind != "finished":
            pass
    finally:
        player.close()
    pcm = np.frombuffer(bytes(streams[0].data), "<i2")
    want = np.concatenate([_reference(a, g * 0.7) for a, g in [*pieces, (pieces[0][0], 2.0)]])
    fade = RATE * 5 // 1000
    assert pcm.size == want.size and report.position == (1, 0)
    assert np.array_equal(pcm[fade:-fade], want[fade:-fade])  # bit-exact between the fades
