"""Playback: the one converter, fades, preemption fade-out, lead-in (a recording
stream injected through the Player's constructor; no device needed)."""

from __future__ import annotations

import queue
import threading
import time

import numpy as np
import pytest

from edgetts.audio.convert import Converter, DeviceFormat
from edgetts.audio.job import PlaybackJob
from edgetts.audio.player import TIMED_BLOCK_FRAMES, Player, PlayerReport, PlayerSettings
from edgetts.audio.timed_start import TimedStart
from edgetts.engine import AudioChunk
from edgetts.vocabulary import BLOCK_FRAMES


class RecordingStream:
    """Stands in for OutputStream: keeps every byte written."""

    def __init__(self, device, fmt: DeviceFormat, block: int) -> None:  # type: ignore[no-untyped-def]
        self.format = fmt
        self.block = block
        self.writes: list[int] = []
        self.data = bytearray()
        self.wrote = threading.Event()

    def write(self, data: bytes) -> None:
        self.writes.append(len(data))
        self.data += data
        self.wrote.set()

    def drain(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_int16_is_exactly_what_synth_writes() -> None:
    audio = np.random.default_rng(1).uniform(-1.2, 1.2, 5000).astype(np.float32)
    conv = Converter(DeviceFormat(22050))
    got = np.frombuffer(conv.to_bytes(conv.resample(audio, 22050)), "<i2")
    assert np.array_equal(got, AudioChunk(audio, 22050, 0).to_int16())


def test_formats_channels_and_rate() -> None:
    audio = np.linspace(-1, 1, 1000, dtype=np.float32)
    stereo32 = Converter(DeviceFormat(22050, 2, "int32"))
    out = np.frombuffer(stereo32.to_bytes(audio), "<i4").reshape(-1, 2)
    assert np.array_equal(out[:, 0], out[:, 1]) and out[0, 0] == -2147483647 and out[-1, 0] == 2147483647
    f32 = Converter(DeviceFormat(22050, 1, "float32"))
    assert np.array_equal(np.frombuffer(f32.to_bytes(audio * 2), "<f4"), np.clip(audio * 2, -1, 1))
    up = Converter(DeviceFormat(48000))
    res = up.resample(np.sin(np.arange(2205) / 5).astype(np.float32), 22050)
    assert res.size == 4800 and res.dtype == np.float32
    assert len(up.silence(10)) == 20
    half = np.frombuffer(Converter(DeviceFormat(22050)).to_bytes(audio, gain=0.5), "<i2")
    assert np.array_equal(half, np.clip(audio * np.float32(0.5) * 32767.0, -32767, 32767).astype(np.int16))


def _player(**kw) -> tuple[Player, list[RecordingStream], queue.Queue[PlayerReport]]:  # type: ignore[no-untyped-def]
    streams: list[RecordingStream] = []
    reports: queue.Queue[PlayerReport] = queue.Queue()

    def factory(device, fmt, block):  # type: ignore[no-untyped-def]
        streams.append(RecordingStream(device, fmt, block))
        return streams[-1]

    settings = PlayerSettings(device="default", format=DeviceFormat(22050), **kw)
    player = Player(settings, reports.put, stream_factory=factory)
    player.start()
    return player, streams, reports


def _until(reports: queue.Queue[PlayerReport], kind: str) -> PlayerReport:
    while True:
        r = reports.get(timeout=5)
        if r.kind == kind:
            return r


def test_untimed_jobs_write_large_blocks_and_timed_ones_small_blocks() -> None:
    """Issue 14: each write costs the audio thread about the same CPU whatever its size, so an
    announcement goes out in BLOCK_FRAMES blocks (the device opened with that buffer); a timed job
    (play_at) places its first frame by the device's queue, so its stream is reopened small."""
    player, streams, reports = _player()
    assert player.converter.format.rate == 22050
    try:
        tone = np.full(22050, 0.25, np.float32)
        for timed in (False, True, False):
            job = PlaybackJob("a", player.converter, 1.0)
            if timed:
                job.timed = TimedStart(time.time() + 0.2)
            player.submit(job)
            job.feed(tone, 22050, (0, 0))
            job.end()
            _until(reports, "finished")
        assert [s.block for s in streams] == [BLOCK_FRAMES, TIMED_BLOCK_FRAMES, BLOCK_FRAMES] == [1024, 256, 1024]
        for stream in (streams[0], streams[2]):
            assert max(stream.writes) == 2 * BLOCK_FRAMES and stream.writes.count(2 * BLOCK_FRAMES) >= 20
        timed_writes = streams[1].writes  # (bytes: int16 mono; the last one a block and the fade-out)
        assert timed_writes.count(2 * TIMED_BLOCK_FRAMES) >= 80 and max(timed_writes) < 4 * TIMED_BLOCK_FRAMES
    finally:
        player.close()


def test_lead_in_and_fades_of_a_whole_announcement() -> None:
    player, streams, reports = _player(lead_in_ms=100, fade_ms=5)
    try:
        job = PlaybackJob("a", player.converter, 1.0)
        player.submit(job)
        tone = np.full(3000, 0.5, np.float32)
        job.feed(tone, 22050, (0, 0))
        job.feed(tone, 22050, (0, 1))
        job.end()
        assert _until(reports, "finished").position == (0, 1)
        pcm = np.frombuffer(bytes(streams[0].data), "<i2")
        lead, fade = 2205, 110
        assert pcm.size == lead + 6000 and not pcm[:lead].any()
        body = pcm[lead:]
        assert body[0] == 0 and np.all(np.diff(body[:fade].astype(int)) >= 0)  # fade-in ramp
        assert np.all(body[fade:-fade] == 16383)  # untouched in between
        assert np.all(np.diff(body[-fade:].astype(int)) <= 0) and abs(int(body[-1])) < 200  # fade-out
    finally:
        player.close()


def test_preemption_fades_out_within_30_ms() -> None:
    # paced like a real device, so stop() lands mid-stream with seconds still buffered
    player, streams, reports = _player(fade_ms=5, preempt_fade_ms=20, block_frames=256, realtime_pacing=True)
    try:
        job = PlaybackJob("a", player.converter, 1.0)
        player.submit(job)
        job.feed(np.full(22050 * 5, 0.5, np.float32), 22050, (0, 3))  # 5 s, never ended
        _until(reports, "started")
        streams[0].wrote.wait(2)
        deadline = time.monotonic() + 5
        while len(streams[0].data) < 2 * 22050 // 3 and time.monotonic() < deadline:
            time.sleep(0.01)  # let it play ~1/3 s
        before = len(streams[0].data) // 2
        job.stop()
        stopped = _until(reports, "stopped")
        assert stopped.position == (0, 3)
        pcm = np.frombuffer(bytes(streams[0].data), "<i2")
        # at most one block already on its way + the fade: under 30 ms after stop()
        after = pcm[before:]
        assert after.size <= 256 + int(22050 * 0.020)
        assert pcm.size < 22050  # it did not play on: seconds of audio were still waiting
        tail = pcm[-int(22050 * 0.020) :].astype(int)
        assert tail[0] > 15000 and abs(tail[-1]) < 900 and np.all(np.diff(tail) <= 0)
    finally:
        player.close()


def test_failed_synthesis_ends_the_job_as_failed() -> None:
    player, streams, reports = _player()
    try:
        job = PlaybackJob("a", player.converter, 1.0)
        player.submit(job)
        job.fail("synthesis failed: boom")
        r = _until(reports, "failed")
        assert r.reason == "synthesis failed: boom" and r.job is job
    finally:
        player.close()


@pytest.mark.parametrize("rate", [16000, 44100])
def test_other_rates_are_converted_to_the_device_rate(rate: int) -> None:
    player, streams, reports = _player(fade_ms=0)
    try:
        job = PlaybackJob("a", player.converter, 1.0)
        player.submit(job)
        job.feed(np.full(rate, 0.25, np.float32), rate, (0, 0))  # one second
        job.end()
        _until(reports, "finished")
        pcm = np.frombuffer(bytes(streams[0].data), "<i2")
        assert pcm.size == 22050 and np.all(np.abs(pcm.astype(int) - 8191) <= 1)
    finally:
        player.close()
