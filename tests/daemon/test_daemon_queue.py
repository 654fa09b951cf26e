"""The daemon in-process with a fake voice, against the real mosquitto and the
ALSA capture plugin: ordering, preemption, expiry, dedup, malformed payloads,
reload.  (The real voice, sd_notify and SIGKILL replay: test_daemon_process.py.)
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import numpy as np
import pytest

from support.fakes import FakeVoice
from support.pcm import assert_played, find

pytestmark = pytest.mark.mqtt


FADE = int(22050 * 5 / 1000)


def test_publish_plays_the_synthesized_pcm(daemon_rig) -> None:
    rig = daemon_rig(audio_extra="lead_in_ms: 100")
    text = "Platform two. The train is late. Sorry."
    rig.probe.publish({"id": "a1", "text": text})
    rig.probe.wait_event("a1", "finished")
    assert rig.probe.events_of("a1") == ["queued", "started", "finished"]
    started = next(e for e in rig.probe.events if e["event"] == "started")
    assert started["latency_ms"] > 0 and isinstance(started["ts"], float)
    pcm = rig.capture.pcm()
    expected = rig.expected(text)
    at = assert_played(pcm, expected, FADE)
    # the lead-in is silence written before the speech, and nothing but it
    assert at == int(22050 * 0.1)
    assert not pcm[:at].any()
    assert pcm.size == at + expected.size
    # a plain-text payload is spoken too, with a generated id
    rig.probe.publish("Shift change in ten minutes.")
    rig.probe.wait(lambda p: sum(e["event"] == "finished" for e in p.events) == 2)
    assert_played(rig.capture.pcm(), rig.expected("Shift change in ten minutes."), FADE, at + expected.size)


def test_priority_order_fifo_and_preemption(daemon_rig) -> None:
    rig = daemon_rig(audio_extra="realtime_pacing: true")
    long_text = " ".join(f"Sentence number {i} of the long one." for i in range(8))  # ~4 s paced
    rig.probe.publish({"id": "long", "text": long_text, "priority": "low"})
    rig.probe.wait_event("long", "started")
    for ident, prio in (("n1", "normal"), ("h1", "high"), ("n2", "normal")):
        rig.probe.publish({"id": ident, "text": f"Message {ident}.", "priority": prio})
    rig.probe.wait_event("n2", "queued")
    time.sleep(0.3)
    rig.probe.publish({"id": "fire", "text": "Fire alarm. Leave now.", "priority": "emergency"})
    rig.probe.wait_event("long", "finished", timeout=60)
    starts = [e["id"] for e in rig.probe.events if e["event"] == "started"]
    # the emergency interrupted the low one; the rest in priority order, FIFO within one;
    # the interrupted one resumed last (it is the least urgent)
    assert starts == ["long", "fire", "h1", "n1", "n2", "long"]
    assert rig.probe.events_of("long") == ["queued", "started", "preempted", "started", "finished"]
    preempted = next(e for e in rig.probe.events if e["event"] == "preempted")
    assert "resumes from sentence" in preempted["reason"]
    pcm = rig.capture.pcm()
    fire_at = assert_played(pcm, rig.expected("Fire alarm. Leave now."), FADE)
    # just before the emergency: the interrupted speech fading out (20 ms), not a cut
    before = pcm[:fire_at].astype(np.int32)
    tail = before[-int(22050 * 0.02) :]
    assert np.abs(tail[-20:]).max() < np.abs(tail[:200]).max() / 4
    # the resumed announcement restarts at a sentence boundary: its last sentence is whole
    sentences = rig.voice.sentences(long_text)
    last = np.clip(rig.voice.sentence_audio(7, sentences[7]) * 32767, -32767, 32767).astype(np.int16)
    assert find(pcm, last[FADE:-FADE], fire_at) > 0


def test_preempted_announcement_dropped_when_configured(daemon_rig) -> None:
    rig = daemon_rig(audio_extra="realtime_pacing: true", queue_extra="on_preempt: drop")
    rig.probe.publish({"id": "bg", "text": " ".join(["Background music notice."] * 6)})
    rig.probe.wait_event("bg", "started")
    rig.probe.publish({"id": "now", "text": "Urgent.", "priority": "high", "interrupt": True})
    rig.probe.wait_event("now", "finished")
    time.sleep(0.5)
    assert rig.probe.events_of("bg") == ["queued", "started", "preempted"]
    assert "dropped" in next(e["reason"] for e in rig.probe.events if e["event"] == "preempted")


def test_expiry_and_dedup(daemon_rig) -> None:
    rig = daemon_rig(audio_extra="realtime_pacing: true")
    rig.probe.publish({"id": "busy", "text": "One. Two. Three. Four. Five. Six."})
    rig.probe.wait_event("busy", "started")
    rig.probe.publish({"id": "short-lived", "text": "Too late.", "ttl": 0.3})
    rig.probe.publish({"id": "past", "text": "Long gone.", "expires_at": time.time() - 5})
    rig.probe.publish({"id": "dup", "text": "Once only."})
    rig.probe.publish({"id": "dup", "text": "Once only."})
    rig.probe.wait_event("dup", "finished", timeout=30)
    rig.probe.publish({"id": "dup", "text": "Once only."})  # after it played: still a duplicate
    rig.probe.publish({"id": "marker", "text": "Marker."})
    rig.probe.wait_event("marker", "finished")
    assert rig.probe.events_of("short-lived") == ["queued", "expired"]
    assert rig.probe.events_of("past") == ["expired"]
    assert rig.probe.events_of("dup") == ["queued", "started", "finished"]
    pcm = rig.capture.pcm()
    once = rig.expected("Once only.")
    first = assert_played(pcm, once, FADE)
    assert find(pcm, once[FADE:-FADE], first + once.size) == -1  # played once
    assert find(pcm, rig.expected("Too late.")[FADE:-FADE]) == -1


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"\xff\xfe announce", "not UTF-8"),
        (b'{"id": "j1", "text": "unterminated', "bad JSON"),
        (b'{"id": "t1", "text": 42}', "text must be a string"),
        (b'{"id": "t2", "text": "x", "priority": "urgent"}', "priority must be"),
        (b'{"id": "t3", "text": "x", "volume": "loud"}', "volume must be a number"),
        (b'{"id": "t4", "text": "x", "repeat": 2.5}', "repeat must be an integer"),
        (b'{"id": "t5", "text": "x", "colour": "red"}', "unknown key"),
        (b'{"id": "h1", "text": "' + b"a" * 2500 + b'"}', "text too long"),
        (b'{"id": "v1", "text": "x", "voice": "klingon"}', "unknown voice"),
        (b'{"id": "c1", "clip": "doorbell"}', "unknown clip"),
        (b'{"id": "c2", "clip": "../../etc/passwd"}', "not allowed"),
        (b'{"id": "c3", "clip": "/etc/passwd"}', "not allowed"),
        (b'{"id": "c4", "chime": "a\\u0000b", "text": "x"}', "not allowed"),
        (b'{"id": "e1", "text": "   "}', "text is empty"),
        (b'<speak>Gate <break time="soon"/> closing</speak>', "bad SSML"),
        (b'{"id": "s2", "text": "<speak>Gate <blink>17</blink></speak>"}', "bad SSML"),
        (b'{"id": "s3", "text": "<speak>Gate 17"}', "bad SSML"),
        (b"[1, 2]", ""),
    ],
)
def test_malformed_payload_is_rejected_and_nothing_plays(daemon_rig, payload: bytes, reason: str) -> None:
    rig = daemon_rig()
    rig.probe.publish(payload)
    rig.probe.wait(
        lambda p: any(e["event"] == "rejected" for e in p.events) or bool(reason) is False and len(p.events) > 0, 10
    )
    rejected = [e for e in rig.probe.events if e["event"] == "rejected"]
    if reason:
        assert len(rejected) == 1 and reason in rejected[0]["reason"], rig.probe.events
    # nothing else happens: a following good announcement is the only thing played
    rig.probe.publish({"id": "after", "text": "All good."})
    rig.probe.wait_event("after", "finished")
    others = [e for e in rig.probe.events if e["id"] != "after" and e["event"] != "rejected"]
    if reason:
        assert others == []
    pcm = rig.capture.pcm()
    expected = rig.expected("All good.")
    at = assert_played(pcm, expected, FADE)
    if reason:
        assert at == 0 and pcm.size == expected.size
    assert rig.voice.calls[-1] == "All good."


def test_voice_per_announcement_and_queue_overflow(daemon_rig) -> None:
    rig = daemon_rig(
        audio_extra="realtime_pacing: true", queue_extra="max_length: 2", extra="voices:\n  alt:\n    model: alt\n"
    )
    rig.probe.publish({"id": "first", "text": "One. Two. Three. Four."})
    rig.probe.wait_event("first", "started")
    rig.probe.publish({"id": "q1", "text": "In the alt voice.", "voice": "alt"})
    rig.probe.publish({"id": "q2", "text": "Second.", "priority": "low"})
    rig.probe.publish({"id": "q3", "text": "Third.", "priority": "low"})  # full, not more urgent
    rig.probe.publish({"id": "q4", "text": "Urgent.", "priority": "high"})  # displaces q2
    rig.probe.wait_event("q1", "finished", timeout=30)
    assert "queue full" in rig.probe.wait_event("q3", "rejected")["reason"]
    assert "displaced" in rig.probe.wait_event("q2", "rejected")["reason"]
    rig.probe.publish({"id": "q2", "text": "Second, again.", "priority": "low"})  # never played: welcome
    rig.probe.wait(lambda p: p.events_of("q2")[-2:] == ["started", "finished"], 30, "q2 retried")
    assert rig.probe.events_of("q4")[:3] == ["queued", "started", "finished"]
    # the alt voice is 16 kHz: converted to the device rate in the one converter
    status = rig.probe.statuses[-1]
    assert set(status["voices"]) == {"default", "alt"}


def test_reload_bad_file_keeps_old_config_and_reports_it(daemon_rig) -> None:
    rig = daemon_rig()
    good = rig.config.read_text()
    rig.config.write_text(good.replace("queue:\n", "queue:\n  max_length: many\n"))
    rig.daemon.on_signal(signal.SIGHUP)
    st = rig.probe.wait_status(lambda s: any(d["what"] == "config" for d in s["degraded"]))
    reason = next(d["reason"] for d in st["degraded"] if d["what"] == "config")
    assert "old config in force" in reason and "queue/max_length" in reason and ":" in reason
    rig.probe.publish({"id": "still", "text": "Still speaking."})
    rig.probe.wait_event("still", "finished")
    # a good file with a new voice and a lead-in: voice loaded beside, then chosen per
    # announcement; the audio change applies from the next announcement
    rig.config.write_text(good.replace("audio:\n", "audio:\n  lead_in_ms: 100\n") + "voices:\n  alt:\n    model: alt\n")
    rig.daemon.on_signal(signal.SIGHUP)
    st = rig.probe.wait_status(lambda s: "alt" in s["voices"] and not s["degraded"])
    before = rig.capture.pcm().size
    rig.probe.publish({"id": "after-reload", "text": "With a lead in."})
    rig.probe.wait_event("after-reload", "finished")
    pcm = rig.capture.pcm()
    at = assert_played(pcm, rig.expected("With a lead in."), FADE, before)
    assert at - before == 2205 and not pcm[before:at].any()
    rig.probe.publish({"id": "alt1", "text": "New voice.", "voice": "alt"})
    rig.probe.wait_event("alt1", "finished")


def test_reload_reloads_the_voices_when_and_only_when_their_text_settings_change(daemon_rig) -> None:
    rig = daemon_rig(extra="voices:\n  alt:\n    model: alt\n")
    daemon, loads = rig.daemon, rig.loads
    models = sorted({model for model, _ in loads})
    assert "alt" in models
    good = rig.config.read_text()

    def reload(text: str, applied) -> list[tuple[str, object]]:  # type: ignore[no-untyped-def]
        before = len(loads)
        rig.config.write_text(text)
        daemon.on_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while not applied(daemon.config):
            assert time.monotonic() < deadline, "reload not applied"
            time.sleep(0.02)
        return loads[before:]

    # an audio change keeps the loaded voices
    audio = good.replace("audio:\n", "audio:\n  lead_in_ms: 50\n")
    assert reload(audio, lambda c: c.audio.lead_in_ms == 50) == []
    # a lexicon entry or a reading style lives in every voice's front end: all are reloaded with it
    lexicon = audio + "lexicon:\n  Gdansk: Gdansk city\n"
    again = reload(lexicon, lambda c: "Gdansk" in c.lexicon)
    assert sorted(model for model, _ in again) == models
    assert all(
        options.lexicon is not None  # type: ignore[attr-defined]
        and options.lexicon.apply("to Gdansk")[-1].text.endswith("Gdansk city")  # type: ignore[attr-defined]
        for _, options in again
    )
    again = reload(lexicon + "normalize:\n  time_24h: oh\n", lambda c: c.normalize.time_24h == "oh")
    assert sorted(model for model, _ in again) == models
    assert all(options.normalize_options.time_24h == "oh" for _, options in again)  # type: ignore[attr-defined]


class FlakyDevice:
    """A real ALSA stream whose opens fail while ``down`` is set (a card that vanished)."""

    def __init__(self) -> None:
        self.down = True
        self.opens = 0

    def __call__(self, device, fmt, block):  # type: ignore[no-untyped-def]
        from edgetts.daemon.playout.sound_card import OutputStream
        from edgetts.errors import AudioDeviceError

        self.opens += 1
        if self.down:
            raise AudioDeviceError("cannot open audio device 'default': gone (test)")
        return OutputStream(device, fmt, block)


def test_failed_device_is_reported_reopened_and_the_daemon_keeps_running(daemon_rig) -> None:
    flaky = FlakyDevice()
    rig = daemon_rig(
        device="flaky", audio_extra="reopen_min_s: 0.2\nreopen_max_s: 0.4", stream_factory=flaky, online_timeout=None
    )
    probe = rig.probe
    st = probe.wait_status(lambda s: s["state"] == "online" and s["degraded"])
    assert st["degraded"][0]["what"] == "audio" and "gone" in st["degraded"][0]["reason"]
    probe.publish({"id": "lost", "text": "Nobody hears this."})
    assert "gone" in probe.wait_event("lost", "failed")["reason"]
    flaky.down = False
    probe.publish({"id": "back", "text": "Back again."})
    probe.wait_event("back", "finished")
    probe.wait_status(lambda s: s["degraded"] == [])
    assert flaky.opens >= 3
    assert rig.thread.is_alive()


def _write_wav(path: Path, audio: np.ndarray, rate: int) -> None:
    import wave

    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes((audio * 32767).astype("<i2").tobytes())


def test_clips_chimes_and_repeat_through_the_one_converter(daemon_rig, tmp_path: Path) -> None:
    clips = tmp_path / "clips"
    clips.mkdir()
    t = np.arange(4410, dtype=np.float32)
    ding = (0.3 * np.sin(2 * np.pi * 880 * t / 22050) * np.minimum(1, (4409 - t) / 300)).astype(np.float32)
    _write_wav(clips / "ding", ding, 22050)
    (clips / "ding").rename(clips / "ding.wav")
    _write_wav(clips / "low-rate.wav", ding[:2000], 16000)  # resampled to the device's 22050 Hz
    rig = daemon_rig(extra=f"clips:\n  dir: {clips}\n")
    rig.probe.publish({"id": "c1", "clip": "low-rate"})
    rig.probe.wait_event("c1", "finished")
    assert abs(rig.capture.pcm().size - round(2000 * 22050 / 16000)) <= 1
    start = rig.capture.pcm().size
    rig.probe.publish({"id": "c2", "chime": "ding", "text": "Hello there.", "repeat": 2})
    rig.probe.wait_event("c2", "finished")
    pcm = rig.capture.pcm()[start:]
    # the file's int16 -> float32 / 32767 -> the clip library's loudness gain (issue 6: clips
    # are brought to the speech's level) -> the device's int16 (what the one converter does)
    gain = rig.daemon.clips.get("ding").gain
    assert gain != 1.0  # the 0.3-amplitude tone is quieter than the fake voice's 0.5 tones
    as_float = (ding * 32767).astype(np.int16).astype(np.float32) / np.float32(32767.0)
    as_float = (as_float * np.float32(gain)).astype(np.float32)
    ding16 = np.clip(as_float * 32767.0, -32767, 32767).astype(np.int16)
    speech = rig.expected("Hello there.")
    # chime, speech, chime, speech: one stream, fades only at its very ends
    body = np.concatenate([ding16, speech, ding16, speech])
    assert_played(pcm, body, FADE)
    assert pcm.size == body.size


def test_unspeakable_text_fails_and_volume_scales(daemon_rig) -> None:
    rig = daemon_rig()
    rig.probe.publish({"id": "dots", "text": "... !!!"})
    assert "nothing to speak" in rig.probe.wait_event("dots", "failed")["reason"]
    rig.probe.publish({"id": "quiet", "text": "Quiet please.", "volume": 0.5})
    rig.probe.wait_event("quiet", "finished")
    parts = [rig.voice.sentence_audio(i, s) for i, s in enumerate(rig.voice.sentences("Quiet please."))]
    half = np.concatenate(parts) * np.float32(0.5)
    expected = np.clip(half * 32767.0, -32767, 32767).astype(np.int16)
    pcm = rig.capture.pcm()
    assert assert_played(pcm, expected, FADE) == 0 and pcm.size == expected.size
    assert rig.probe.events_of("dots") == ["queued", "failed"]


def test_next_announcement_is_synthesized_while_the_current_one_plays(daemon_rig) -> None:
    rig = daemon_rig(voice=FakeVoice(delay_s=0.05), audio_extra="realtime_pacing: true")
    first = "One sentence here. Another sentence there. And a third one to finish."
    rig.probe.publish({"id": "A", "text": first})
    rig.probe.wait_event("A", "started")
    rig.probe.publish({"id": "B", "text": "Next please."})
    rig.probe.wait_event("B", "finished")
    a_finished = rig.probe.wait_event("A", "finished")["ts"]
    b_synth = next(t for text, t in rig.voice.call_times if text == "Next please.")
    assert b_synth < a_finished  # prefetched during A, not after it
    assert rig.voice.calls.count("Next please.") == 1  # and that work was used, not redone
    pcm = rig.capture.pcm()
    a_at = assert_played(pcm, rig.expected(first), FADE)
    assert_played(pcm, rig.expected("Next please."), FADE, a_at + rig.expected(first).size)


def test_reload_keeps_the_cpu_placement_and_survives_a_bug_in_the_reload_thread(daemon_rig, monkeypatch) -> None:
    """A `cpu:` change is kept for the restart and said so (the threads were placed once); a reload
    that raises something unexpected is refused, not left 'in progress' forever (issue 13's leftovers)."""
    from edgetts.daemon import reload as reload_mod

    rig = daemon_rig()
    good = rig.config.read_text()
    started_cpu = rig.daemon.config.cpu
    rig.config.write_text(good.replace("audio:\n", "audio:\n  lead_in_ms: 40\n") + "cpu:\n  audio_core: 0\n")
    rig.daemon.on_signal(signal.SIGHUP)
    st = rig.probe.wait_status(lambda s: any(d["what"] == "config" for d in s["degraded"]))
    assert {d["what"]: d["reason"] for d in st["degraded"]}["config"] == "cpu changes take effect after a restart"
    assert rig.daemon.config.cpu == started_cpu and rig.daemon.config.audio.lead_in_ms == 40

    # memory.lock applies as the voices load: kept for the restart too, and said so
    started_memory = rig.daemon.config.memory
    assert started_memory.lock
    rig.config.write_text(good.replace("audio:\n", "audio:\n  lead_in_ms: 40\n") + "memory:\n  lock: false\n")
    rig.daemon.on_signal(signal.SIGHUP)
    st = rig.probe.wait_status(
        lambda s: any(d.get("reason") == "memory changes take effect after a restart" for d in s["degraded"])
    )
    assert rig.daemon.config.memory == started_memory

    real = reload_mod.build_assets
    monkeypatch.setattr(reload_mod, "build_assets", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("bug")))
    rig.config.write_text(good.replace("audio:\n", "audio:\n  lead_in_ms: 60\n"))
    rig.daemon.on_signal(signal.SIGHUP)
    st = rig.probe.wait_status(lambda s: any("RuntimeError: bug" in d["reason"] for d in s["degraded"]))
    assert rig.daemon.config.audio.lead_in_ms == 40  # the old config stays
    monkeypatch.setattr(reload_mod, "build_assets", real)
    rig.daemon.on_signal(signal.SIGHUP)  # the next reload is not ignored as "already reloading"
    deadline = time.monotonic() + 10
    while rig.daemon.config.audio.lead_in_ms != 60:
        assert time.monotonic() < deadline, "the reload after the failed one was not applied"
        time.sleep(0.02)
    assert "config" not in rig.daemon.degraded
    rig.say("after", "Reloaded.")


def test_a_bug_while_queueing_rejects_the_message_and_the_daemon_plays_on(daemon_rig, monkeypatch) -> None:
    rig = daemon_rig()
    real = rig.daemon.scheduler.offer

    def offer(entry, now):  # type: ignore[no-untyped-def]
        if entry.id == "bad":
            raise RuntimeError("queue bug")
        return real(entry, now)

    monkeypatch.setattr(rig.daemon.scheduler, "offer", offer)
    rig.probe.publish({"id": "bad", "text": "This one hits the bug."})
    assert rig.probe.wait_event("bad", "rejected")["reason"] == "cannot be queued: RuntimeError: queue bug"
    rig.say("good", "This one plays.")
    assert rig.probe.events_of("good") == ["queued", "started", "finished"]
