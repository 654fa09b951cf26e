"""Fallback (issue 6): which clip, and the four reasons end to end against the
real mosquitto and the ALSA capture plugin: voice missing/corrupt, synthesis
raised, nothing speakable, and the deadline (a generated slow ONNX voice)."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from edgetts.daemon.playout.fallback import choose, compile_rules
from edgetts.engine import AudioChunk, SynthesisConfig
from edgetts.text.prepare import Prepared
from edgetts.vocabulary import FALLBACK_REASONS

from support.fakes import FakeVoice
from support.pcm import assert_played, find, tone

FADE = int(22050 * 5 / 1000)


# ------------------------------------------------------------- rule matching


def test_reason_names_are_the_interface() -> None:
    assert FALLBACK_REASONS == ("voice_unavailable", "synthesis_error", "deadline", "unspeakable")


def test_rule_matching_order() -> None:
    rules = compile_rules([("fire|evacuat", "fire_alarm"), ("fire|smoke", "smoke"), ("train", "trains")])
    # the announcement's own field beats every rule
    assert choose("own_clip", "Fire in hall B", rules, "sorry").clip == "own_clip"
    # the first matching rule wins (both 0 and 1 match), case-insensitive search anywhere in the text
    got = choose(None, "FIRE in hall B", rules, "sorry")
    assert (got.clip, got.source) == ("fire_alarm", "rule 0")
    assert choose(None, "Please EVACUATE now", rules, "sorry").clip == "fire_alarm"
    assert choose(None, "smoke seen", rules, "sorry").clip == "smoke"
    assert choose(None, "The train is late", rules, "sorry").clip == "trains"
    # no rule matches: the default; no default: nothing (the announcement fails as before)
    got = choose(None, "Lunch is served", rules, "sorry")
    assert (got.clip, got.source) == ("sorry", "default")
    assert choose(None, "Lunch is served", rules, None) is None
    assert choose(None, None, rules, None) is None


# ------------------------------------------------------------------ the daemon


SORRY = tone(440, 0.4)
FIRE = tone(1200, 0.5, amp=0.5)


@pytest.mark.mqtt
@pytest.mark.parametrize("broken", ["missing", "corrupt"])
def test_broken_voice_file_daemon_up_clip_plays_status_degraded(
    daemon_rig, tmp_path: Path, broken: str, test_voices
) -> None:
    model = tmp_path / f"{broken}.onnx"
    if broken == "corrupt":
        model.write_bytes(b"this is no ONNX model" * 50)
        model.with_name(model.name + ".json").write_text('{"audio": {"sample_rate": 22050}}')
    rig = daemon_rig(
        real_voices=True,
        clips={"sorry": SORRY, "fire_alarm": FIRE},
        online_timeout=30,
        voice_extra=f"model: {model}",
        extra="fallback:\n  default_clip: sorry\n  rules:\n    - {match: fire, clip: fire_alarm}\n",
    )
    # up, online, and the status says which voice and why
    degraded = {d["what"]: d["reason"] for d in rig.status["degraded"]}
    assert set(degraded) == {"voice"}, rig.status
    assert str(model) in degraded["voice"] and "'default'" in degraded["voice"]
    assert rig.thread.is_alive()

    rig.probe.publish({"id": "t1", "text": "The shop closes in ten minutes."})
    rig.probe.wait_event("t1", "finished")
    assert rig.probe.events_of("t1") == ["queued", "fallback", "started", "finished"]
    fb = rig.probe.wait_event("t1", "fallback")
    assert fb["reason"] == "voice_unavailable" and fb["clip"] == "sorry" and str(model) in fb["detail"]
    pcm = rig.capture.pcm()
    sorry = rig.clip("sorry")
    assert assert_played(pcm, sorry, FADE) == 0 and pcm.size == sorry.size
    # a rule picks another clip; a clip announcement plays as such (no fallback event)
    rig.probe.publish({"id": "t2", "text": "Fire in the kitchen."})
    rig.probe.publish({"id": "t3", "clip": "sorry"})
    rig.probe.wait_event("t3", "finished")
    assert rig.probe.wait_event("t2", "fallback")["clip"] == "fire_alarm"
    assert rig.probe.events_of("t3") == ["queued", "started", "finished"]
    at = assert_played(rig.capture.pcm(), rig.clip("fire_alarm"), FADE, sorry.size)
    assert_played(rig.capture.pcm(), sorry, FADE, at + rig.clip("fire_alarm").size)
    # the file is fixed: a reload loads the voice, `degraded` clears, speech comes back
    model.write_bytes(test_voices["ok"].read_bytes())
    model.with_name(model.name + ".json").write_bytes(
        test_voices["ok"].with_name(test_voices["ok"].name + ".json").read_bytes()
    )
    rig.daemon.on_signal(signal.SIGHUP)
    rig.probe.wait_status(lambda s: s["degraded"] == [] and s["voice"] == broken)
    rig.probe.publish({"id": "t4", "text": "Speech again."})
    rig.probe.wait_event("t4", "finished")
    assert rig.probe.events_of("t4") == ["queued", "started", "finished"]


class RaisingVoice(FakeVoice):
    """Raises mid-way for texts with "boom" (after `good` sentences were yielded)."""

    def __init__(self, good: int = 0) -> None:
        super().__init__()
        self.good = good

    def synthesize(self, text: str | Prepared, config: SynthesisConfig | None = None) -> Iterator[AudioChunk]:
        for i, chunk in enumerate(super().synthesize(text, config)):
            if "boom" in FakeVoice.source(text) and i >= self.good:
                raise RuntimeError("injected failure in the model")
            yield chunk


@pytest.mark.mqtt
def test_synthesis_exception_and_unspeakable_play_the_fallback(daemon_rig) -> None:
    voice = RaisingVoice()
    rig = daemon_rig(
        voice,
        clips={"sorry": SORRY, "fire_alarm": FIRE, "own": tone(300, 0.3)},
        online_timeout=30,
        extra="fallback:\n  default_clip: sorry\n  rules:\n    - {match: fire, clip: fire_alarm}\n",
    )
    assert rig.status["degraded"] == []
    rig.probe.publish({"id": "b1", "text": "Fire boom here."})
    rig.probe.wait_event("b1", "finished")
    assert rig.probe.events_of("b1") == ["queued", "fallback", "started", "finished"]
    fb = rig.probe.wait_event("b1", "fallback")
    assert fb["reason"] == "synthesis_error" and fb["clip"] == "fire_alarm"
    assert "injected failure" in fb["detail"]
    pcm = rig.capture.pcm()
    fire = rig.clip("fire_alarm")
    assert assert_played(pcm, fire, FADE) == 0 and pcm.size == fire.size
    # nothing speakable: the announcement's own fallback field wins over the rules
    rig.probe.publish({"id": "u1", "text": "... !!!", "fallback": "own"})
    rig.probe.wait_event("u1", "finished")
    fb = rig.probe.wait_event("u1", "fallback")
    assert fb["reason"] == "unspeakable" and fb["clip"] == "own"
    assert_played(rig.capture.pcm(), rig.clip("own"), FADE, fire.size)
    # an unknown fallback clip is rejected like an unknown clip
    rig.probe.publish({"id": "u2", "text": "Hello.", "fallback": "nope"})
    assert "unknown fallback 'nope'" in rig.probe.wait_event("u2", "rejected")["reason"]
    rig.probe.publish({"id": "u3", "text": "Hello.", "fallback": "../etc/passwd"})
    assert "not allowed" in rig.probe.wait_event("u3", "rejected")["reason"]


@pytest.mark.mqtt
def test_error_mid_announcement_appends_the_clip(daemon_rig) -> None:
    voice = RaisingVoice(good=1)
    rig = daemon_rig(voice, clips={"sorry": SORRY}, online_timeout=30, extra="fallback:\n  default_clip: sorry\n")
    text = "First sentence boom. Second one never comes."
    rig.probe.publish({"id": "m1", "text": text})
    rig.probe.wait_event("m1", "finished")
    events = rig.probe.events_of("m1")  # `started` (sentence 1) and `fallback` race: both happen
    assert events[0] == "queued" and events[-1] == "finished"
    assert sorted(events[1:3]) == ["fallback", "started"]
    first = voice.sentence_audio(0, voice.sentences(text)[0])
    first16 = np.clip(first * 32767.0, -32767, 32767).astype(np.int16)
    pcm = rig.capture.pcm()
    # the first sentence, then the clip in the same stream (one fade at each end)
    body = np.concatenate([first16, rig.clip("sorry")])
    assert assert_played(pcm, body, FADE) == 0 and pcm.size == body.size


@pytest.mark.mqtt
def test_no_fallback_clip_still_fails_with_the_reason(daemon_rig) -> None:
    rig = daemon_rig(
        RaisingVoice(),
        clips={"ok": SORRY},
        online_timeout=30,
        extra="fallback:\n  rules:\n    - {match: x, clip: gone}\n",
    )
    # a configured fallback clip that is not in the library is reported
    assert rig.status["degraded"] == [{"what": "clips", "reason": "fallback clips not in clips/dir: gone"}]
    rig.probe.publish({"id": "n1", "text": "boom."})
    assert "injected failure" in rig.probe.wait_event("n1", "failed")["reason"]
    assert rig.probe.events_of("n1") == ["queued", "failed"]


@pytest.mark.mqtt
def test_slow_voice_misses_the_deadline_fallback_clip_in_time(daemon_rig, test_voices) -> None:
    """The generated `slow` model takes ~1 s a sentence here; the deadline is 300 ms."""
    deadline_ms = 300
    rig = daemon_rig(
        real_voices=True,
        clips={"sorry": SORRY, "fire_alarm": FIRE},
        online_timeout=30,
        voice_extra=f"model: {test_voices['slow']}",
        extra=f"fallback:\n  default_clip: sorry\n  deadline_ms: {deadline_ms}\n"
        "  rules:\n    - {match: fire, clip: fire_alarm}\n",
    )
    assert rig.status["degraded"] == []
    fire = rig.clip("fire_alarm")
    t0 = time.monotonic()
    rig.probe.publish({"id": "s1", "text": "Fire in the east wing. Please leave the building."})
    seen = rig.capture.wait_for(fire[FADE : FADE + 2000], timeout=10)
    # on the captured PCM: the clip began within the deadline (+ slack for a loaded 2-core VM)
    print(f"clip in the capture {1000 * (seen - t0):.0f} ms after publish")
    assert seen - t0 < (deadline_ms + 250) / 1000, seen - t0
    rig.probe.wait_event("s1", "finished")
    assert rig.probe.events_of("s1") == ["queued", "fallback", "started", "finished"]
    fb = rig.probe.wait_event("s1", "fallback")
    assert fb["reason"] == "deadline" and fb["clip"] == "fire_alarm" and "300 ms" in fb["detail"]
    started = rig.probe.wait_event("s1", "started")
    assert deadline_ms <= started["latency_ms"] < deadline_ms + 200
    # the late speech never follows the clip: wait out the synthesis, nothing else was played
    time.sleep(2.5)
    pcm = rig.capture.pcm()
    assert assert_played(pcm, fire, FADE) == 0 and pcm.size == fire.size
    # the per-announcement deadline_ms overrides the config (long enough for the real speech)
    rig.probe.publish({"id": "s2", "text": "Okay.", "deadline_ms": 20000})
    rig.probe.wait_event("s2", "finished", 30)
    assert rig.probe.events_of("s2") == ["queued", "started", "finished"]
    assert rig.capture.pcm().size > fire.size and find(rig.capture.pcm(), fire, fire.size) < 0
    # With `repeat`, the clip stands in for every repetition, not just the first.
    before = rig.capture.pcm().size
    rig.probe.publish({"id": "s3", "text": "Fire drill now.", "repeat": 2})
    assert rig.probe.wait_event("s3", "fallback")["reason"] == "deadline"
    rig.probe.wait_event("s3", "finished", 30)
    time.sleep(2.5)  # the late speech never follows the clips
    pcm = rig.capture.pcm()
    core = fire[FADE:-FADE]
    first = find(pcm, core, before)
    assert first >= 0 and find(pcm, core, first + 1) == first + fire.size
    assert pcm.size - before == 2 * fire.size
