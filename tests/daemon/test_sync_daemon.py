"""Synchronized announcements in the daemon (issue 19): which are, what they are spoken with, what
their events and the status say (the daemon on a thread, the real mosquitto, the ALSA capture).

Where the first sample lands on a speaker with a real clock is tests/daemon/test_sync_zones.py;
here the capture (which consumes PCM at once) shows what was played, and a stream wrapper
(:class:`_Writes`, the daemon's stream_factory seam) when each block was handed to the device, on
the test's clock.  No wall-clock upper bound (issue 39): "held for its time" is a LOWER bound a busy
machine cannot break (it only makes a start later), and how late a start was is what the daemon
REPORTED (`late_ms`), which must agree, sample for sample, with what the capture holds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from edgetts.audio.convert import DeviceFormat, float_to_int16
from edgetts.audio.player import TIMED_BLOCK_FRAMES, PlayerSettings
from edgetts.audio.timeline import RUN_AHEAD_S
from edgetts.daemon.playout import sync
from edgetts.daemon.playout.sound_card import OutputStream
from edgetts.engine import AudioChunk, SynthesisConfig
from edgetts.runtime.clock import ClockHealth
from edgetts.text.prepare import Prepared
from edgetts.voice.piper.seeded_noise import seed_for

from support.fakes import FakeVoice
from support.pcm import find, tone

pytestmark = pytest.mark.mqtt

TEXT = "The train to the airport is arriving."
SORRY = tone(440, 0.4)
RATE = 22050
FADE = int(RATE * PlayerSettings.fade_ms / 1000)
"""The fade-in of a job's first samples (edgetts.audio.player: fade_ms)."""
ROUNDING = 0.05e-3 * RATE
"""`late_ms` is said to 0.1 ms (edgetts.daemon.playout.play._sync_fields): <= 1.1 samples off."""


class _Writes(OutputStream):
    """The real (ALSA file) stream, and for every write: when it began on the test's clock
    (time.monotonic(), read before the write: never later than the audio thread handed it), how
    many frames, whether any was audible; and the largest delay the stream reported."""

    def __init__(self, device: str | int | None, fmt: DeviceFormat, block_frames: int) -> None:
        super().__init__(device, fmt, block_frames)
        self.log: list[tuple[float, int, bool]] = []
        self.max_delay_s = 0.0

    def delay_s(self) -> float | None:
        delay = super().delay_s()
        self.max_delay_s = max(self.max_delay_s, delay or 0.0)
        return delay

    def write(self, data: bytes) -> None:
        pcm = np.frombuffer(data, "<i2")
        self.log.append((time.monotonic(), pcm.size, bool(pcm.size) and int(np.abs(pcm).max()) > 1))
        super().write(data)


class _Streams:
    """The stream_factory of a rig: every stream it opened."""

    def __init__(self) -> None:
        self.opened: list[_Writes] = []

    def __call__(self, device: str | int | None, fmt: DeviceFormat, block_frames: int) -> _Writes:
        stream = _Writes(device, fmt, block_frames)
        self.opened.append(stream)
        return stream

    def first_audible_after(self, mono: float) -> float:
        """When the first audible block written at or after ``mono`` was handed to the device."""
        return min(t for s in self.opened for t, _, loud in s.log if loud and t >= mono)

    def earliest_s(self) -> float:
        """How much before its target a timed job's first sample can be handed to this device, by the
        code (edgetts.audio.timeline): the timeline keeps a stream that never blocks (the file
        plugin) at most max(RUN_AHEAD_S, reported delay + 2 blocks) ahead of real time by its own
        account (DeviceClock.runs_ahead), fixes the first sample when the target is 2 blocks off by
        the reported delay (TimedPlay._to_target), and the check comes before one more block is
        written.  The delay is the largest this stream reported (measured: 0 for the file plugin)."""
        block_s = TIMED_BLOCK_FRAMES / RATE
        delay = max((s.max_delay_s for s in self.opened), default=0.0)
        return max(RUN_AHEAD_S, delay + 2 * block_s) + block_s

    def lost_s(self, since: float) -> float:
        """The audio thread's own account of the timeline it lost since ``since`` (as
        DeviceClock.wrote keeps it: a write that began after what was written before it ran out
        re-bases it): a stalled audio thread writes fewer frames, and a stream that never blocks
        (the file plugin) never counts that, so a late join may be said that much less late."""
        lost = 0.0
        for s in self.opened:
            end: float | None = None
            for t, n, _ in s.log:
                if end is not None and t > end and t >= since:
                    lost += t - end
                end = (t if end is None else max(end, t)) + n / RATE
        return lost


