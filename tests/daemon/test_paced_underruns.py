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
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pytest

from edgetts.audio.convert import DeviceFormat
from edgetts.audio.job import PlaybackJob
from edgetts.audio.player import Player, PlayerReport, PlayerSettings
from edgetts.daemon.playout.sound_card import OutputStream

from tools.paced_sink import _PAREC_LATENCY_MS, PacedSink, Recording, find_gaps, onset_s

RATE = 22050

pytestmark = pytest.mark.realtime  # a sink with a real clock: only real time can tell


class _Stalls:
    """The longest a thread of this process waited beyond its 1 ms sleep while in the block: the
    scheduler's (and the GIL's) wake-up latency here and now, measured, for the margins."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        last = time.monotonic()
        while not self._stop.is_set():
            time.sleep(0.001)
            now = time.monotonic()
            self.longest = max(self.longest, now - last - 0.001)
            last = now

    def __enter__(self) -> _Stalls:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


def _device_latency_s() -> float:
    """The output latency PortAudio reports for the paced sink (what the player's underrun count
    tolerates before it counts: edgetts.audio.writer)."""
    stream = OutputStream("default", DeviceFormat(RATE), PlayerSettings.block_frames)
    try:
        return stream.latency_s
    finally:
        stream.close()


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
    job: PlaybackJob,
    n: int,
    piece_s: float,
    stall_after: int | None = None,
    stall_s: float = 0.0,
    stalled: list[float] | None = None,
) -> None:
    """``stalled`` gets how long the stall really took (the sleep, as this machine kept it)."""
    samples = int(round(piece_s * RATE))
    for i in range(n):
        if stall_after is not None and i == stall_after:
            t = time.monotonic()
            time.sleep(stall_s)  # the slow board: the next piece comes late
            if stalled is not None:
                stalled.append(time.monotonic() - t)
        job.feed(_tone(piece_s, start=i * samples), RATE, (0, i), speech=True)
    job.end()


class _Played(NamedTuple):
    started: PlayerReport
    done: PlayerReport
    pcm: np.ndarray
    rec: Recording
    submitted: float
    """time.monotonic() just before the job was submitted."""


def _play(
    sink: PacedSink,
    job: PlaybackJob,
    player: Player,
    reports: queue.Queue[PlayerReport],
    producer: threading.Thread | None,
    on_started: Callable[[], None] | None = None,
) -> _Played:
    """Play ``job`` while recording; ``on_started`` is called once it reported `started`."""
    with sink.record() as rec:
        time.sleep(0.2)  # silence before: the onset is found in the recording
        submitted = time.monotonic()
        player.submit(job)
        if producer is not None:
            producer.start()
        started = _until(reports, "started")
        if on_started is not None:
            on_started()
        finished = _until(reports, "finished")
        if producer is not None:
            producer.join(10)
        time.sleep(0.3)
        pcm = rec.stop()
    return _Played(started, finished, pcm, rec, submitted)


POLL_S = 0.02
"""How long the audio thread waits on a job's queue before it looks at a hold again
(edgetts.audio.player._UntimedPlay.turn: pull(min(0.02, wait)))."""


def _heard_as_reported(played: _Played, index: float, written: float, latency: float, stall: float) -> float:
    """When sample ``index`` of the recording was heard, checked against when the player wrote it
    (``written``, its own clock; returned).  Not before, less what the recording's time line can
    place a sample early: it is fitted to the earliest of parec's deliveries, and the sink renders
    for parec a chunk of up to the latency parec asks for at once (tools.paced_sink: its samples
    are mapped as if rendered by the chunk's end; seen: 3.8 ms).  No later than the device's
    latency (the buffer ahead of the write) plus the longest stall (between reading the clock and
    the write; and the recording's reader, whose lateness only makes the line later)."""
    heard = played.rec.mono_at(index)
    chunk = _PAREC_LATENCY_MS / 1000
    assert written - chunk - stall <= heard <= written + latency + stall, (heard - written, latency, chunk, stall)
    return heard


def _heard_s(pcm: np.ndarray, fed_s: float, latency: float, holes_s: float = 0.0) -> float:
    """How much of ``fed_s`` seconds of audio the recording holds (first to last sample above 1 LSB,
    less ``holes_s`` of silence between): never more than was fed; all of it but the fades' quiet
    samples. (The tail is heard too: the stream's drain waits out what the device
    has queued before it stops; it used to drop it through ALSA's pulse plugin.) Returns it."""
    loud = np.flatnonzero(np.abs(pcm.astype(np.int32)) > 1)
    heard = (loud[-1] - loud[0] + 1) / RATE - holes_s
    # The sound's own fade-in and fade-out; a hole is bordered by two more (the sound before it
    # fades out, the one after fades in), whose quiet samples the hole's measured length takes.
    fades = (2 + (2 if holes_s else 0)) * PlayerSettings.fade_ms / 1000
    assert fed_s - fades <= heard <= fed_s, (heard, fed_s, latency)
    return heard


def _no_hole_it_did_not_count(done: PlayerReport, pcm: np.ndarray, stall: float, latency: float) -> None:
    """No dropout counted and none heard; or, where this machine stalled a thread longer than the
    device's latency (the most a late write is tolerated), no more holes heard than it counted."""
    gaps = find_gaps(pcm, RATE)
    if done.underruns == 0:
        assert done.gap_ms == 0.0 and gaps == [], (done, gaps)
    else:
        assert stall > latency and len(gaps) <= done.underruns, (done, gaps, stall, latency)


def test_a_stalled_producer_is_an_underrun_found_in_the_recording(paced_env: PacedSink) -> None:
    latency = _device_latency_s()
    player, reports = _player()
    try:
        # Fed ahead of time: nothing runs dry, unless this machine stalled the audio thread
        # longer than the device's latency (then it is counted, and heard as counted).
        ahead = PlaybackJob("ahead", player.converter, 1.0)
        _feed_pieces(ahead, 8, 0.1)
        with _Stalls() as stalls:
            _, done, pcm, _, _ = _play(paced_env, ahead, player, reports, None)
        assert onset_s(pcm, RATE) is not None
        if done.underruns == 0:
            assert done.gap_ms == 0.0 and find_gaps(pcm, RATE) == [], find_gaps(pcm, RATE)
        else:
            assert stalls.longest > latency, (done, stalls.longest, latency)

        # 0.2 s fed, then the producer stalls 0.6 s: the device runs dry after the 0.2 s in hand.
        stalled = PlaybackJob("stalled", player.converter, 1.0)
        took: list[float] = []
        producer = threading.Thread(target=_feed_pieces, args=(stalled, 6, 0.1, 2, 0.6, took))
        with _Stalls() as stalls:
            _, done, pcm, _, _ = _play(paced_env, stalled, player, reports, producer)
        # Margin, each part measured: the device's latency (the player's account of a gap assumes
        # it plays from the first write; the sink starts up to that much later) and the longest
        # stall a thread here had meanwhile (the audio thread wakes that late at worst).
        margin = latency + stalls.longest
        dry = took[0] - 0.2  # the stall as this machine kept it, less the audio in hand
        print(f"latency {1000 * latency:.1f} ms, longest stall {1000 * stalls.longest:.1f} ms, dry {1000 * dry:.0f} ms")
        assert done.underruns >= 1
        assert dry - margin <= done.gap_ms / 1000 <= dry + margin, (done.gap_ms, dry, margin)
        gaps = [g for g in find_gaps(pcm, RATE) if g[1] >= 0.05]
        assert 1 <= len(gaps) <= done.underruns, (gaps, done.underruns)  # no hole it did not count
        start, length = max(gaps, key=lambda g: g[1])
        onset = onset_s(pcm, RATE)
        assert onset is not None
        # Where, by samples not time: after the 0.2 s in hand less the fade the player holds back
        # (fade_ms) -- within the fade-in's first quiet samples (onset is the first above 1 LSB).
        # (Holes before it, had the machine starved the audio thread too, shift it by their length.)
        in_hand = 0.2 - PlayerSettings.fade_ms / 1000
        earlier = sum(n for s0, n in find_gaps(pcm, RATE) if s0 < start)
        assert abs(start - earlier - onset - in_hand) <= PlayerSettings.fade_ms / 1000, (start, onset, earlier)
        # How long: what the player reported, heard.
        heard = sum(n for _, n in gaps)
        assert abs(heard - done.gap_ms / 1000) <= margin, (heard, done.gap_ms, margin)
    finally:
        player.close()


def test_a_held_job_starts_after_its_lead_and_not_as_an_underrun(paced_env: PacedSink) -> None:
    latency = _device_latency_s()
    player, reports = _player()
    try:
        job = PlaybackJob("held", player.converter, 1.0)
        fed: list[float] = []
        holds: list[tuple[int, float] | None] = []

        def produce() -> None:
            fed.append(time.monotonic())
            job.feed(_tone(0.3), RATE, (0, 0), speech=True, lead_s=0.5)
            holds.append(job.hold())  # (the time the job says it may be heard: fed + lead, or later)
            job.feed(_tone(0.3, start=int(0.3 * RATE)), RATE, (0, 1), speech=True)
            time.sleep(0.9)  # the text ends after the hold: the hold is kept
            job.end()

        with _Stalls() as stalls:
            played = _play(paced_env, job, player, reports, threading.Thread(target=produce))
        started, done, pcm = played.started, played.done, played.pcm
        assert holds[0] is not None
        until = holds[0][1]
        # Held for its lead, a lower bound by construction (nothing is written before the hold
        # ends; load only makes it later); and started no later than one poll of the audio thread
        # (POLL_S) plus the longest stall a thread here had meanwhile (it wakes that late at worst).
        assert until >= fed[0] + 0.5
        assert until <= started.at_mono <= until + POLL_S + stalls.longest, (started.at_mono - until, stalls.longest)
        # What the report says is what was heard: its first sample when it said, both pieces whole
        # (0.6 s, less the fade-in's and fade-out's quiet samples), and no hole it did not count.
        onset = onset_s(pcm, RATE)
        assert onset is not None
        _heard_as_reported(played, onset * RATE, started.at_mono, latency, stalls.longest)
        assert started.position == (0, 0) and done.position == (0, 1), (started, done)
        _heard_s(pcm, 0.6, latency)
        _no_hole_it_did_not_count(done, pcm, stalls.longest, latency)

        # A later piece's lead, fed while the hold lasts, extends it (the engine learned the text
        # needs more in hand); one fed once playback has begun changes nothing.
        job = PlaybackJob("extended", player.converter, 1.0)
        fed.clear()
        holds.clear()

        def produce_extended() -> None:
            fed.append(time.monotonic())
            job.feed(_tone(0.3), RATE, (0, 0), speech=True, lead_s=0.3)
            time.sleep(0.1)
            fed.append(time.monotonic())
            job.feed(_tone(0.3, start=int(0.3 * RATE)), RATE, (0, 1), speech=True, lead_s=0.6)
            holds.append(job.hold())
            time.sleep(0.9)
            job.feed(_tone(0.3, start=int(0.6 * RATE)), RATE, (0, 2), speech=True, lead_s=2.0)
            holds.append(job.hold())  # (begun: no hold any more)
            job.end()

        with _Stalls() as stalls:
            played = _play(paced_env, job, player, reports, threading.Thread(target=produce_extended))
        started, done, pcm = played.started, played.done, played.pcm
        assert holds[0] is not None and holds[1] is None, holds
        until = holds[0][1]
        # Extended: held to the second piece's lead (by construction), as above at most one poll
        # and the longest stall later.
        assert until >= fed[1] + 0.6
        assert until <= started.at_mono <= until + POLL_S + stalls.longest, (started.at_mono - until, stalls.longest)
        onset = onset_s(pcm, RATE)
        assert onset is not None
        _heard_as_reported(played, onset * RATE, started.at_mono, latency, stalls.longest)
        # The third piece's lead came too late to hold anything: all three pieces, unbroken.
        assert done.position == (0, 2), done
        _heard_s(pcm, 0.9, latency)
        _no_hole_it_did_not_count(done, pcm, stalls.longest, latency)

        # A chime queued ahead plays during the hold; the speech still waits for its lead.
        job = PlaybackJob("chimed", player.converter, 1.0)
        fed.clear()
        holds.clear()

        def produce_chimed() -> None:
            fed.append(time.monotonic())
            job.feed(_tone(0.2, 660.0), RATE, (0, -1))
            job.feed(_tone(0.3), RATE, (0, 0), speech=True, lead_s=0.5)
            holds.append(job.hold())
            time.sleep(0.8)
            job.end()

        with _Stalls() as stalls:
            played = _play(paced_env, job, player, reports, threading.Thread(target=produce_chimed))
        started, done, pcm = played.started, played.done, played.pcm
        assert holds[0] is not None
        until = holds[0][1]
        # The chime did not wait for the hold: it started as soon as it was fed, at most one poll
        # and the longest stall later (a chime held with the speech would start at `until`).
        assert started.position == (0, -1) and done.position == (0, 0), (started, done)
        assert started.at_mono <= fed[0] + POLL_S + stalls.longest, (started.at_mono - fed[0], stalls.longest)
        onset = onset_s(pcm, RATE)
        assert onset is not None
        _heard_as_reported(played, onset * RATE, started.at_mono, latency, stalls.longest)
        # The held speech heard at its time: the player writes it when what is queued ahead of it
        # (the chime) runs out at `until` by its account, which assumes the device plays from the
        # first write (it starts up to its latency later: never earlier); one poll and the longest
        # stall later at most (and the recording's line may place it a parec chunk early).  The
        # silence between is the hold, no underrun.
        gaps = [g for g in find_gaps(pcm, RATE) if g[1] >= 0.05]
        assert len(gaps) == 1, gaps  # between the chime and the held speech
        speech = played.rec.mono_at((gaps[0][0] + gaps[0][1]) * RATE)
        stall = stalls.longest
        chunk = _PAREC_LATENCY_MS / 1000  # (the recording's line, as in _heard_as_reported)
        assert until - chunk - stall <= speech <= until + POLL_S + latency + stall, (speech - until, latency, stall)
        _heard_s(pcm, 0.5, latency, gaps[0][1])
        if done.underruns:  # (only a stall beyond the device's latency, counted as such)
            assert stall > latency, (done, stall, latency)
        else:
            assert done.gap_ms == 0.0, done

        # A text that ends during its hold plays at once: when submitted, at most one poll and the
        # longest stall later (held, it would start 3 s after it was fed).
        job = PlaybackJob("short", player.converter, 1.0)
        job.feed(_tone(0.2), RATE, (0, 0), speech=True, lead_s=3.0)
        job.end()
        with _Stalls() as stalls:
            played = _play(paced_env, job, player, reports, None)
        started, done, pcm = played.started, played.done, played.pcm
        assert played.submitted <= started.at_mono <= played.submitted + POLL_S + stalls.longest, (
            started.at_mono - played.submitted,
            stalls.longest,
        )
        onset = onset_s(pcm, RATE)
        assert onset is not None
        _heard_as_reported(played, onset * RATE, started.at_mono, latency, stalls.longest)
        _heard_s(pcm, 0.2, latency)
        _no_hole_it_did_not_count(done, pcm, stalls.longest, latency)
    finally:
        player.close()


def test_a_deadline_fallback_wins_while_speech_is_held(paced_env: PacedSink) -> None:
    latency = _device_latency_s()
    player, reports = _player()
    try:
        job = PlaybackJob("fallback", player.converter, 1.0)
        job.feed(_tone(0.2, 660.0), RATE, (0, -1))  # a chime before
        job.feed(_tone(0.5, 440.0), RATE, (0, 0), speech=True, lead_s=1.0)
        assert job.speech_fed and not job.speech_committed
        hold = job.hold()
        assert hold is not None
        took: list[tuple[bool, float]] = []

        def deadline() -> None:
            # The deadline comes while the chime plays (its `started` event, not a time: the speech
            # is then still held for ~0.8 s more, and a chime still playing leaves no hole).
            started.wait(10)
            took.append((job.take_over(_tone(0.4, 1000.0), RATE, (0, 1_000_000), before_speech=True), time.monotonic()))

        started = threading.Event()
        fallback = threading.Thread(target=deadline)
        with _Stalls() as stalls:
            played = _play(paced_env, job, player, reports, fallback, on_started=started.set)
        done, pcm = played.done, played.pcm
        # Took over: unless the hold had run out by then (the chime in hand counts towards it), which
        # only a stall of ~0.8 s could do; then it was right to refuse, and says so here.
        assert took and took[0][0], (took, hold[1], stalls.longest)
        assert job.taken_over and done.kind == "finished"
        assert played.started.position == (0, -1) and done.position == (0, 1_000_000), (played.started, done)
        onset = onset_s(pcm, RATE)
        assert onset is not None
        _heard_as_reported(played, onset * RATE, played.started.at_mono, latency, stalls.longest)
        # Heard: the chime and the clip, not the held speech; all of both (0.6 s).
        loud = np.flatnonzero(np.abs(pcm.astype(np.int32)) > 1)
        heard = pcm[loud[0] : loud[-1] + 1].astype(np.float64)
        spectrum = np.abs(np.fft.rfft(heard))
        freqs = np.fft.rfftfreq(heard.size, 1 / RATE)

        def energy(f: float) -> float:
            return float(spectrum[(freqs > f - 20) & (freqs < f + 20)].sum())

        assert energy(1000.0) > 10 * energy(440.0) and energy(660.0) > 10 * energy(440.0)
        _heard_s(pcm, 0.6, latency)
        _no_hole_it_did_not_count(done, pcm, stalls.longest, latency)

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
