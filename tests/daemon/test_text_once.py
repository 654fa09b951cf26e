"""An announcement's text is prepared once: SSML parsed and text normalised at admission, and the
phrase-cache key, the synthesis and the prefetch all use that one preparation (issue 12)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from edgetts.config import Config
from edgetts.daemon.admission.messages import Announcement
from edgetts.daemon.admission.scheduler import Entry
from edgetts.daemon.assets import Assets
from edgetts.daemon.playout.source_choice import prepared_text
from edgetts.text.normalize import NormalizeOptions
from edgetts.text.prepare import Prepared, prepare_text

from support.fakes import FakeVoice, PreparationSpy

PLAIN = "Platform 4 for the 9:42 service to Reading."
SSML = '<speak>Mind the gap at platform <say-as interpret-as="cardinal">4</say-as>, please.</speak>'


@pytest.mark.mqtt
def test_real_voice_prepares_each_announcement_once(
    daemon_rig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = PreparationSpy(monkeypatch)
    rig = daemon_rig(
        real_voices=True,
        online_timeout=60,
        audio_extra="realtime_pacing: true",
        extra=f"cache:\n  dir: {tmp_path / 'phrases'}\n  max_mb: 20\n",
    )
    # a miss each; the SSML one is queued while the plain one plays, so it is prefetched
    rig.probe.publish({"id": "p1", "text": PLAIN})
    rig.probe.publish({"id": "s1", "text": SSML})
    for ident in ("p1", "s1"):
        assert "cached" not in rig.probe.wait_event(ident, "started", 60)
        rig.probe.wait_event(ident, "finished", 60)
    assert calls.parsed.count(SSML) == 1
    assert calls.normalised.count(PLAIN) == 1 and calls.normalised_with("Mind the gap") == 1
    assert rig.said.count(PLAIN) == 1 and rig.said.count(SSML) == 1  # each synthesized once
    # hits: prepared at admission for the key, and nothing else touches the text
    for ident, text in (("p2", PLAIN), ("s2", SSML)):
        assert rig.say(ident, text, 60)["cached"] is True
    assert calls.parsed.count(SSML) == 2
    assert calls.normalised.count(PLAIN) == 2 and calls.normalised_with("Mind the gap") == 2
    assert rig.said.count(PLAIN) == 1 and rig.said.count(SSML) == 1


@pytest.mark.mqtt
def test_the_voice_gets_the_preparation_of_admission(daemon_rig) -> None:
    voice = FakeVoice(delay_s=0.05)
    rig = daemon_rig(voice, audio_extra="realtime_pacing: true")
    rig.probe.publish({"id": "a", "text": "One sentence here. Another one there. And a third."})
    rig.probe.publish({"id": "b", "text": SSML})  # prefetched while "a" plays
    rig.probe.wait_event("b", "finished")
    first = "One sentence here. Another one there. And a third."
    options = rig.daemon.config.text_options()
    ours = [item for item in voice.received if FakeVoice.source(item) in (first, SSML)]
    assert [FakeVoice.source(item) for item in ours] == [first, SSML]  # once each (b's prefetch used)
    for item in ours:
        assert isinstance(item, Prepared) and item == prepare_text(item.source, options)
    # a rejection of bad SSML still says why, as before
    rig.probe.publish({"id": "bad", "text": "<speak>Gate <break time='1s'> open</speak>"})
    assert rig.probe.wait_event("bad", "rejected")["reason"].startswith("bad SSML: SSML is not well-formed")


def test_a_reload_that_changes_the_text_options_prepares_again() -> None:
    old = Config()
    new = replace(old, normalize=NormalizeOptions(time_24h="12h"))
    entry = Entry(
        Announcement(id="t", text="Boarding at 14:05."),
        0.0,
        None,
        prepared=prepare_text("Boarding at 14:05.", old.text_options()),
    )
    same = Assets(old, old.text_options())
    assert prepared_text(entry, same) is entry.prepared  # options unchanged: the one preparation
    again = prepared_text(entry, Assets(new, new.text_options()))
    assert again is not None and again.options == new.text_options()
    assert again.key == "Boarding at two oh five p m." and entry.prepared is again
