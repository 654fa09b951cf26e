"""Loudness (issue 6): the gated-RMS measure, and a fallback that neither blasts
nor whispers compared with speech (checked on the captured ALSA PCM)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgetts.audio.loudness import PEAK_CEILING, gain_for, loudness_dbfs, normalized

from support.alsa import Capture
from support.pcm import tone, write_clip

RATE = 22050


def sine(amp: float, seconds: float = 1.0) -> np.ndarray:
    t = np.arange(int(RATE * seconds)) / RATE
    return (amp * np.sin(2 * np.pi * 440 * t)).astype(np.float32)


def test_reference_levels() -> None:
    assert loudness_dbfs(sine(1.0), RATE) == pytest.approx(-3.01, abs=0.02)
    assert loudness_dbfs(np.ones(RATE, np.float32), RATE) == pytest.approx(0.0, abs=1e-6)
    assert loudness_dbfs(sine(0.1), RATE) == pytest.approx(-23.01, abs=0.02)
    assert loudness_dbfs(np.zeros(RATE, np.float32), RATE) is None
    assert loudness_dbfs(np.zeros(0, np.float32), RATE) is None


def test_gating_ignores_pauses() -> None:
    speechy = np.concatenate([sine(0.3, 0.5), np.zeros(RATE * 2, np.float32), sine(0.3, 0.5)])
    assert loudness_dbfs(speechy, RATE) == pytest.approx(loudness_dbfs(sine(0.3), RATE), abs=0.05)
    # a faint tail 30 dB down is gated out too (relative gate 20 dB; the one block that
    # straddles both is kept, hence the looser tolerance)
    tail = np.concatenate([sine(0.3), sine(0.3 / 31.6)])
    assert loudness_dbfs(tail, RATE) == pytest.approx(loudness_dbfs(sine(0.3), RATE), abs=0.3)
    assert loudness_dbfs(tail, RATE) > loudness_dbfs(sine(0.3), RATE) - 1.0  # ungated: -3 dB


def test_gain_reaches_the_target_without_clipping() -> None:
    quiet = sine(0.05)
    out = normalized(quiet, RATE, -20.0)
    assert loudness_dbfs(out, RATE) == pytest.approx(-20.0, abs=0.05)
    # a peaky signal is only raised until its peak reaches the ceiling
    peaky = np.zeros(RATE, np.float32)
    peaky[::2205] = 0.9
    gain = gain_for(peaky, RATE, -3.0)
    assert np.max(np.abs(peaky * gain)) <= PEAK_CEILING + 1e-6
    assert gain_for(np.zeros(100, np.float32), RATE, -20) == 1.0


def captured_level(pcm: np.ndarray) -> float:
    return loudness_dbfs(pcm.astype(np.float32) / 32767.0, RATE)


@pytest.mark.mqtt
@pytest.mark.parametrize("target", [None, -24.0])
def test_fallback_clip_as_loud_as_speech(
    daemon_rig, alsa_capture: Capture, tmp_path: Path, target: float | None
) -> None:
    clips = tmp_path / "clips"
    clips.mkdir()
    write_clip(clips / "whisper.wav", tone(500, 1.0, amp=0.05))  # about -29 dBFS as recorded
    write_clip(clips / "blast.wav", tone(500, 1.0, amp=0.95))  # about -3.5 dBFS
    device = f"loud-{target}".replace(".", "_")
    loud = "" if target is None else f"loudness:\n  target_dbfs: {target}\n"
    rig = daemon_rig(device=device, extra=f"clips:\n  dir: {clips}\n{loud}", online_timeout=None)
    probe = rig.probe
    try:
        probe.wait_status(lambda s: s["state"] == "online")
        levels = {}
        for ident, payload in (
            ("speech", {"text": "A sentence of speech. And another one here."}),
            ("whisper", {"clip": "whisper"}),
            ("blast", {"clip": "blast"}),
        ):
            start = alsa_capture.pcm().size
            probe.publish({"id": ident, **payload})
            probe.wait_event(ident, "finished")
            levels[ident] = captured_level(alsa_capture.pcm()[start:])
        reference = levels["speech"] if target is None else target
        for name in ("speech", "whisper", "blast"):
            assert levels[name] == pytest.approx(reference, abs=1.0), levels
        if target is None:  # speech untouched: the fake voice's 0.5 sines (about -9 dBFS)
            assert levels["speech"] == pytest.approx(-9.0, abs=1.0)
    finally:
        rig.close()