def _mono_of(at_unix: float) -> tuple[float, float]:
    """``at_unix`` on the monotonic clock: (never later, never earlier) than it is (the monotonic
    clock read either side of the wall clock: a stall between readings only widens the pair)."""
    before = time.monotonic()
    unix = time.time()
    after = time.monotonic()
    return at_unix - unix + before, at_unix - unix + after


def _heard_as_reported(
    pcm: np.ndarray, expected: np.ndarray, late_ms: float, whole: bool, start: int = 0, reports: object = None
) -> int:
    """The capture holds ``expected`` (float, gain 1) less exactly the first ``late_ms`` of it (the
    samples whose time had passed, edgetts.audio.timeline.TimedPlay._skip_past), faded in from
    there, after silence: no sample skipped that was not said, none played that was said skipped.
    ``whole``: (no underrun counted) the rest, to its last fade_ms, is all there, unbroken.
    ``start``: the capture's length before it was published; ``reports``: what the product said, for
    the failure's message.  Returns how many samples were skipped."""
    said = late_ms * RATE / 1000.0
    ints = float_to_int16(expected)
    probe = int(said + ROUNDING) + 1 + FADE  # (past the fade-in of any skip the report allows)
    at = find(pcm, ints[probe : probe + int(0.1 * RATE)], start)
    assert at >= 0, (
        f"the announcement's samples (after what late_ms says was skipped) are not in the capture: {reports}"
    )
    base = at - probe  # where the job's sample 0 is (would have been) in the capture
    for skip in range(max(0, int(said - ROUNDING)), int(said + ROUNDING) + 1):
        head = expected[skip:probe].copy()
        head[:FADE] *= np.arange(FADE, dtype=np.float32) / np.float32(FADE)
        got = pcm[base + skip : base + probe].astype(np.int32)
        before = pcm[max(0, base + skip - 64) : base + skip]
        if np.all(np.abs(got - float_to_int16(head)) <= 1) and not np.any(before):
            break
    else:
        raise AssertionError(f"the capture does not start {late_ms} ms into the announcement: {reports}")
    if whole:
        assert find(pcm, ints[probe:-FADE], at) == at, f"the rest of the announcement is not all there: {reports}"
    return skip


def _say(rig: Any, payload: dict[str, Any], topic: str | None = None, timeout: float = 20.0) -> dict[str, Any]:
    rig.probe.publish(payload, topic)
    rig.probe.wait_event(payload["id"], "finished", timeout)
    return rig.probe.wait_event(payload["id"], "started")


def _audio(voice: FakeVoice, text: str) -> np.ndarray:
    return np.concatenate([voice.sentence_audio(i, s) for i, s in enumerate(voice.sentences(text))])


