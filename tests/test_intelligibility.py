"""The synthesized speech is speech: pocketsphinx hears the key words."""

from __future__ import annotations

import numpy as np
import pytest
from asr import transcribe, word_error_rate

from edgetts.engine import SynthesisConfig

CASES = [
    ("Mind the gap between the train and the platform.", {"mind", "gap", "train", "platform"}),
    ("Please stand clear of the closing doors.", {"clear", "closing", "doors"}),
    ("The washing machine has finished.", {"washing", "machine"}),
    ("Welcome aboard. Please keep your belongings with you at all times.",
     {"welcome", "aboard", "belongings", "times"}),
]


def _speak(voice, text: str) -> np.ndarray:  # type: ignore[no-untyped-def]
    chunks = list(voice.synthesize(text, SynthesisConfig(noise_scale=0.0, noise_w=0.0)))
    return np.concatenate([c.audio for c in chunks])


@pytest.mark.parametrize(("text", "keywords"), CASES)
def test_key_words_are_heard(default_voice, text: str, keywords: set[str]) -> None:  # type: ignore[no-untyped-def]
    heard = set(transcribe(_speak(default_voice, text), default_voice.sample_rate))
    assert keywords <= heard, f"heard {sorted(heard)}"


def test_reversed_speech_is_not_heard(default_voice) -> None:  # type: ignore[no-untyped-def]
    # The control that shows the check can fail: the same sounds, played backwards.
    text, keywords = CASES[0]
    heard = transcribe(_speak(default_voice, text)[::-1].copy(), default_voice.sample_rate)
    assert len(keywords & set(heard)) <= 1, heard


def test_word_error_rate() -> None:
    assert word_error_rate("a b c d".split(), "a b c d".split()) == 0.0
    assert word_error_rate("a b c d".split(), "a x c".split()) == 0.5
