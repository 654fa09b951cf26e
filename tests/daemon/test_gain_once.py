"""The daemon changes level in one place: a chime at its loudness gain and speech at the voice's,
each times the announcement's volume, one multiplication in the converter (issue 12)."""

from __future__ import annotations

import numpy as np
import pytest

from edgetts.daemon.assets import CALIBRATION_TEXT

from support.pcm import assert_played, clip_pcm, tone

FADE = int(22050 * 5 / 1000)
TARGET = -20.0


@pytest.mark.mqtt
def test_chime_and_speech_at_their_gains_times_the_volume(daemon_rig) -> None:
    from edgetts.audio.loudness import loudness_dbfs

    rig = daemon_rig(clips={"ding": tone(880, 0.4, amp=0.1)}, extra=f"loudness:\n  target_dbfs: {TARGET}\n")
    text = "Mind the gap. Stand clear of the doors."
    rig.probe.publish({"id": "g1", "chime": "ding", "text": text, "volume": 0.7})
    rig.probe.wait_event("g1", "finished")
    # the voice's gain, from its loudness on the calibration text (edgetts.daemon.assets.speech_gain)
    calibration = [rig.voice.sentence_audio(i, s) for i, s in enumerate(rig.voice.sentences(CALIBRATION_TEXT))]
    voice_gain = float(10 ** ((TARGET - loudness_dbfs(np.concatenate(calibration), 22050)) / 20))
    assert abs(voice_gain - 1.0) > 0.05  # a real gain, not 1
    speech = np.concatenate([rig.voice.sentence_audio(i, s) for i, s in enumerate(rig.voice.sentences(text))])
    speech16 = np.clip(speech * np.float32(voice_gain * 0.7) * 32767.0, -32767, 32767).astype(np.int16)
    ding = rig.daemon.clips.get("ding")
    assert ding is not None and ding.gain > 1.2  # the quiet tone is brought up to the target
    body = np.concatenate([clip_pcm(ding, 0.7), speech16])
    pcm = rig.capture.pcm()
    assert assert_played(pcm, body, FADE) == 0 and pcm.size == body.size
