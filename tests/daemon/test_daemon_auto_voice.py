"""`voice.model: auto` in the daemon (issue 43): each announcement spoken by its language's voice, a
text of two languages sentence by sentence, and a voice named in the payload left as named.

The real daemon, mosquitto, identifier and ALSA capture; the voices are the suite's fakes (a tone
burst per sentence, ``support.fakes.FakeVoice``), so what each voice was asked to say and what was
played can be compared exactly.  A German run is played by the 16 kHz fake (resampled to the
device's 22050 Hz); English by the 22050 Hz one, sample for sample.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from support.alsa import Capture
from support.broker import Broker
from support.daemon import DaemonRig, config_yaml
from support.fakes import FakeVoice
from support.pcm import assert_played

pytestmark = pytest.mark.mqtt

FADE = int(22050 * 5 / 1000)
AUTO = "model: auto\nlanguages: {en: default, de: german}\nlanguage_default: en\n"


def _rig(
    mosquitto: Broker, capture: Capture, tmp_path: Path, device: str, per: str
) -> tuple[DaemonRig, FakeVoice, FakeVoice]:
    english, german = FakeVoice("en"), FakeVoice("de", 16000)
    config = tmp_path / f"{device}.yaml"
    config.write_text(
        config_yaml(
            mosquitto,
            device,
            voice_extra=AUTO + f"language_per: {per}\n",
            extra="voices:\n  german:\n    model: alt\n    threads: 1\n",
        )
    )
    rig = DaemonRig(config, mosquitto, capture, {"default": english, "alt": german})
    rig.wait_online(15)
    english.calls.clear()  # (each voice's calibration at load)
    german.calls.clear()
    return rig, english, german


def _int16(audio: np.ndarray) -> np.ndarray:
    return np.clip(audio * 32767.0, -32767, 32767).astype(np.int16)


def _spoken(rig: DaemonRig, ident: str, payload: dict[str, Any]) -> dict[str, Any]:
    rig.probe.publish({"id": ident, **payload})
    finished = rig.probe.wait_event(ident, "finished", 20)
    started = rig.probe.wait_event(ident, "started")
    assert finished["underruns"] == 0
    return started


def test_each_announcement_is_spoken_by_its_languages_voice(
    mosquitto: Broker, alsa_capture: Capture, tmp_path: Path
) -> None:
    rig, english, german = _rig(mosquitto, alsa_capture, tmp_path, "auto-ann", "announcement")
    try:
        assert sorted(rig.status["voices"]) == ["default", "german"]  # type: ignore[index]
        de = "Der Zug nach Berlin fährt um 10:15 Uhr von Gleis 3 ab."
        assert _spoken(rig, "de-1", {"text": de})["voice"] == "german"
        assert german.calls == [de] and de not in english.calls
        played_to = alsa_capture.pcm().size
        assert played_to > 22050 // 4  # (the 16 kHz tone, resampled)

        en = "The train to London leaves from platform 3 at 10:15."
        assert _spoken(rig, "en-1", {"text": en})["voice"] == "default"
        assert english.calls[-1] == en and german.calls == [de]
        assert_played(alsa_capture.pcm(), _int16(english.sentence_audio(0, en)), FADE, played_to)

        # unsure (no letters): the default language's voice; a named voice is left as named
        assert _spoken(rig, "num", {"text": "10:15, 10:45."})["voice"] == "default"
        assert _spoken(rig, "named", {"text": en, "voice": "german"})["voice"] == "german"
        assert german.calls[-1] == en
    finally:
        rig.close()


def test_per_sentence_each_sentence_is_spoken_by_its_languages_voice(
    mosquitto: Broker, alsa_capture: Capture, tmp_path: Path
) -> None:
    rig, english, german = _rig(mosquitto, alsa_capture, tmp_path, "auto-sent", "sentence")
    try:
        de1, de2 = "Achtung, bitte.", "Der Zug nach Berlin fährt heute von Gleis 3 ab."
        en = "The train to Berlin leaves from platform 3 today."
        before = alsa_capture.pcm().size
        started = _spoken(rig, "mixed", {"text": f"{de1} {de2} {en}"})
        assert started["voice"] == "german"  # its first run's
        assert german.calls == [f"{de1} {de2}"] and english.calls == [en]  # one run per change of language
        played = alsa_capture.pcm()[before:]
        # the English run, exactly, after the German one (its tone bursts at 16 kHz, resampled)
        at = assert_played(played, _int16(english.sentence_audio(0, en)), FADE)
        german_s = sum(german.sentence_audio(i, s).size for i, s in enumerate((de1, de2))) / 16000
        assert at >= 0.9 * german_s * 22050 and np.abs(played[: int(german_s * 22050 * 0.9)]).max() > 1000

        # a text of one language is one run, as per announcement
        assert _spoken(rig, "one", {"text": en})["voice"] == "default" and english.calls[-1] == en
    finally:
        rig.close()
