"""Underruns and holds on a sound card with a real clock (issue 14).

The player plays through the real PyAudio sound card (edgetts.daemon.playout.sound_card) into the paced
sink (tests/support/paced.py: a private PulseAudio null sink), whose recording shows what a
listener hears: a producer that stalls mid-job leaves a hole there, which the player's report
must count; a job fed ahead leaves none; a job held for the engine's lead starts that late.
"""

from __future__ import annotations

import queue
import threading
import time

import numpy as np
import pytest

from edgetts.audio.convert import DeviceFormat
from edgetts.audio.job import PlaybackJob
from edgetts.audio.player import Player, PlayerReport, PlayerSettings
from edgetts.daemon.playout.sound_card import OutputStream

from tools.paced_sink import PacedSink, find_gaps, onset_s

RATE = 22050


@pytest.fixture()
def paced_env(paced_sink: PacedSink, monkeypatch: pytest.MonkeyPatch) -> PacedSink:
    """This process's ALSA (PyAudio) routed to the paced sink."""
    for key, value in paced_sink.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("ALSA_CAPTURE_FILE", raising=False)
    return paced_sink


def _tone(seconds: float, freq: float = 440.0, start: int = 0) -> np.ndarray:
    """A sine continuing from sample ``start`` (pieces of it join without a seam)."""
    t = (np.arange(int(round(seconds * RATE))) + start) / RATE
    return (0.4 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def _player() -> tuple[Player, queue.Queue[PlayerReport]]:
    reports: queue.Queue[PlayerReport] = queue.Queue()
    player = Player(
        PlayerSettings(device="default", format=DeviceFormat(RATE)), reports.put, stream_factory=OutputStream
    )
    player.start()
    return player, reports


def _until(reports: queue.Queue[PlayerReport], kind: str, timeout: float = 15.0) -> PlayerReport:
    deadline = time.monotonic() + timeout
    while True:
        r = reports.get(timeout=max(0.01, deadline - time.monotonic()))
        if r.kind == kind:
            return r


def _feed_pieces(
    job: PlaybackJob, n: int, piece_s: float, stall_after: int | None = None, stall_s: float = 0.0
) -> None:
    samples = int(round(piece_s * RATE))
    for i in range(n):
        if stall_after is not None and i == stall_after:
            time.sleep(stall_s)  # the slow board: the next piece comes late
        job.feed(_tone(piece_s, start=i * samples), RATE, (0, i), speech=True)
    job.end()


def _play(
    sink: PacedSink,
    job: PlaybackJob,
    player: Player,
    reports: queue.Queue[PlayerReport],
    producer: threading.Thread | None,
) -> tuple[PlayerReport, PlayerReport, np.ndarray, float]:
    """Play ``job`` while recording; (started, finished, recording, recording's start)."""
    with sink.record() as rec:
        time.sleep(0.2)  # silence before: the onset is found in the recording
        player.submit(job)
        if producer is not None:
            producer.start()
        started = _until(reports, "started")
        finished = _until(reports, "finished")
        if producer is not None:
            producer.join(10)
        time.sleep(0.3)
        pcm = rec.stop()
    return started, finished, pcm, rec.started_mono


def test_a_stalled_producer_is_an_underrun_found_in_the_recording(paced_env: PacedSink) -> None:
    player, reports = _player()
    try:
        # Fed ahead of time: nothing runs dry.
        ahead = PlaybackJob("ahead", player.converter, 1.0)
        _feed_pieces(ahead, 8, 0.1)
        _, done, pcm, _ = _play(paced_env, ahead, player, reports, None)
        assert done.underruns == 0 and done.gap_ms == 0.0
        assert onset_s(pcm, RATE) is not None
        assert find_gaps(pcm, RATE) == [], find_gaps(pcm, RATE)

        # 0.2 s fed, then the producer stalls 0.6 s: the device runs dry ~0.4 s after 0.2 s of tone.
        stalled = PlaybackJob("stalled", player.converter, 1.0)
        producer = threading.Thread(target=_feed_pieces, args=(stalled, 6, 0.1, 2, 0.6))
        _, done, pcm, _ = _play(paced_env, stalled, player, reports, producer)
        assert done.underruns >= 1
        assert 250.0 <= done.gap_ms <= 600.0, done.gap_ms
        gaps = [g for g in find_gaps(pcm, RATE) if g[1] >= 0.05]
        assert len(gaps) == 1, gaps
        start, length = gaps[0]
        onset = onset_s(pcm, RATE)
        assert onset is not None
        # Where: after about the 0.2 s that was in hand (less the fade the player holds back).
        assert 0.12 <= start - onset <= 0.25, (start, onset)
        # How long: what the player reported, within the scheduler's jitter on 2 busy cores.
        assert abs(length * 1000.0 - done.gap_ms) <= max(60.0, 0.2 * done.gap_ms), (length, done.gap_ms)
    finally:
        player.close()


def test_a_held_job_starts_after_its_lead_and_not_as_an_underrun(paced_env: PacedSink) -> None:
    player, reports = _player()
    try:
        job = PlaybackJob("held", player.converter, 1.0)
        fed: list[float] = []

        def produce() -> None:
            fed.append(time.monotonic())
            job.feed(_tone(0.3), RATE, (0, 0), speech=True, lead_s=0.5)
            job.feed(_tone(0.3, start=int(0.3 * RATE)), RATE, (0, 1), speech=True)
            time.sleep(0.9)  # the text ends after the hold: the hold is kept
            job.end()

        started, done, pcm, rec_start = _play(paced_env, job, player, reports, threading.Thread(target=produce))
        assert 0.49 <= started.at_mono - fed[0] <= 0.6, started.at_mono - fed[0]
        onset = onset_s(pcm, RATE)
        assert onset is not None
        heard = rec_start + onset - fed[0]
        assert 0.45 <= heard <= 0.8, heard  # + the sink's latency
        assert done.underruns == 0 and done.gap_ms == 0.0
        assert find_gaps(pcm, RATE) == []

        # A later piece's lead, fed while the hold lasts, extends it (the engine learned the text
        # needs more in hand); one fed once playback has begun changes nothing.
        job = PlaybackJob("extended", player.converter, 1.0)
        fed.clear()

        def produce_extended() -> None:
            fed.append(time.monotonic())
            job.feed(_tone(0.3), RATE, (0, 0), speech=True, lead_s=0.3)
            time.sleep(0.1)
            fed.append(time.monotonic())
            job.feed(_tone(0.3, start=int(0.3 * RATE)), RATE, (0, 1), speech=True, lead_s=0.6)
            time.sleep(0.9)
            job.feed(_tone(0.3, start=int(0.6 * RATE)), RATE, (0, 2), speech=True, lead_s=2.0)
            job.end()

        started, done, pcm, rec_start = _play(
            paced_env, job, player, reports, threading.Thread(target=produce_extended)
        )
        assert 0.59 <= started.at_mono - fed[1] <= 0.7, started.at_mono - fed[1]
        assert done.underruns == 0 and done.gap_ms == 0.0
        assert find_gaps(pcm, RATE) == []  # the third piece's lead came too late to hold anything

        # A chime queued ahead plays during the hold; the speech still waits for its lead.
        job = PlaybackJob("chimed", player.converter, 1.0)
        fed.clear()

        def produce_chimed() -> None:
            job.feed(_tone(0.2, 660.0), RATE, (0, -1))
            fed.append(time.monotonic())
            job.feed(_tone(0.3), RATE, (0, 0), speech=True, lead_s=0.5)
            time.sleep(0.8)
            job.end()

        started, done, pcm, rec_start = _play(paced_env, job, player, reports, threading.Thread(target=produce_chimed))
        assert started.at_mono - fed[0] < 0.15  # the chime did not wait
        gaps = [g for g in find_gaps(pcm, RATE) if g[1] >= 0.05]
        assert len(gaps) == 1, gaps  # between the chime and the held speech
        speech_heard = rec_start + gaps[0][0] + gaps[0][1] - fed[0]
        assert 0.45 <= speech_heard <= 0.8, speech_heard
        assert done.underruns == 0 and done.gap_ms == 0.0

        # A text that ends during its hold plays at once.
        job = PlaybackJob("short", player.converter, 1.0)
        t0 = time.monotonic()
        job.feed(_tone(0.2), RATE, (0, 0), speech=True, lead_s=3.0)
        job.end()
        started, done, _, _ = _play(paced_env, job, player, reports, None)
        assert started.at_mono - t0 < 1.0
    finally:
        player.close()


def test_a_deadline_fallback_wins_while_speech_is_held(paced_env: PacedSink) -> None:
    player, reports = _player()
    try:
        job = PlaybackJob("fallback", player.converter, 1.0)
        job.feed(_tone(0.2, 660.0), RATE, (0, -1))  # a chime before
        job.feed(_tone(0.5, 440.0), RATE, (0, 0), speech=True, lead_s=1.0)
        assert job.speech_fed and not job.speech_committed

        def deadline() -> None:
            time.sleep(0.3)
            assert job.take_over(_tone(0.4, 1000.0), RATE, (0, 1_000_000), before_speech=True)

        fallback = threading.Thread(target=deadline)
        _, done, pcm, _ = _play(paced_env, job, player, reports, fallback)
        assert job.taken_over and done.kind == "finished"
        # Heard: the chime and the clip, not the held speech.
        loud = np.flatnonzero(np.abs(pcm.astype(np.int32)) > 1)
        heard = pcm[loud[0] : loud[-1] + 1].astype(np.float64)
        spectrum = np.abs(np.fft.rfft(heard))
        freqs = np.fft.rfftfreq(heard.size, 1 / RATE)

        def energy(f: float) -> float:
            return float(spectrum[(freqs > f - 20) & (freqs < f + 20)].sum())

        assert energy(1000.0) > 10 * energy(440.0) and energy(660.0) > 10 * energy(440.0)

        # Once playback has begun, the speech is committed: a deadline no longer replaces it.
        job = PlaybackJob("late", player.converter, 1.0)
        job.feed(_tone(0.3), RATE, (0, 0), speech=True, lead_s=0.2)
        player.submit(job)
        _until(reports, "started")
        assert job.speech_committed
        assert not job.take_over(_tone(0.2, 1000.0), RATE, (0, 9), before_speech=True)
        job.end()
        _until(reports, "finished")
    finally:
        player.close()
