"""The paced sink itself: it plays at its clock, records what reached it, and find_gaps finds holes."""

from __future__ import annotations

import os
import subprocess
import time
import wave
from pathlib import Path

import numpy as np
import pytest

from tools.paced_sink import PacedSink, find_gaps, onset_s


def _tone(seconds: float, rate: int = 22050) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.3 * 32767 * np.sin(2 * np.pi * 440 * t)).astype(np.int16)


def test_find_gaps_reports_holes_inside_the_sound_only() -> None:
    rate = 1000
    pcm = np.concatenate(
        [np.zeros(300), _tone(0.2, rate), np.zeros(50), _tone(0.1, rate), np.zeros(10), _tone(0.1, rate), np.zeros(400)]
    ).astype(np.int16)
    # The sine crosses zero now and then: no run of a sample or two is a gap at 20 ms.
    gaps = find_gaps(pcm, rate)
    assert len(gaps) == 1
    start, length = gaps[0]
    assert abs(start - 0.5) <= 0.002 and abs(length - 0.05) <= 0.002
    assert find_gaps(pcm, rate, min_gap_ms=5.0)[1][1] >= 0.009
    assert find_gaps(np.zeros(100, np.int16), rate) == []
    assert onset_s(pcm, rate) is not None and abs(onset_s(pcm, rate) - 0.301) <= 0.002  # type: ignore[operator]


@pytest.mark.realtime
def test_aplay_is_paced_and_recorded(paced_sink: PacedSink, tmp_path: Path) -> None:
    rate = paced_sink.rate
    tone = _tone(1.0, rate)
    wav = tmp_path / "tone.wav"
    with wave.open(str(wav), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(tone.tobytes())
    with paced_sink.record() as rec:
        t0 = time.monotonic()
        subprocess.run(["aplay", "-q", str(wav)], env={**os.environ, **paced_sink.env}, check=True, timeout=30)
        wall = time.monotonic() - t0
        time.sleep(0.2)
        pcm = rec.stop()
    # A paced sink takes at least the audio's length (the file plugin would return at once).
    assert wall >= 0.9
    loud = np.flatnonzero(np.abs(pcm.astype(np.int32)) > 1)
    assert loud.size > 0
    heard = pcm[loud[0] : loud[-1] + 1]
    assert abs(len(heard) - len(tone)) <= rate * 0.01
    assert find_gaps(pcm, rate) == []
    # What reached the sink is the tone (PulseAudio may shift it by a fraction of a sample:
    # compare by correlation, not sample for sample).
    # (the 440 Hz tone repeats every ~50 samples: +-60 covers every alignment)
    a = heard[rate // 10 : rate // 10 + rate // 2].astype(np.float64)
    b = tone[rate // 10 - 60 : rate // 10 + rate // 2 + 60].astype(np.float64)
    corr = np.correlate(b, a, mode="valid") / (np.linalg.norm(a) * np.linalg.norm(b[60:-60]))
    assert float(np.max(corr)) >= 0.98


@pytest.mark.realtime
def test_recordings_map_a_sample_to_unix_time_whatever_parec_buffers(paced_sink: PacedSink, tmp_path: Path) -> None:
    """Recording.unix_at comes from when samples arrive, fitted to their earliest arrivals: parec's
    own buffering (5 ms or 200 ms) must not move where a click lands in time (0.24 ms apart here)."""
    rate = paced_sink.rate
    click = (np.random.default_rng(2).uniform(-0.3, 0.3, 3000) * 32767).astype(np.int16)
    wav = tmp_path / "click.wav"
    with wave.open(str(wav), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(click.tobytes())
    recs = [paced_sink.record(latency_ms=ms) for ms in (5, 200)]
    time.sleep(1.5)  # (the fit leaves a recording's first second out)
    for _ in range(2):
        subprocess.run(["aplay", "-q", str(wav)], env={**os.environ, **paced_sink.env}, check=True, timeout=30)
        time.sleep(0.3)
    times = []
    for rec in recs:
        pcm = rec.stop()
        loud = np.flatnonzero(np.abs(pcm.astype(np.int32)) > 1)
        starts = [int(loud[0])] + [int(loud[j + 1]) for j in np.flatnonzero(np.diff(loud) > 2000)]
        assert len(starts) == 2
        found = []
        for s0 in starts:
            seg = pcm[s0 - 200 : s0 + 200 + click.size].astype(np.float64)
            onset = s0 - 200 + int(np.argmax(np.correlate(seg, click.astype(np.float64), mode="valid")))
            found.append(rec.unix_at(onset))
        times.append(found)
    assert np.max(np.abs(np.subtract(times[0], times[1]))) <= 0.001, times
    assert abs(times[0][0] - time.time()) <= 10.0  # Unix time, not monotonic
