"""What a Piper voice can read of a prepared text: other languages' spans and other scripts (issue 16).

An SSML ``xml:lang`` / ``<lang>`` span asks for another espeak-ng voice.  It is
read in that voice when every phoneme espeak-ng gives for it is in this voice's
phoneme map (the model was trained on those symbols); otherwise it is read in the
voice's own language if its letters allow, or left out, and a warning says which
span and why.  Text whose letters are in a script the voice's language does not
write (edgetts.text.language) is refused with :class:`UnspeakableTextError`:
espeak-ng would read such letters as their names ("Chinese letter").
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Callable
from dataclasses import replace

from edgetts.errors import PhonemizerError, UnspeakableTextError
from edgetts.text.language import language_of, unspeakable_reason
from edgetts.text.prepare import Phonemes, Prepared, Segment, Speak
from edgetts.voice.piper.model_config import PiperVoiceConfig

_LOGGER = logging.getLogger(__name__)

Phonemizer = Callable[[str, str], list[list[str]]]
"""(text, espeak-ng voice) -> phonemes by sentence: edgetts.voice.piper.phonemize.phonemize."""


def voice_language(config: PiperVoiceConfig) -> str:
    """The language a voice reads: its espeak-ng voice's, else its ``language.family`` / ``code``."""
    if config.espeak_voice:
        return language_of(config.espeak_voice)
    return language_of(config.language or "en")


def _quote(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")


class LanguageCheck:
    """Resolves a voice's prepared text: the espeak-ng voice of each span, warnings, refusals."""

    def __init__(
        self,
        config: PiperVoiceConfig,
        phonemize: Phonemizer,
        clusters: Callable[[list[str]], list[str]],
        name: str = "",
    ) -> None:
        self.config = config
        self.language = voice_language(config)
        self.name = name or config.espeak_voice or self.language
        self._phonemize = phonemize
        self._clusters = clusters

    def missing(self, text: str, espeak_voice: str) -> list[str]:
        """Phonemes espeak-ng gives ``text`` in ``espeak_voice`` that the voice's map lacks."""
        missing: list[str] = []
        for sentence in self._phonemize(text, espeak_voice):
            for phoneme in self._clusters(list(unicodedata.normalize("NFD", "".join(sentence)))):
                if phoneme not in self.config.phoneme_id_map and phoneme not in missing:
                    missing.append(phoneme)
        return missing

    def _known_voice(self, espeak_voice: str) -> str | None:
        """``espeak_voice`` or its language without the region (``de-de`` -> ``de``), if espeak-ng has it."""
        for candidate in dict.fromkeys((espeak_voice, language_of(espeak_voice))):
            try:
                self._phonemize("a", candidate)
            except PhonemizerError:
                continue
            return candidate
        return None

    def _span(self, seg: Speak, warnings: list[str]) -> Speak | None:
        """``seg`` (which asks for ``seg.lang``) as this voice reads it, or None when left out."""
        asked = seg.lang or ""
        why = ""
        if self.config.phoneme_type != "espeak":
            why = "the voice reads letters, not espeak-ng phonemes"
        else:
            voice = self._known_voice(asked)
            if voice is None:
                why = "espeak-ng has no such voice"
            else:
                missing = self.missing(seg.text, voice)
                if not missing:
                    return replace(seg, lang=voice)
                why = f"the voice's phonemes do not cover it (missing {' '.join(missing[:8])})"
        if unspeakable_reason(seg.text, self.language, self.name) is None:
            warnings.append(f"xml:lang={asked} span {_quote(seg.text)} read in {self.name}: {why}")
            return replace(seg, lang=None)
        warnings.append(f"xml:lang={asked} span {_quote(seg.text)} left out: {why}")
        return None

    def resolve(self, prepared: Prepared) -> Prepared:
        """``prepared`` with each span's espeak-ng voice settled and its warnings; raises
        UnspeakableTextError for text in a script the voice cannot speak."""
        warnings = list(prepared.warnings)
        out: list[Segment] = []
        for seg in prepared.segments:
            if isinstance(seg, Speak) and seg.lang is not None:
                kept = self._span(seg, warnings)
                if kept is None:
                    continue
                seg = kept
            if isinstance(seg, Speak) and seg.lang is None:
                reason = unspeakable_reason(seg.text, self.language, self.name)
                if reason is not None:
                    raise UnspeakableTextError(reason)
            prev = out[-1] if out else None
            if (
                isinstance(seg, Speak)
                and isinstance(prev, Speak)
                and (prev.rate, prev.volume, prev.lang) == (seg.rate, seg.volume, seg.lang)
            ):
                out[-1] = replace(prev, text=f"{prev.text} {seg.text}")  # one reading: one intonation
                continue
            out.append(seg)
        for warning in warnings[len(prepared.warnings) :]:
            _LOGGER.warning("%s", warning)
        if prepared.segments and not any(isinstance(seg, (Speak, Phonemes)) for seg in out):
            raise UnspeakableTextError(f"nothing left to speak: {'; '.join(warnings)}")
        return replace(prepared, segments=tuple(out), warnings=tuple(warnings))
