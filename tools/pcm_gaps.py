"""Silences and onsets in recorded PCM (the paced sink's recordings, tools/paced_sink.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


def find_gaps(pcm: np.ndarray, rate: int, min_gap_ms: float = 20.0, threshold: int = 1) -> list[tuple[float, float]]:
    """(start_s, length_s) of runs of ``|x| <= threshold`` lasting ``min_gap_ms`` or more.

    Only inside the non-silent span (first to last sample above ``threshold``): the silence a
    recording has before the first sound and after the last is no gap.
    """
    import numpy as np

    loud = np.flatnonzero(np.abs(pcm.astype(np.int32)) > threshold)
    if loud.size < 2:
        return []
    # Gaps are the jumps between consecutive loud samples.
    steps = np.diff(loud)
    min_len = min_gap_ms / 1000.0 * rate
    gaps: list[tuple[float, float]] = []
    for i in np.flatnonzero(steps - 1 >= min_len):
        start = int(loud[i]) + 1
        gaps.append((start / rate, (int(steps[i]) - 1) / rate))
    return gaps


def onset_s(pcm: np.ndarray, rate: int, threshold: int = 1) -> float | None:
    """Seconds into ``pcm`` of its first sample above ``threshold``; None when all is silent."""
    import numpy as np

    loud = np.flatnonzero(np.abs(pcm.astype(np.int32)) > threshold)
    return float(loud[0]) / rate if loud.size else None


__all__ = ["find_gaps", "onset_s"]
