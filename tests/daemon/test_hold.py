"""Speech held for the engine's lead (issue 14), end to end in the daemon (real mosquitto, ALSA
capture): the synthesis thread passes AudioChunk.lead_s to the job, a held start plays later but
whole, and a deadline fallback still wins while the speech is held and not yet heard."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator

from edgetts.engine import AudioChunk, SynthesisConfig
from edgetts.text.prepare import Prepared

from support.fakes import FakeVoice
from support.pcm import assert_played, find, tone

FADE = int(22050 * 5 / 1000)
FIRE = tone(1200, 0.5, amp=0.5)


class LeadVoice(FakeVoice):
    """A fake voice whose first chunk asks for ``lead_s`` of buffering before playback; each
    later sentence takes ``gap_s`` (so a text of several sentences has not ended when the lead is over)."""

    def __init__(self, lead_s: float, gap_s: float) -> None:
        super().__init__()
        self.lead_s, self.gap_s = lead_s, gap_s

    def synthesize(self, text: str | Prepared, config: SynthesisConfig | None = None) -> Iterator[AudioChunk]:
        for i, chunk in enumerate(super().synthesize(text, config)):
            if i:
                time.sleep(self.gap_s)
            yield dataclasses.replace(chunk, lead_s=self.lead_s) if i == 0 else chunk


def test_held_speech_starts_after_its_lead_and_plays_whole(daemon_rig) -> None:  # type: ignore[no-untyped-def]
    # Each sentence (>= 0.13 s of audio) comes 0.1 s after the one before: once started, it keeps up.
    rig = daemon_rig(LeadVoice(0.6, 0.1), audio_extra="realtime_pacing: true")
    text = " ".join(
        f"Platform {n} is closed." for n in ("one", "two", "three", "four", "five", "six", "seven", "eight")
    )
    t0 = time.monotonic()
    rig.probe.publish({"id": "h1", "text": text})
    seen = rig.capture.wait_for(rig.expected(text)[FADE : FADE + 500], timeout=10)
    assert seen - t0 >= 0.6, seen - t0
    done = rig.probe.wait_event("h1", "finished")
    assert done["underruns"] == 0 and done["gap_ms"] == 0
    assert rig.probe.wait_event("h1", "started")["latency_ms"] >= 600
    assert assert_played(rig.capture.pcm(), rig.expected(text), FADE) == 0


def test_deadline_fallback_wins_while_speech_is_held(daemon_rig) -> None:  # type: ignore[no-untyped-def]
    rig = daemon_rig(
        LeadVoice(3.0, 0.5),
        clips={"fire_alarm": FIRE},
        online_timeout=30,
        extra="fallback:\n  default_clip: fire_alarm\n  deadline_ms: 300\n",
    )
    text = "Fire in the east wing. Please leave the building."
    rig.probe.publish({"id": "f1", "text": text})
    fb = rig.probe.wait_event("f1", "fallback", 10)
    assert fb["reason"] == "deadline" and fb["clip"] == "fire_alarm"
    rig.probe.wait_event("f1", "finished", 10)
    assert rig.probe.events_of("f1") == ["queued", "fallback", "started", "finished"]
    time.sleep(1.0)  # the held speech never follows the clip
    pcm = rig.capture.pcm()
    fire = rig.clip("fire_alarm")
    assert assert_played(pcm, fire, FADE) == 0 and pcm.size == fire.size
    assert find(pcm, rig.expected(text)[FADE : FADE + 500]) < 0
