"""`voice.model: auto` in the daemon: the voice of the language the text is in (issue 43).

At admission an announcement that names no voice is given one: per announcement, the voice of
the whole text's language; per sentence, its sentences are grouped into runs of one language, and
an announcement of several runs keeps them as :class:`MixedPrepared` (each run prepared by its
voice), which :class:`MixedVoice` speaks run by run, each with its voice.  The identifier
(edgetts.text.language_id) is built once per set of languages: its model takes about a second to
load, so a reload that keeps the map keeps it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from edgetts.config import Config
from edgetts.config.auto_voice import is_auto, language_voices
from edgetts.engine import AudioChunk, SynthesisConfig, Voice
from edgetts.text.language_id import LanguageIdentifier, split_sentences
from edgetts.text.prepare import Prepared
from edgetts.text.ssml import looks_like_ssml

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True)
class LanguageChoice:
    """Which configured voice speaks a text, by its language."""

    identifier: LanguageIdentifier
    voices: dict[str, str]
    """Language -> the configured voice that speaks it."""
    default: str
    """The language of a text the identifier is unsure of."""
    per_sentence: bool

    def language_of(self, text: str) -> str:
        """The language of ``text``: the identifier's guess, or the default when it is unsure."""
        return self.identifier.identify(text).language or self.default

    def voice_for(self, text: str) -> str:
        """The configured voice that speaks the whole of ``text``."""
        return self.voices[self.language_of(text)]

    def runs(self, text: str) -> list[tuple[str, str]]:
        """``text`` as (voice, its sentences) runs: with `language_per: sentence` a run per change of
        language (a sentence the identifier is unsure of stays in the language before it, so "Thank
        you." does not switch voices); else, and for SSML (whose spans say their language with
        xml:lang), one run."""
        if not self.per_sentence or looks_like_ssml(text):
            return [(self.voice_for(text), text)]
        runs: list[tuple[str, list[str]]] = []
        for sentence in split_sentences(text):
            guess = self.identifier.identify(sentence).language
            if guess is None:
                guess = runs[-1][0] if runs else self.language_of(text)
            if runs and runs[-1][0] == guess:
                runs[-1][1].append(sentence)
            else:
                runs.append((guess, [sentence]))
        if len(runs) <= 1:
            return [(self.voices[runs[0][0]] if runs else self.voice_for(text), text)]
        merged: list[tuple[str, str]] = []
        for lang, sentences in runs:  # two languages may share a voice: one run then
            voice, part = self.voices[lang], " ".join(sentences)
            if merged and merged[-1][0] == voice:
                merged[-1] = (voice, f"{merged[-1][1]} {part}")
            else:
                merged.append((voice, part))
        return merged


def build_choice(config: Config, previous: LanguageChoice | None = None) -> LanguageChoice | None:
    """The choice of ``config`` (None unless `voice.model: auto`); ``previous``'s identifier when it
    identifies the same languages alike."""
    if not is_auto(config):
        return None
    voice = config.voice
    languages = tuple(sorted(voice.languages))
    old = previous.identifier if previous is not None else None
    if old is not None and (old.languages, old.min_confidence) == (languages, voice.language_min_confidence):
        identifier = old
    else:
        identifier = LanguageIdentifier(languages, voice.language_min_confidence)
        _LOGGER.info("language identifier for %s loaded", ", ".join(languages))
    return LanguageChoice(
        identifier, language_voices(config), voice.language_default or "", voice.language_per == "sentence"
    )


@dataclass(frozen=True)
class MixedPrepared(Prepared):
    """A text of several languages: each run prepared by the voice that speaks it.  ``segments`` and
    ``options`` are the first run's (what a check of the options in force compares)."""

    parts: tuple[tuple[str, Prepared], ...] = ()
    """(configured voice, its run of the text) in playing order."""

    @property
    def key(self) -> str:
        """Never a phrase-cache key of one voice's text (Assets.cache_key keeps no mixed play)."""
        return "mixed:" + "\n".join(f"{name}:{part.key}" for name, part in self.parts)


def mixed(source: str, parts: list[tuple[str, Prepared]]) -> MixedPrepared:
    first = parts[0][1]
    warnings = tuple(w for _, part in parts for w in part.warnings)
    return MixedPrepared(source, first.segments, first.options, warnings, tuple(parts))


@dataclass(frozen=True)
class Part:
    """One run of a mixed text as a voice speaks it."""

    voice: Voice
    text: Prepared
    config: SynthesisConfig
    scale: float = 1.0
    """Its voice's loudness gain over the first voice's (the job applies the first's)."""


class MixedVoice:
    """Speaks a :class:`MixedPrepared` run by run, each run with its voice, sentence indices counted
    on across runs (so a preempted text resumes at its sentence)."""

    def __init__(self, name: str, parts: list[Part]) -> None:
        self._name, self._parts = name, parts
        self._current: Voice | None = None

    @property
    def name(self) -> str:
        return self._name

    @property
    def sample_rate(self) -> int:
        return self._parts[0].voice.sample_rate

    def interrupt(self) -> bool:
        """End the model run in hand (edgetts.daemon.playout.synthesis.Interruptible)."""
        stop: Callable[[], bool] | None = getattr(self._current, "interrupt", None)
        return stop() if stop is not None else False

    def synthesize(self, text: str | Prepared, config: SynthesisConfig | None = None) -> Iterator[AudioChunk]:
        """The runs' chunks in order (``text`` is the mixed text these parts were made of)."""
        offset = 0
        for n, part in enumerate(self._parts):
            self._current = part.voice
            settings = part.config
            if config is not None and config.seed is not None:  # a synchronized announcement's noise
                settings = dataclasses.replace(settings, seed=config.seed)
            count = 0
            for chunk in part.voice.synthesize(part.text, settings):
                count = max(count, chunk.sentence_index + 1)
                audio = chunk.audio if part.scale == 1.0 else chunk.audio * part.scale
                # A later run's lead is not the text's: playback is under way by then.
                lead = chunk.lead_s if n == 0 else 0.0
                yield dataclasses.replace(chunk, audio=audio, sentence_index=offset + chunk.sentence_index, lead_s=lead)
            offset += count
        self._current = None


__all__ = ["LanguageChoice", "MixedPrepared", "MixedVoice", "Part", "build_choice", "mixed"]
