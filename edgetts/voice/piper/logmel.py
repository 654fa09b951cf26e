"""How far two renderings of the same ids sound apart: a log-mel distance in dB.

What judges a quantized or accelerated variant against the fp32 voice (edgetts quantize's
sensitivity pass, export-rknn, tools/bench_quant.py): both rendered from the same ids with the
same seeded noise, so their frames line up and the distance is what the variant changed.
"""

from __future__ import annotations

import numpy as np


def log_mel(audio: np.ndarray, rate: int, n_fft: int = 1024, hop: int = 256, bands: int = 80) -> np.ndarray:
    """Log-mel power in dB, shaped (frames, bands): Hann window, HTK mel scale up to rate / 2."""
    top = 2595.0 * np.log10(1.0 + rate / 2.0 / 700.0)
    edges = 700.0 * (10 ** (np.linspace(0.0, top, bands + 2) / 2595.0) - 1.0)
    freqs = np.linspace(0.0, rate / 2.0, n_fft // 2 + 1)
    low, mid, high = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    filters = np.clip(np.minimum((freqs - low) / (mid - low), (high - freqs) / (high - mid)), 0.0, None)
    signal = np.pad(np.asarray(audio, dtype=np.float64).reshape(-1), (n_fft // 2, n_fft // 2))
    frames = 1 + max(0, signal.size - n_fft) // hop
    index = np.arange(n_fft)[None, :] + hop * np.arange(frames)[:, None]
    power = np.abs(np.fft.rfft(signal[index] * np.hanning(n_fft), axis=1)) ** 2
    return np.asarray(10.0 * np.log10(power @ filters.T + 1e-10))


def logmel_distance_db(reference: np.ndarray, other: np.ndarray, rate: int, floor_db: float = 80.0) -> float:
    """Mean over frames of the RMS over mel bands of the dB difference, both floored ``floor_db``
    below the reference's loudest bin (so silence counts, as a hiss there is heard; -inf does not).
    Frame-aligned: meant for two renderings of the same ids with the same durations."""
    a, b = log_mel(reference, rate), log_mel(other, rate)
    n = min(len(a), len(b))
    floor = float(a.max()) - floor_db
    diff = np.maximum(a[:n], floor) - np.maximum(b[:n], floor)
    return float(np.mean(np.sqrt(np.mean(diff**2, axis=1))))


__all__ = ["log_mel", "logmel_distance_db"]
