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


class PiecedVoice(FakeVoice):
    """A fake voice that speaks a long text in bounded pieces, as a Piper voice does past
    ``max_sentence_ids``, and starts a text at any of them (``synthesize_from``: the daemon's
    Resumable seam).  Each piece is one chunk, FakeVoice's tone burst of its index.

    Every piece's run is counted (:attr:`runs`), and :meth:`hold` makes the runs of one text
    from a piece on wait until the test lets them go: the test decides how far synthesis has
    got (no sleeps) and can wait for that (:meth:`wait_held`).
    """

    def __init__(self, name: str = "pieced", sample_rate: int = 22050, words: int = 6) -> None:
        super().__init__(name, sample_rate)
        self.words = words
        self.runs: list[tuple[str, int]] = []
        """(text, piece index) of every piece run, in the order they ran."""
        self.starts: list[tuple[str, int]] = []
        """(text, first piece) of every synthesis call."""
        self._cond = threading.Condition()
        self._hold: tuple[str, int] | None = None
        self._waiting: tuple[str, int] | None = None

    def sentences(self, text: str) -> list[str]:  # type: ignore[override]  # (per voice: its piece size)
        """Each sentence in pieces of at most ``words`` words."""
        pieces = []
        for sentence in super().sentences(text):
            words = sentence.split()
            pieces += [" ".join(words[i : i + self.words]) for i in range(0, len(words), self.words)]
        return pieces

    def hold(self, text: str | None, piece: int = 0) -> None:
        """Runs of ``text`` from piece ``piece`` on wait from now until the next hold (None: none)."""
        with self._cond:
            self._hold = None if text is None else (text, piece)
            self._cond.notify_all()

    def wait_held(self, text: str, piece: int, timeout: float = 30.0) -> None:
        """Until the run of ``text``'s piece ``piece`` waits at the hold."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._waiting == (text, piece), timeout):
                raise AssertionError(f"piece {piece} of {text[:30]!r} never came: ran {self.runs}")

    def pieces_run(self, text: str) -> list[int]:
        with self._cond:
            return [i for t, i in self.runs if t == text]

    def _gate(self, text: str, i: int) -> None:
        with self._cond:
            while self._hold is not None and self._hold[0] == text and i >= self._hold[1]:
                self._waiting = (text, i)
                self._cond.notify_all()
                self._cond.wait()
            self._waiting = None
            self.runs.append((text, i))

    def synthesize(self, text: str | Prepared, config: SynthesisConfig | None = None) -> Iterator[AudioChunk]:
        return self.synthesize_from(text, config, 0)

    def synthesize_from(self, text: str | Prepared, config: SynthesisConfig | None, first: int) -> Iterator[AudioChunk]:
        """The chunks of ``text``'s pieces from ``first`` on (those before are not run)."""
        self.received.append(text)
        self.configs.append(config)
        source = self.source(text)
        parts = self.sentences(source)
        if not parts:
            raise UnspeakableTextError(f"nothing to speak in {source[:40]!r}")
        self.calls.append(source)
        self.call_times.append((source, time.time()))
        with self._cond:
            self.starts.append((source, first))
        for i in range(first, len(parts)):
            self._gate(source, i)
            yield AudioChunk(self.sentence_audio(i, parts[i]), self._rate, i)


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
