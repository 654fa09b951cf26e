"""The synthesized speech is speech: pocketsphinx hears the key words."""

from __future__ import annotations

import numpy as np
import pytest

from edgetts.engine import SynthesisConfig

from tools.asr import transcribe, word_error_rate

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


def _spoken_corpus() -> list[tuple[str, list[str]]]:
    from support.paths import DATA

    rows = (DATA / "spoken_corpus.tsv").read_text(encoding="utf-8").splitlines()
    return [(text, spoken.split()) for text, spoken in (row.split("\t") for row in rows if row.strip())]


def test_normalisation_lowers_the_word_error_rate(default_voice, raw_voice) -> None:  # type: ignore[no-untyped-def]
    # Issue 7: the corpus spoken with the normaliser is understood better than without it,
    # scored against hand-written spoken forms (tests/data/spoken_corpus.tsv).
    with_norm: list[float] = []
    without: list[float] = []
    for text, reference in _spoken_corpus():
        for voice, scores in ((default_voice, with_norm), (raw_voice, without)):
            heard = transcribe(_speak(voice, text), voice.sample_rate)
            scores.append(word_error_rate(reference, heard))
    mean_with, mean_without = sum(with_norm) / len(with_norm), sum(without) / len(without)
    print(f"pocketsphinx WER over the corpus: {mean_with:.3f} normalised, {mean_without:.3f} raw")
    assert len(with_norm) == 20
    assert mean_with < mean_without


def test_streamed_speech_is_heard_as_well_as_whole_sentences() -> None:
    # Issue 4: windowed decoding loses no intelligibility: pocketsphinx WER over the spoken
    # corpus, streamed (exact, and with the opt-in fast start) vs whole-sentence, within 2 points.
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
    scores: dict[str, list[float]] = {"streamed": [], "fast start": [], "whole": []}
    for text, reference in _spoken_corpus():
        for mode in scores:
            voice = voices.get(mode, voices["streamed"])
            chunks = list(voice.synthesize(text, config, stream=mode != "whole"))
            if mode != "whole":
                assert len(chunks) > len({c.sentence_index for c in chunks})  # really windowed
            audio = np.concatenate([c.audio for c in chunks])
            scores[mode].append(word_error_rate(reference, transcribe(audio, voice.sample_rate)))
    means = {mode: sum(values) / len(values) for mode, values in scores.items()}
    print("pocketsphinx WER over the corpus: " + ", ".join(f"{v:.3f} {k}" for k, v in means.items()))
    assert len(scores["whole"]) == 20
    assert means["streamed"] <= means["whole"] + 0.02
    assert means["fast start"] <= means["whole"] + 0.02
