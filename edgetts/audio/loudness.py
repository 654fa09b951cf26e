"""Loudness: one measure, so clips and speech play at the same level (issue 6).

The measure is a *gated RMS level* in dBFS, a simplified cousin of LUFS
(ITU-R BS.1770) without its K-weighting filter:

1. the mono float signal (full scale = 1.0) is cut into 50 ms blocks;
2. blocks quieter than -60 dBFS (silence, pauses between words) are dropped;
3. of the rest, blocks more than 20 dB below their mean are dropped too
   (the relative gate: breaths and fade tails do not pull the level down);
4. the level is ``10 * log10(mean square of the kept blocks)``.

A full-scale square wave measures 0 dBFS, a full-scale sine -3.0 dBFS, and
typical neural speech (peaks normalised to full scale) about -16 to -20 dBFS.
Speech and clips are matched on this one number; what it does not model
(frequency weighting) matters little when both sources are speech or
announcement chimes.
"""

from __future__ import annotations

import math

import numpy as np

BLOCK_S = 0.05
"""Seconds per measuring block."""

ABSOLUTE_GATE_DBFS = -60.0
RELATIVE_GATE_DB = 20.0
PEAK_CEILING = 0.98
"""Largest peak a gain may produce (about -0.2 dBFS): loudness never buys clipping."""

MAX_GAIN_DB = 24.0
"""A near-silent clip is not blown up by more than this."""


def loudness_dbfs(audio: np.ndarray, rate: int) -> float | None:
    """The gated RMS level of ``audio`` (mono float32, full scale 1.0) in dBFS; None if silent."""
    x = np.asarray(audio, dtype=np.float64).reshape(-1)
    if x.size == 0:
        return None
    n = max(1, int(rate * BLOCK_S))
    blocks = x[: x.size - x.size % n].reshape(-1, n) if x.size >= n else x.reshape(1, -1)
    ms = np.mean(blocks * blocks, axis=1)
    kept = ms[ms > 10 ** (ABSOLUTE_GATE_DBFS / 10)]
    if kept.size == 0:
        return None
    kept = kept[kept > np.mean(kept) * 10 ** (-RELATIVE_GATE_DB / 10)]
    return 10.0 * math.log10(float(np.mean(kept)))


def gain_for(audio: np.ndarray, rate: int, target_dbfs: float) -> float:
    """Linear gain bringing ``audio`` to ``target_dbfs``, limited by the peak ceiling and MAX_GAIN_DB."""
    level = loudness_dbfs(audio, rate)
    if level is None:
        return 1.0
    gain = 10 ** ((target_dbfs - level) / 20)
    gain = min(gain, 10 ** (MAX_GAIN_DB / 20))
    peak = float(np.max(np.abs(audio))) if np.size(audio) else 0.0
    if peak > 0:
        gain = min(gain, PEAK_CEILING / peak) if gain > 1.0 else gain
    return gain


def normalized(audio: np.ndarray, rate: int, target_dbfs: float) -> np.ndarray:
    """``audio`` brought to ``target_dbfs`` (float32)."""
    return (np.asarray(audio, dtype=np.float32) * np.float32(gain_for(audio, rate, target_dbfs))).astype(np.float32)


__all__ = ["loudness_dbfs", "gain_for", "normalized", "BLOCK_S", "PEAK_CEILING"]
