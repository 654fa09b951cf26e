"""The synthesized speech is speech: pocketsphinx hears the key words, the normaliser helps it, and
streamed decoding is heard as well as whole sentences.

Each pocketsphinx transcription costs ~0.8 s here (a fresh decoder per file, ~0.25 s of it loading
the model: a decoder used again carries its noise and cepstral-mean estimates over and changed one
line's words of 20), a synthesis ~0.25 s. So the default tier hears the normaliser on exactly the
corpus lines it changes (the others are spoken identically with it and without: they cannot move
the verdict) and streaming on the hardest lines (HARD_LINES). The whole corpus, every mode, over
ten noise seeds runs in ``python -m tools.bench_wer`` (tools/bench_wer.py), with the same corpus
and scoring code (``corpus``, ``line_wers``).
"""

from __future__ import annotations

import numpy as np
import pytest

from edgetts.engine import SynthesisConfig

from tools.asr import transcribe, word_error_rate
from tools.bench_wer import corpus, line_wers

CASES = [
    ("Mind the gap between the train and the platform.", {"mind", "gap", "train", "platform"}),
    ("Please stand clear of the closing doors.", {"clear", "closing", "doors"}),
    ("The washing machine has finished.", {"washing", "machine"}),
    (
        "Welcome aboard. Please keep your belongings with you at all times.",
        {"welcome", "aboard", "belongings", "times"},
    ),
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


HARD_LINES = (2, 3, 11, 19)
"""The streaming check's lines (1-based, tests/data/spoken_corpus.tsv): four of the long ones with
times, codes and numbers, 5 to 13 windows each, a few per mode as the default tier can afford
(the whole corpus, mode by mode: tools/bench_wer.py). Whole-sentence WER, noise off: 0.53, 0.26,
0.12, 0.57 (the corpus's mean: 0.32)."""

MARGIN_WORDS = 5
"""How many more words than whole sentences a streamed mode may get wrong over HARD_LINES. An
inaudible change of the audio flips up to 3 words of a line for pocketsphinx (measured: line 11,
streamed vs whole, seams at over 30 dB SDR; tools/bench_wer.py: "a figure moves by a point or two
with anything that changes the audio at all"); 5 leaves room for one such line and two single
flips. A broken seam garbles every line with windows. Over the whole corpus the bench compares
the modes pair by pair."""


def _ids(voice, text: str) -> list[object]:  # type: ignore[no-untyped-def]
    """What the voice is given for ``text``: each sentence's phoneme ids, and the pauses."""
    plan = voice.frontend.plan(text)
    return [[int(i) for i in voice.frontend.phoneme_ids(p.phonemes)] if hasattr(p, "phonemes") else p for p in plan]


def test_normalisation_lowers_the_word_error_rate(default_voice, raw_voice) -> None:  # type: ignore[no-untyped-def]
    # Issue 7: the corpus spoken with the normaliser is understood better than without it, scored
    # against hand-written spoken forms (tests/data/spoken_corpus.tsv). A line the normaliser leaves
    # as it is gets the same ids from both voices (same model, noise off): the same audio, the same
    # score on both sides, so the corpus's verdict is that of the lines it changes.
    lines = corpus()
    assert len(lines) == 20
    changed = [n for n, (text, _) in enumerate(lines, 1) if _ids(default_voice, text) != _ids(raw_voice, text)]
    assert changed, "the normaliser changes no line of the corpus"
    heard = corpus(changed)
    with_norm = line_wers(lambda text: _speak(default_voice, text), default_voice.sample_rate, heard)
    without = line_wers(lambda text: _speak(raw_voice, text), raw_voice.sample_rate, heard)
    print(f"pocketsphinx WER of the {len(changed)} lines the normaliser changes {changed}: ", end="")
    print(f"{sum(with_norm) / len(heard):.3f} normalised, {sum(without) / len(heard):.3f} raw")
    assert sum(with_norm) < sum(without)


def test_streamed_speech_is_heard_as_well_as_whole_sentences() -> None:
    # Issue 4: windowed decoding loses no intelligibility: pocketsphinx's word errors on the hardest
    # lines, streamed (exact, and with the opt-in fast start) vs whole-sentence, within MARGIN_WORDS.
    from edgetts.voice.catalog import default_voice_path
    from edgetts.voice.model_cache import default_cache_dir
    from edgetts.voice.onnx_session import RuntimeOptions
    from edgetts.voice.piper.voice import PiperVoice
    from edgetts.voice.piper.windows import StreamingOptions

    voices = {
        mode: PiperVoice.load(
            default_voice_path(), runtime=RuntimeOptions(threads=2), cache_dir=default_cache_dir(), streaming=options
        )
        for mode, options in (("streamed", True), ("fast start", StreamingOptions(fast_start_ids=64)))
    }
    config = SynthesisConfig(noise_scale=0.0, noise_w=0.0)
    lines = corpus(HARD_LINES)
    wrong: dict[str, int] = {}
    for mode in ("streamed", "fast start", "whole"):
        voice = voices.get(mode, voices["streamed"])

        def speak(text: str) -> np.ndarray:
            chunks = list(voice.synthesize(text, config, stream=mode != "whole"))  # noqa: B023
            if mode != "whole":  # noqa: B023
                assert len(chunks) > len({c.sentence_index for c in chunks})  # really windowed
            return np.concatenate([c.audio for c in chunks])

        scores = line_wers(speak, voice.sample_rate, lines)
        wrong[mode] = round(sum(wer * len(reference) for wer, (_, reference) in zip(scores, lines)))
    words = sum(len(reference) for _, reference in lines)
    print(f"pocketsphinx: words wrong of {words} on lines {HARD_LINES}: {wrong}")
    assert wrong["streamed"] <= wrong["whole"] + MARGIN_WORDS
    assert wrong["fast start"] <= wrong["whole"] + MARGIN_WORDS
