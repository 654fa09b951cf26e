"""Synchronized announcements in the daemon (issue 19): which are, what they are spoken with, what
their events and the status say (the daemon on a thread, the real mosquitto, the ALSA capture).

Where the first sample lands on a speaker with a real clock is tests/daemon/test_sync_zones.py;
here the capture (which consumes PCM at once) shows what was played, and the events when.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from edgetts.daemon.playout import sync
from edgetts.runtime.clock import ClockHealth
from edgetts.voice.piper.seeded_noise import seed_for

from support.fakes import FakeVoice
from support.pcm import tone

pytestmark = pytest.mark.mqtt

TEXT = "The train to the airport is arriving."
SORRY = tone(440, 0.4)


def _say(rig: Any, payload: dict[str, Any], topic: str | None = None, timeout: float = 20.0) -> dict[str, Any]:
    rig.probe.publish(payload, topic)
    rig.probe.wait_event(payload["id"], "finished", timeout)
    return rig.probe.wait_event(payload["id"], "started")


def test_play_at_is_kept_with_seeded_whole_sentences(daemon_rig: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("edgetts.daemon.playout.play.clock_health", lambda: ClockHealth(True, 0.2, 1.0))
    voice = FakeVoice()
    rig = daemon_rig(voice)
    plain = _say(rig, {"id": "plain", "text": TEXT})
    assert "sync_error_ms" not in plain and voice.configs[-1] is not None and voice.configs[-1].seed is None
    play_at = time.time() + 1.2
    started = _say(rig, {"id": "zone-1", "text": TEXT, "play_at": play_at})
    # the same noise on every board: the seed of its id
    assert voice.configs[-1] is not None and voice.configs[-1].seed == seed_for("zone-1")
    assert abs(started["ts"] - play_at) < 0.2, started["ts"] - play_at  # held for its time, not played at once
    assert isinstance(started["sync_error_ms"], float) and "late_ms" not in started
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
    voice = FakeVoice()
    rig = daemon_rig(
        voice, device_extra="groups: [platform-2, station]", extra="sync:\n  groups: [platform-2]\n  lead_s: 1.0\n"
    )
    sent = time.time()
    synced = _say(rig, {"id": "g1", "text": TEXT}, "test/group/platform-2/announce")
    assert 0.8 < synced["ts"] - sent < 1.3 and "sync_error_ms" in synced
    assert voice.configs[-1] is not None and voice.configs[-1].seed == seed_for("g1")
    other = _say(rig, {"id": "g2", "text": TEXT}, "test/group/station/announce")  # not a sync group
    assert "sync_error_ms" not in other and voice.configs[-1] is not None and voice.configs[-1].seed is None


class SlowStart(FakeVoice):
    """Its first sentence takes ``first_s`` (a slow board's first inference), the rest none."""

    def __init__(self, first_s: float) -> None:
        super().__init__()
        self.first_s = first_s

    def synthesize(self, text: Any, config: Any = None) -> Any:
        for n, chunk in enumerate(super().synthesize(text, config)):
            if n == 0:
                time.sleep(self.first_s)
            yield chunk


LONG = (
    "The evening service to the coast is delayed by about twenty minutes. "
    "Passengers for the harbour should change at the central station today. "
    "Refreshments are available in the waiting room on platform one. Thank you."
)


def test_late_speech_joins_in_step_skipping_what_is_past(daemon_rig: Any) -> None:
    voice = SlowStart(0.6)
    rig = daemon_rig(voice)
    play_at = time.time() + 0.1
    started = _say(rig, {"id": "late", "text": LONG, "play_at": play_at})
    assert 300 < started["late_ms"] < 1500, started
    # What was heard is the text without its first late_ms: in step with the speakers on time.
    full = sum(voice.sentence_audio(i, s).size for i, s in enumerate(voice.sentences(LONG)))
    pcm = rig.capture.pcm().astype(np.float32) / 32767.0
    loud = np.flatnonzero(np.abs(pcm) > 0.01)
    skipped_ms = (full - (loud[-1] - loud[0] + 1)) / 22050 * 1000
    assert abs(skipped_ms - started["late_ms"]) < 30, (skipped_ms, started["late_ms"])


def test_late_speech_with_sync_late_fallback_plays_its_clip(daemon_rig: Any) -> None:
    voice = FakeVoice(delay_s=1.5)
    rig = daemon_rig(voice, clips={"sorry": SORRY}, extra="sync:\n  late: fallback\n")
    play_at = time.time() + 0.6
    rig.probe.publish({"id": "fb", "text": TEXT, "play_at": play_at, "fallback": "sorry"})
    fallback = rig.probe.wait_event("fb", "fallback")
    rig.probe.wait_event("fb", "finished")
    started = rig.probe.wait_event("fb", "started")
    assert fallback["reason"] == "deadline" and fallback["detail"] == "no speech ready at play_at (sync/late: fallback)"
    assert abs(started["ts"] - play_at) < 0.2, started["ts"] - play_at  # the clip, at play_at


def test_speech_ready_only_after_all_of_it_was_due_expires(daemon_rig: Any) -> None:
    rig = daemon_rig(SlowStart(0.8))
    rig.probe.publish({"id": "gone", "text": "Mind the gap.", "play_at": time.time() + 0.05})  # ~0.13 s of speech
    expired = rig.probe.wait_event("gone", "expired")
    assert "play_at" in expired["reason"] and rig.probe.events_of("gone") == ["queued", "expired"]
    assert np.abs(rig.capture.pcm().astype(np.int32)).max(initial=0) <= 1  # nothing heard, not even late
    # (acknowledged like any end: the daemon goes on with the next one)
    started = _say(rig, {"id": "next", "text": TEXT})
    assert "late_ms" not in started
