"""tools/sync_rig.piecewise_score: the very samples despite the sink's small slips, nothing else."""

from __future__ import annotations

import numpy as np

from tools.onsets import match
from tools.sync_rig import RATE, piecewise_score


def _speechlike(seed: int, seconds: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = int(seconds * RATE)
    envelope = 0.5 + 0.5 * np.sin(np.arange(n) * 2 * np.pi * 3.0 / RATE) ** 2  # syllable-ish loudness
    return (rng.normal(0, 3000, n) * envelope).astype(np.float64)


def test_a_slip_of_twenty_samples_mid_clip_still_scores_the_very_samples() -> None:
    ref = _speechlike(1, 1.5)
    onset, half = 5000, ref.size // 2
    channel = np.zeros(ref.size + 20000)
    channel[onset : onset + half] = ref[:half]
    channel[onset + half + 20 : onset + ref.size + 20] = ref[half:]  # the sink inserted 20 samples
    _index, whole = match(channel, ref, onset, RATE, 0.05)
    assert whole < 0.8  # one correlation over the whole clip calls it another sound
    assert piecewise_score(channel, ref, onset) > 0.99


def test_other_samples_score_low() -> None:
    ref = _speechlike(1, 1.5)
    channel = np.zeros(ref.size + 20000)
    channel[5000 : 5000 + ref.size] = _speechlike(2, 1.5)
    assert piecewise_score(channel, ref, 5000) < 0.2
    assert piecewise_score(np.zeros(100), ref, 0) == 0.0  # nothing recorded there
