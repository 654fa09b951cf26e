"""The daemon with a voice of another language (issue 16): its rules at admission, a script it
cannot speak refused with the reason, spans it could not read said in the queued event."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.mark.mqtt
def test_a_german_voice_refuses_chinese_text_with_the_reason(daemon_rig, tmp_path: Path) -> None:
    from tools.make_test_voice import make_voice

    model = make_voice(tmp_path, "ok", language="de")
    rig = daemon_rig(real_voices=True, voice_extra=f"model: {model}", online_timeout=60)
    rig.probe.publish({"id": "zh", "text": "欢迎光临，下一站：北京南站。"})
    rejected = rig.probe.wait_event("zh", "rejected")
    assert rejected["reason"] == (
        "unspeakable text: text in Han letters ('欢迎光临下一站北京南站'), which the de "
        "voice cannot speak (it speaks Latin letters)"
    )
    # German text is spoken, with espeak-ng's German reading (not the English normaliser's)
    line = "Der Zug nach München fährt um 14:05 Uhr ab."
    rig.probe.publish({"id": "de", "text": line})
    rig.probe.wait_event("de", "finished", 60)
    assert rig.said[-1] == line
    assert [(m, t.language) for m, t in rig.loads] == [(str(model), "en")]  # the config's; the voice sets de
    # a span the voice cannot read as asked is read in its own language, and the queued event says so
    ssml = '<speak>Gleis 3, <lang xml:lang="tlh">Qapla</lang></speak>'
    rig.probe.publish({"id": "span", "text": ssml})
    queued = rig.probe.wait_event("span", "queued")
    assert queued["detail"] == "xml:lang=tlh span 'Qapla' read in de: espeak-ng has no such voice"
    rig.probe.wait_event("span", "finished", 60)
    assert "detail" not in rig.probe.wait_event("de", "queued")


@pytest.mark.mqtt
def test_a_voice_whose_language_has_no_espeak_dictionary_does_not_load(daemon_rig, tmp_path: Path) -> None:
    """Faroese: espeak-ng 724808c has its language file and no dictionary (data.cmake builds none).
    Before, such a voice loaded and spoke every word as nothing; now it is a voice that did not load."""
    from tools.make_test_voice import make_voice

    model = make_voice(tmp_path, "ok", language="fo")
    rig = daemon_rig(real_voices=True, voice_extra=f"model: {model}", online_timeout=60)
    status = rig.probe.wait_status(lambda s: any(d["what"] == "voice" for d in s["degraded"]), 30)
    reason = next(d["reason"] for d in status["degraded"] if d["what"] == "voice")
    assert "espeak-ng voice 'fo' reads language 'fo', whose dictionary fo_dict is not in the espeak-ng data" in reason
    assert str(Path("edgetts") / "data" / "espeak" / "espeak-ng-data") in reason
    assert status["voices"] == []
