"""Where known audio starts in a recording, by cross-correlation (issue 19's sync tests and bench).

A first-sample threshold says little when the audio fades in or joins late; the correlation
peak of the whole reference against the recording puts it to the sample, and a late joiner
(whose start was skipped) still peaks where its remaining samples align.  With the paced
sink's ``Recording.unix_at`` the index becomes a Unix time, to compare with ``play_at``.
"""

from __future__ import annotations

import numpy as np


def match(channel: np.ndarray, ref: np.ndarray, around: float, rate: int, search_s: float = 0.1) -> tuple[int, float]:
    """(the sample index of ``channel`` where ``ref`` starts, their normalized correlation there:
    1.0 = the very samples), searched within ``search_s`` of ``around`` (a sample index; FFT
    correlation, so seconds-long references are cheap)."""
    reach = int(round(search_s * rate))
    lo = max(0, int(round(around)) - reach)
    seg = channel[lo : lo + ref.size + 2 * reach].astype(np.float64)
    r = ref.astype(np.float64)
    if seg.size < r.size:
        raise ValueError("the recording ends before the reference could")
    n = 1 << int(np.ceil(np.log2(seg.size + r.size)))
    corr = np.fft.irfft(np.fft.rfft(seg, n) * np.conj(np.fft.rfft(r, n)), n)[: seg.size - r.size + 1]
    lag = int(np.argmax(corr))
    norm = float(np.linalg.norm(seg[lag : lag + r.size]) * np.linalg.norm(r)) or 1.0
    return lo + lag, float(corr[lag] / norm)


def find_onset(channel: np.ndarray, ref: np.ndarray, around: float, rate: int, search_s: float = 0.1) -> int:
    """The sample index of ``channel`` where ``ref`` starts (:func:`match`)."""
    return match(channel, ref, around, rate, search_s)[0]


__all__ = ["find_onset", "match"]
