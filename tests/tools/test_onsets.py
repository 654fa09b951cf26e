"""find_onset: the reference's start to the sample, also for a late joiner whose start is missing."""

from __future__ import annotations

import numpy as np

from tools.onsets import find_onset


def test_find_onset_to_the_sample_whole_or_joined_late() -> None:
    rng = np.random.default_rng(0)
    ref = rng.uniform(-1, 1, 5000)
    whole = np.zeros(50000)
    whole[12345 : 12345 + ref.size] = 0.5 * ref
    late = np.zeros(50000)
    late[12345 + 3000 : 12345 + ref.size] = ref[3000:]  # its first 3000 samples skipped
    noisy = whole + rng.normal(0, 0.2, whole.size)
    for channel in (whole, late, noisy):
        assert find_onset(channel, ref, 12000, 22050) == 12345
        assert find_onset(channel, ref, 14500, 22050) == 12345
    assert find_onset(whole, ref, 20000, 22050, search_s=0.1) != 12345  # (outside the search)
