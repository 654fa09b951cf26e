"""CosyVoice-style speech-token sampling: top-k/top-p with repetition-aware resampling (RAS).

Follows FunAudioLLM/CosyVoice ``cosyvoice/utils/common.py`` (``ras_sampling``,
``nucleus_sampling``, ``random_sampling``): take the nucleus (tokens in order of
probability while the cumulated probability is below ``top_p`` and fewer than
``top_k`` are taken), sample from it; if the pick already occurs at least
``win_size * tau_r`` times in the last ``win_size`` tokens, resample from the
full distribution instead.  Upstream re-draws while a stop token is drawn before
``min_len``; here stop tokens are masked instead (same distribution, one draw).

All randomness comes from a caller-provided ``numpy.random.Generator``, so a seed
reproduces a sequence exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SamplingParams:
    """Defaults are CosyVoice 2's."""

    top_k: int = 25
    top_p: float = 0.8
    win_size: int = 10
    """Tokens looked back at by the repetition check."""
    tau_r: float = 0.1
    """Repetition ratio that triggers resampling (win_size * tau_r occurrences)."""
    min_len_ratio: float = 2.0
    """Stop tokens are masked until this many speech tokens per text token."""
    max_len_ratio: float = 20.0
    """Generation stops after this many speech tokens per text token."""

    def length_limits(self, text_tokens: int) -> tuple[int, int]:
        """(min_len, max_len) in speech tokens for ``text_tokens`` tokens of text to speak."""
        return int(text_tokens * self.min_len_ratio), max(1, int(text_tokens * self.max_len_ratio))


def log_softmax(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    m = np.max(x)
    return x - (m + np.log(np.sum(np.exp(x - m))))


def nucleus_candidates(probs: np.ndarray, top_p: float, top_k: int) -> np.ndarray:
    """Indices of the nucleus, most probable first (stable order for equal probabilities)."""
    order = np.argsort(-probs, kind="stable")
    cum_before = np.concatenate(([0.0], np.cumsum(probs[order])[:-1]))
    # token i is taken while the probability taken *before* it is still below top_p
    n = int(np.count_nonzero(cum_before < top_p))
    return order[: max(1, min(n, top_k))]


def nucleus_sample(probs: np.ndarray, top_p: float, top_k: int, rng: np.random.Generator) -> int:
    cand = nucleus_candidates(probs, top_p, top_k)
    p = probs[cand]
    return int(cand[rng.choice(len(cand), p=p / p.sum())])


def random_sample(probs: np.ndarray, rng: np.random.Generator) -> int:
    return int(rng.choice(len(probs), p=probs / probs.sum()))


def ras_sample(
    probs: np.ndarray, history: Sequence[int], params: SamplingParams, rng: np.random.Generator
) -> tuple[int, bool]:
    """One RAS draw over ``probs``; returns (index, whether the repetition check resampled)."""
    pick = nucleus_sample(probs, params.top_p, params.top_k, rng)
    if params.win_size <= 0:  # repetition check disabled
        return pick, False
    recent = history[-params.win_size :]
    if sum(1 for t in recent if t == pick) >= params.win_size * params.tau_r:
        return random_sample(probs, rng), True
    return pick, False


class SpeechTokenSampler:
    """Picks speech tokens from LM logits restricted to the speech vocabulary and stop tokens."""

    def __init__(
        self,
        params: SamplingParams,
        *,
        speech_offset: int,
        speech_vocab_size: int,
        stop_ids: Sequence[int],
    ) -> None:
        self.params = params
        self.speech_offset = speech_offset
        self.speech_vocab_size = speech_vocab_size
        self.stop_ids = tuple(int(s) for s in stop_ids)
        # candidate LM ids: the speech tokens, then the stop tokens
        self._ids = np.concatenate(
            [
                np.arange(speech_offset, speech_offset + speech_vocab_size),
                np.asarray(self.stop_ids, dtype=np.int64),
            ]
        ).astype(np.int64)
        self._stop_mask = np.zeros(len(self._ids), dtype=bool)
        self._stop_mask[speech_vocab_size:] = True
        self.resampled = 0
        """How many picks the repetition check resampled (for tests and logs)."""

    def is_stop(self, lm_id: int) -> bool:
        return lm_id in self.stop_ids

    def probabilities(self, logits: np.ndarray, allow_stop: bool) -> np.ndarray:
        """Probabilities over the candidate ids (speech tokens then stop tokens)."""
        scores = np.asarray(logits, dtype=np.float64)[self._ids]
        if not allow_stop:
            scores = np.where(self._stop_mask, -np.inf, scores)
        return np.exp(log_softmax(scores))

    def pick(
        self,
        logits: np.ndarray,
        history: Sequence[int],
        step: int,
        min_len: int,
        rng: np.random.Generator,
    ) -> int:
        """The next LM id: a speech token (offset included) or a stop token.

        ``history`` holds the speech tokens generated so far (LM ids); ``step`` their count.
        Stop tokens are masked while ``step < min_len``.
        """
        probs = self.probabilities(logits, allow_stop=step >= min_len)
        hist_idx = [h - self.speech_offset for h in history]
        idx, resampled = ras_sample(probs, hist_idx, self.params, rng)
        self.resampled += int(resampled)
        return int(self._ids[idx])
