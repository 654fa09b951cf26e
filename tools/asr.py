"""Speech recognition, pocketsphinx's bundled US English model: the intelligibility test's and bench_wer's."""

from __future__ import annotations

import numpy as np

ASR_RATE = 16000


def resample(audio: np.ndarray, rate_in: int, rate_out: int) -> np.ndarray:
    """Band-limited resampling of a whole signal (FFT: exact for a finite clip)."""
    if rate_in == rate_out:
        return audio.astype(np.float32)
    n_out = int(round(audio.size * rate_out / rate_in))
    spectrum = np.fft.rfft(audio.astype(np.float64))
    keep = n_out // 2 + 1
    if keep <= spectrum.size:
        spectrum = spectrum[:keep]
    else:
        spectrum = np.concatenate([spectrum, np.zeros(keep - spectrum.size, dtype=spectrum.dtype)])
    return (np.fft.irfft(spectrum, n_out) * (n_out / audio.size)).astype(np.float32)


def transcribe(audio: np.ndarray, rate: int) -> list[str]:
    """Lower-case words pocketsphinx hears in ``audio`` (float in [-1, 1])."""
    from pocketsphinx import Decoder

    pcm = resample(audio, rate, ASR_RATE)
    pcm16 = np.clip(pcm * 32767.0 * 0.8, -32768, 32767).astype("<i2").tobytes()
    decoder = Decoder(samprate=ASR_RATE, loglevel="FATAL")
    decoder.start_utt()
    decoder.process_raw(pcm16, full_utt=True)
    decoder.end_utt()
    hyp = decoder.hyp()
    return hyp.hypstr.lower().split() if hyp is not None else []


def word_error_rate(reference: list[str], hypothesis: list[str]) -> float:
    """Levenshtein distance over words, divided by the reference length."""
    prev = list(range(len(hypothesis) + 1))
    for i, ref_word in enumerate(reference, start=1):
        cur = [i] + [0] * len(hypothesis)
        for j, hyp_word in enumerate(hypothesis, start=1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ref_word != hyp_word))
        prev = cur
    return prev[-1] / max(len(reference), 1)
