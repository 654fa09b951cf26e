"""The Debian packages as scripts/test-deb.sh installed them: what they spoke is speech (the --deb tier).

scripts/test-deb.sh (`scripts/test.sh --deb`) builds the packages, installs them into fresh Debian 12
roots and a booted systemd, checks the lifecycle itself (each failure named), and leaves what was
spoken in $EDGETTS_DEB_RESULTS: `edgetts synth` of the installed package on each architecture, and
the announcement the service played under systemd into ALSA's file plugin. pocketsphinx must hear the
sentence's key words in each. Without that variable (every other tier) these tests skip.
"""

from __future__ import annotations

import os
import wave
from pathlib import Path

import numpy as np
import pytest

from tools.asr import transcribe

RESULTS = Path(os.environ["EDGETTS_DEB_RESULTS"]) if os.environ.get("EDGETTS_DEB_RESULTS") else None
pytestmark = pytest.mark.skipif(RESULTS is None, reason="the --deb tier: scripts/test-deb.sh sets EDGETTS_DEB_RESULTS")

SENTENCE = "Mind the gap between the train and the platform."
KEYWORDS = {"mind", "gap", "train", "platform"}
RATE = 22050  # the default voice's; the daemon opens the device at it (audio.sample_rate: null)


def results() -> Path:
    assert RESULTS is not None
    return RESULTS


def read_wav(path: Path) -> tuple[np.ndarray, int]:
    with wave.open(str(path)) as w:
        assert (w.getnchannels(), w.getsampwidth()) == (1, 2), path
        pcm = np.frombuffer(w.readframes(w.getnframes()), "<i2")
        return pcm.astype(np.float32) / 32768.0, w.getframerate()


def test_the_script_spoke_this_sentence() -> None:
    assert (results() / "sentence.txt").read_text().strip() == SENTENCE


@pytest.mark.parametrize("arch", ["amd64", "arm64"])
def test_synth_of_the_installed_package_is_heard(arch: str) -> None:
    if arch not in (results() / "arches.txt").read_text().split():
        pytest.skip(f"{arch} was not built (EDGETTS_DEB_ARCHES)")
    wav = results() / arch / "synth.wav"
    assert wav.exists(), f"{arch}: the installed package's edgetts synth wrote no WAV"
    audio, rate = read_wav(wav)
    assert rate == RATE
    assert 1.5 < audio.size / rate < 8.0, f"{audio.size / rate:.2f} s for one sentence"
    heard = set(transcribe(audio, rate))
    assert KEYWORDS <= heard, f"{arch}: heard {sorted(heard)}"
    # the control: the same sounds backwards are not heard as the words
    assert len(KEYWORDS & set(transcribe(audio[::-1].copy(), rate))) <= 1


def test_the_announcement_played_under_systemd_is_heard() -> None:
    boot = results() / "boot"
    if not (boot / "booted").exists():
        why = (boot / "why-not.txt").read_text() if (boot / "why-not.txt").exists() else "not tried"
        pytest.skip(f"no booted systemd container on this machine: {why[:500]}")
    pcm = np.fromfile(boot / "capture.raw", dtype="<i2")
    voiced = np.flatnonzero(np.abs(pcm) > 300)
    assert voiced.size, "the capture holds only silence"
    speech = pcm[voiced[0] : voiced[-1] + 1].astype(np.float32) / 32768.0
    assert 1.5 < speech.size / RATE < 8.0, f"{speech.size / RATE:.2f} s of sound for one sentence"
    heard = set(transcribe(speech, RATE))
    assert KEYWORDS <= heard, f"heard {sorted(heard)}"
