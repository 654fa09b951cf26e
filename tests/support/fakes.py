"""Fake voices injected through the daemon's constructor seams, and a spy on text preparation."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from edgetts.engine import AudioChunk, SynthesisConfig
from edgetts.errors import UnspeakableTextError
from edgetts.text.prepare import Prepared


class FakeVoice:
    """A deterministic stand-in voice: one tone burst per sentence.

    Sentence i of a text is 2400 + 40 * len(sentence) samples of a sine at
    200 + 50 * i Hz, so tests can tell sentences apart; ``delay_s`` per
    sentence stands for inference time.
    """

    def __init__(self, name: str = "fake", sample_rate: int = 22050, delay_s: float = 0.0) -> None:
        self._name, self._rate, self.delay_s = name, sample_rate, delay_s
        self.calls: list[str] = []
        self.call_times: list[tuple[str, float]] = []
        """(text, Unix seconds) when the synthesis of each text began."""
        self.received: list[str | Prepared] = []
        """What each synthesize call was handed (a str, or the daemon's Prepared text)."""
        self.configs: list[SynthesisConfig | None] = []
        """The settings of each synthesize call (a synchronized announcement's carry its seed)."""

    @property
    def name(self) -> str:
        return self._name

    @property
    def sample_rate(self) -> int:
        return self._rate

    @staticmethod
    def source(text: str | Prepared) -> str:
        """The text as written (a Prepared text's source)."""
        return text.source if isinstance(text, Prepared) else text

    @staticmethod
    def sentences(text: str) -> list[str]:
        return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if re.search(r"\w", s)]

    def sentence_audio(self, i: int, sentence: str) -> np.ndarray:
        n = 2400 + 40 * len(sentence)
        t = np.arange(n, dtype=np.float32) / self._rate
        env = np.minimum(1.0, np.minimum(np.arange(n), n - 1 - np.arange(n)) / 200.0)
        return (0.5 * np.sin(2 * np.pi * (200 + 50 * i) * t) * env).astype(np.float32)

    def synthesize(self, text: str | Prepared, config: SynthesisConfig | None = None) -> Iterator[AudioChunk]:
        """Speaks a :class:`Prepared` text from its source: a fake has no front end to skip."""
        self.received.append(text)
        self.configs.append(config)
        text = self.source(text)
        parts = self.sentences(text)
        if not parts:
            raise UnspeakableTextError(f"nothing to speak in {text[:40]!r}")
        self.calls.append(text)
        self.call_times.append((text, time.time()))
        for i, sentence in enumerate(parts):
            if self.delay_s:
                time.sleep(self.delay_s)
            yield AudioChunk(self.sentence_audio(i, sentence), self._rate, i)


class PreparationSpy:
    """Every call of the SSML parser and of edgetts.text.prepare's normaliser entry, by argument.

    Installed with ``monkeypatch`` (so it ends with the test); thread-safe, since the loop and
    the synthesis thread may both prepare text.
    """

    def __init__(self, monkeypatch: Any) -> None:
        from edgetts.text import prepare as prepare_mod
        from edgetts.text import ssml as ssml_mod

        self.parsed: list[str] = []
        self.normalised: list[str] = []
        self._lock = threading.Lock()
        monkeypatch.setattr(ssml_mod, "parse", self._spy(ssml_mod.parse, self.parsed))
        monkeypatch.setattr(prepare_mod, "normalize_text", self._spy(prepare_mod.normalize_text, self.normalised))

    def _spy(self, real: Any, into: list[str]) -> Any:
        def spy(text: str, *args: Any, **kwargs: Any) -> Any:
            with self._lock:
                into.append(text)
            return real(text, *args, **kwargs)

        return spy

    def normalised_with(self, words: str) -> int:
        """How many normaliser calls had ``words`` in their text (an SSML text node, say)."""
        with self._lock:
            return sum(words in text for text in self.normalised)
