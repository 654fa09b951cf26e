"""sherpa-onnx 2.0.1 as an engine of tools/bench_engine.py: the child side, on the converted default voice.

sherpa-onnx 2.0 takes phonemes, not text, for Piper voices: ``GenerationConfig.phoneme_codepoints``,
one list of Unicode code points per sentence, from an external espeak-ng phonemizer.  Ours is
piper-tts's own espeak-ng bridge (its ``espeakbridge`` extension and espeak-ng-data), loaded by
itself so the sherpa process does not also load piper-tts's onnxruntime, with piper-tts's
clause rules, so sherpa runs the model on the phoneme ids piper-tts (and edgetts with its
normaliser off) would: sherpa adds BOS, a pad after every symbol and EOS as Piper does
(tests/tools/test_sherpa_voice.py checks the audio against edgetts's).  Phonemizing is timed
with the synthesis, as it is for the other engines.

With ``max_num_sentences`` 1 sherpa runs one sentence at a time and calls back with each
sentence's audio as it is made, so first audio is the first sentence's callback.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import re
import time
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import numpy as np

from tools.sherpa_voice import SherpaVoice

_LANG_SWITCH = re.compile(r"\([^)]+\)")  # espeak-ng's "(fr)" flags around foreign words

Speak = Callable[[str], Iterator[tuple[int, int, float]]]
"""text -> (samples, sample rate in Hertz, time.perf_counter() when sherpa delivered them) per sentence."""


def _espeak_bridge() -> tuple[ModuleType, Path]:
    """piper-tts's espeak-ng extension and its data directory, without importing the piper package."""
    spec = importlib.util.find_spec("piper")
    if spec is None or spec.origin is None:
        raise RuntimeError("piper-tts is not installed (requirements-test.txt)")
    package = Path(spec.origin).parent
    library = next(package.glob("espeakbridge*.so"))
    loader = importlib.machinery.ExtensionFileLoader("espeakbridge", str(library))
    module = importlib.util.module_from_spec(
        importlib.util.spec_from_file_location("espeakbridge", library, loader=loader)
    )
    loader.exec_module(module)
    return module, package / "espeak-ng-data"


class Phonemizer:
    """Text -> phonemes per sentence, as piper-tts 1.8.0 makes them for an espeak voice without vowel clusters."""

    def __init__(self, voice: str) -> None:
        self._bridge, data = _espeak_bridge()
        self._bridge.initialize(str(data))
        self._bridge.set_voice(voice)

    def sentences(self, text: str) -> list[list[int]]:
        """Each sentence's phonemes as code points (NFD), with the clause punctuation the voice was trained on."""
        out: list[list[int]] = []
        current: list[int] = []
        for phonemes, terminator, ends_sentence in self._bridge.get_phonemes(text):
            clause = _LANG_SWITCH.sub("", phonemes) + terminator
            if terminator in (",", ":", ";"):
                clause += " "  # inside a sentence: a word boundary follows
            current.extend(ord(c) for c in unicodedata.normalize("NFD", clause))
            if ends_sentence:
                out.append(current)
                current = []
        if current:
            out.append(current)
        return [sentence for sentence in out if sentence]


class SherpaEngine:
    """A sherpa-onnx OfflineTts on a converted voice, with ``threads`` inference threads.

    ``zero_noise``: noise_scale and noise_scale_w 0 (sherpa accepts 0: the audio is then the same
    as piper-tts's at zero noise); otherwise the voice's own inference settings.  sherpa's noise is
    drawn by its own onnxruntime, which onnxruntime.set_seed does not reach: unseeded.
    """

    def __init__(self, voice: SherpaVoice, threads: int, zero_noise: bool) -> None:
        import sherpa_onnx

        self._sherpa = sherpa_onnx
        inference = voice.config.get("inference", {})
        vits = sherpa_onnx.OfflineTtsVitsModelConfig(
            model=str(voice.model),
            tokens=str(voice.tokens),
            noise_scale=0.0 if zero_noise else float(inference.get("noise_scale", 0.667)),
            noise_scale_w=0.0 if zero_noise else float(inference.get("noise_w", 0.8)),
            length_scale=float(inference.get("length_scale", 1.0)),
        )
        config = sherpa_onnx.OfflineTtsConfig(
            model=sherpa_onnx.OfflineTtsModelConfig(vits=vits, num_threads=threads, provider="cpu"),
            max_num_sentences=1,  # one sentence a run, each handed to the callback when made
        )
        self._tts = sherpa_onnx.OfflineTts(config)
        self._phonemizer = Phonemizer(voice.espeak_voice)
        self.sample_rate: int = self._tts.sample_rate
        """Hertz."""

    def chunks(self, text: str) -> list[tuple[np.ndarray, float]]:
        """Each sentence's audio (float32, copied out of sherpa's buffer, which the callback's return
        frees, as any player must) and time.perf_counter() when sherpa delivered it."""
        out: list[tuple[np.ndarray, float]] = []

        def arrived(samples: np.ndarray, progress: float) -> int:
            out.append((np.array(samples, dtype=np.float32), time.perf_counter()))
            return 1  # go on

        generation = self._sherpa.GenerationConfig()
        generation.sid = 0
        generation.phoneme_codepoints = self._phonemizer.sentences(text)
        self._tts.generate("", generation, arrived)
        return out


def load_sherpa(voice: SherpaVoice, threads: int, zero_noise: bool) -> Speak:
    """bench_engine's ``speak`` for sherpa-onnx (see :class:`SherpaEngine`)."""
    engine = SherpaEngine(voice, threads, zero_noise)

    def speak(text: str) -> Iterator[tuple[int, int, float]]:
        for audio, at in engine.chunks(text):
            yield audio.shape[0], engine.sample_rate, at

    return speak