def test_play_at_is_kept_with_seeded_whole_sentences(daemon_rig: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("edgetts.daemon.playout.play.clock_health", lambda: ClockHealth(True, 0.2, 1.0))
    voice, streams = FakeVoice(), _Streams()
    rig = daemon_rig(voice, stream_factory=streams)
    plain = _say(rig, {"id": "plain", "text": TEXT})
    assert "sync_error_ms" not in plain and voice.configs[-1] is not None and voice.configs[-1].seed is None
    sent, heard_before = time.monotonic(), rig.capture.pcm().size
    play_at = time.time() + 1.2
    rig.probe.publish({"id": "zone-1", "text": TEXT, "play_at": play_at})
    done = rig.probe.wait_event("zone-1", "finished")
    started = rig.probe.wait_event("zone-1", "started")
    # the same noise on every board: the seed of its id
    assert voice.configs[-1] is not None and voice.configs[-1].seed == seed_for("zone-1")
    # Held for its time, not played at once: never handed to the device before play_at, less what
    # the timeline may run ahead (a lower bound a busy machine only makes easier)...
    first = streams.first_audible_after(sent)
    assert first >= _mono_of(play_at)[0] - streams.earliest_s(), (first - _mono_of(play_at)[0], streams.earliest_s())
    # ...and not later than it said: a start it did not report late played every sample (a late
    # one skips what is past), and one it reported late skipped exactly that.
    assert isinstance(started["sync_error_ms"], float)
    late_ms = started.get("late_ms", 0.0)
    assert _heard_as_reported(
        rig.capture.pcm(), _audio(voice, TEXT), late_ms, done["underruns"] == 0, heard_before
    ) == (0 if "late_ms" not in started else pytest.approx(late_ms * RATE / 1000, abs=ROUNDING))
    assert "detail" not in started  # the clock is synchronized here (patched)
    status = rig.probe.wait_status(lambda s: s.get("current") is None)
    assert all(d["what"] != "clock" for d in status["degraded"])


def test_an_unsynchronized_clock_still_plays_and_says_so(daemon_rig: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = {"now": ClockHealth(False, 16000.0, 16000.0, "clock not synchronized (no NTP: chrony, ...)")}
    monkeypatch.setattr("edgetts.daemon.playout.play.clock_health", lambda: clock["now"])
    rig = daemon_rig()
    started = _say(rig, {"id": "u1", "text": TEXT, "play_at": time.time() + 0.5})
    assert started["detail"].startswith(sync.CLOCK_UNSYNCED) and "no NTP" in started["detail"]
    status = rig.probe.wait_status(lambda s: any(d["what"] == "clock" for d in s["degraded"]))
    assert next(d for d in status["degraded"] if d["what"] == "clock")["reason"] == started["detail"]
    clock["now"] = ClockHealth(True, 0.1, 0.5)  # NTP caught up: the next synchronized one clears it
    _say(rig, {"id": "u2", "text": TEXT, "play_at": time.time() + 0.5})
    rig.probe.wait_status(lambda s: s.get("current") is None and all(d["what"] != "clock" for d in s["degraded"]))


def test_a_sync_group_plays_at_receipt_plus_its_lead(daemon_rig: Any) -> None:
    voice, streams = FakeVoice(), _Streams()
    rig = daemon_rig(
        voice,
        device_extra="groups: [platform-2, station]",
        extra="sync:\n  groups: [platform-2]\n  lead_s: 1.0\n",
        stream_factory=streams,
    )
    sent = time.monotonic()  # (the daemon receives it after this)
    rig.probe.publish({"id": "g1", "text": TEXT}, "test/group/platform-2/announce")
    done = rig.probe.wait_event("g1", "finished")
    synced = rig.probe.wait_event("g1", "started")
    assert "sync_error_ms" in synced
    # Not before receipt + lead (less what the timeline may run ahead); how late: what it said.
    first = streams.first_audible_after(sent)
    assert first - sent >= 1.0 - streams.earliest_s(), (first - sent, streams.earliest_s())
    late_ms = synced.get("late_ms", 0.0)
    if done["underruns"] and done["gap_ms"] > 0:
        # A dropout the product counted (a stall of this process: the audio thread's catch-up
        # skipped what it stood for, edgetts.audio.timeline) is not a wrong sample: the rest is
        # there, exactly, to the end.
        rest = float_to_int16(_audio(voice, TEXT))[-FADE - int(0.3 * RATE) : -FADE]
        assert find(rig.capture.pcm(), rest, 0) >= 0, "the end of the announcement is not in the capture"
    else:
        skipped = _heard_as_reported(rig.capture.pcm(), _audio(voice, TEXT), late_ms, True, reports=(synced, done))
        assert skipped == (0 if "late_ms" not in synced else pytest.approx(late_ms * RATE / 1000, abs=ROUNDING))
    assert voice.configs[-1] is not None and voice.configs[-1].seed == seed_for("g1")
    other = _say(rig, {"id": "g2", "text": TEXT}, "test/group/station/announce")  # not a sync group
    assert "sync_error_ms" not in other and voice.configs[-1] is not None and voice.configs[-1].seed is None


class _HeldFirst(FakeVoice):
    """Its first sentence waits until the test :meth:`release`s it (a slow board's first inference,
    its cost set by the test, not by this machine), the rest none; open until :meth:`hold`."""

    def __init__(self) -> None:
        super().__init__()
        self._open, self._waiting = threading.Event(), threading.Event()
        self._open.set()

    def hold(self) -> None:
        self._open.clear()

    def wait_held(self) -> None:
        assert self._waiting.wait(20), "the voice was never asked to speak"

    def release(self) -> float:
        """Let it go on; when (monotonic)."""
        released = time.monotonic()
        self._open.set()
        return released

    def synthesize(self, text: str | Prepared, config: SynthesisConfig | None = None) -> Iterator[AudioChunk]:
        for n, chunk in enumerate(super().synthesize(text, config)):
            if n == 0 and not self._open.is_set():
                self._waiting.set()
                assert self._open.wait(60), "never released"  # (only bounds a hang)
            yield chunk


def _until(mono: float) -> None:
    """Until the monotonic clock reads ``mono`` (the test's clock passing play_at: what the test is
    about, not a wait for something to have happened)."""
    time.sleep(max(0.0, mono - time.monotonic()))


LONG = (
    "The evening service to the coast is delayed by about twenty minutes. "
    "Passengers for the harbour should change at the central station today. "
    "Refreshments are available in the waiting room on platform one. Thank you."
)


LATE_S = 0.6
"""How long after play_at the late voice is released."""


def test_late_speech_joins_in_step_skipping_what_is_past(daemon_rig: Any) -> None:
    voice, streams = _HeldFirst(), _Streams()
    rig = daemon_rig(voice, stream_factory=streams)
    voice.hold()
    play_at = time.time() + 0.1
    rig.probe.publish({"id": "late", "text": LONG, "play_at": play_at})
    voice.wait_held()
    due_lo, due_hi = _mono_of(play_at)
    _until(due_hi + LATE_S)
    released = voice.release()  # (nothing of it can be written before this)
    done = rig.probe.wait_event("late", "finished")
    started = rig.probe.wait_event("late", "started")
    # Said late by at least how late it came (a lower bound by construction: no audio before the
    # release), less what the timeline may run ahead at the target (earliest_s) and the timeline
    # the audio thread lost meanwhile without counting it (measured: lost_s; a file stream never
    # blocks, so a stall there is not seen as a loss).  Load only makes it later.
    lost = streams.lost_s(due_lo - 1.0)
    floor_ms = 1000 * (released - due_hi - streams.earliest_s() - lost)
    assert started["late_ms"] >= floor_ms, (started, floor_ms, lost)
    # What was heard is the text without exactly its first late_ms: in step with the speakers on
    # time (no wall-clock bound: the report, checked sample for sample against the capture).
    skipped = _heard_as_reported(rig.capture.pcm(), _audio(voice, LONG), started["late_ms"], done["underruns"] == 0)
    assert skipped == pytest.approx(started["late_ms"] * RATE / 1000, abs=ROUNDING)


def test_late_speech_with_sync_late_fallback_plays_its_clip(daemon_rig: Any) -> None:
    voice, streams = _HeldFirst(), _Streams()
    rig = daemon_rig(voice, clips={"sorry": SORRY}, extra="sync:\n  late: fallback\n", stream_factory=streams)
    voice.hold()  # no speech until the test says so: the deadline never races it
    sent = time.monotonic()
    play_at = time.time() + 0.6
    rig.probe.publish({"id": "fb", "text": TEXT, "play_at": play_at, "fallback": "sorry"})
    fallback = rig.probe.wait_event("fb", "fallback")
    voice.release()
    done = rig.probe.wait_event("fb", "finished")
    started = rig.probe.wait_event("fb", "started")
    assert fallback["reason"] == "deadline" and fallback["detail"] == "no speech ready at play_at (sync/late: fallback)"
    # The clip, at play_at: not before it (less the timeline's run-ahead), and as late as it said.
    first = streams.first_audible_after(sent)
    assert first >= _mono_of(play_at)[0] - streams.earliest_s(), (first - _mono_of(play_at)[0], streams.earliest_s())
    clip = rig.daemon.clips.get("sorry")
    assert clip is not None
    late_ms = started.get("late_ms", 0.0)
    skipped = _heard_as_reported(rig.capture.pcm(), clip.audio * np.float32(clip.gain), late_ms, done["underruns"] == 0)
    assert skipped == (0 if "late_ms" not in started else pytest.approx(late_ms * RATE / 1000, abs=ROUNDING))


def test_speech_ready_only_after_all_of_it_was_due_expires(daemon_rig: Any) -> None:
    voice, streams = _HeldFirst(), _Streams()
    rig = daemon_rig(voice, stream_factory=streams)
    voice.hold()
    text = "Mind the gap."
    play_at = time.time() + 0.05
    rig.probe.publish({"id": "gone", "text": text, "play_at": play_at})
    voice.wait_held()
    # Released once all of it is past by the timeline's own account: its length, plus what the
    # timeline may run ahead (earliest_s), plus 0.5 s for timeline the audio thread might lose
    # uncounted meanwhile (checked below: measured, it must not have used that up).
    due_lo, due_hi = _mono_of(play_at)
    _until(due_hi + _audio(voice, text).size / RATE + streams.earliest_s() + 0.5)
    voice.release()
    expired = rig.probe.wait_event("gone", "expired")
    assert "play_at" in expired["reason"] and rig.probe.events_of("gone") == ["queued", "expired"], (
        rig.probe.events_of("gone"),
        streams.lost_s(due_lo - 1.0),
    )
    assert np.abs(rig.capture.pcm().astype(np.int32)).max(initial=0) <= 1  # nothing heard, not even late
    # (acknowledged like any end: the daemon goes on with the next one)
    started = _say(rig, {"id": "next", "text": TEXT})
    assert "late_ms" not in started
