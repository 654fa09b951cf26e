"""Text -> phonemes -> model ids for a Piper voice (no model needed).

Text is prepared (normaliser, lexicon, SSML: :mod:`edgetts.text.prepare`),
phonemized by espeak-ng (:mod:`.phonemize`) and planned as sentences with their
prosody and the pauses between them; each sentence's phonemes become the
voice's input ids (BOS, each phoneme followed by PAD, EOS).
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace

from edgetts.text.prepare import Break, Phonemes, Prepared, Segment, TextOptions, prepare
from edgetts.voice.piper.languages import LanguageCheck, voice_language
from edgetts.voice.piper.model_config import BOS, EOS, PAD, PiperVoiceConfig
from edgetts.voice.piper.phonemize import check_voice, phonemize
from edgetts.voice.piper.pieces import MAX_SENTENCE_IDS, MIN_SENTENCE_IDS, PIECE_END, ends_phrase, split_sentence

_LOGGER = logging.getLogger(__name__)

# Phonemes that carry no sound of their own: a sentence of only these is unspeakable.
_SILENT_PHONEMES = frozenset(" .,:;!?-'\"()")
PIECE_PAUSE_S = 0.05
"""Silence between the pieces of a cut sentence.  A piece ends in a comma, after which joe
gives ~0.2 s of its own and the next piece starts with ~0.07 s: with this, the gap is the
~0.31 s of a comma inside a sentence (measured at noise 0)."""


def _merge_clusters(phonemes: list[str], clusters: frozenset[tuple[str, ...]]) -> list[str]:
    """Merge known multi-codepoint phonemes, longest first."""
    if not clusters:
        return phonemes
    longest = max(len(c) for c in clusters)
    merged: list[str] = []
    i = 0
    while i < len(phonemes):
        for n in range(min(longest, len(phonemes) - i), 1, -1):
            if tuple(phonemes[i : i + n]) in clusters:
                merged.append("".join(phonemes[i : i + n]))
                i += n
                break
        else:
            merged.append(phonemes[i])
            i += 1
    return merged


def is_speakable(phonemes: Sequence[str]) -> bool:
    """True when a sentence has at least one phoneme that makes a sound."""
    return any(p not in _SILENT_PHONEMES for p in phonemes)


@dataclass(frozen=True)
class Sentence:
    """One model run: a sentence's phonemes and its prosody."""

    phonemes: tuple[str, ...]
    rate: float = 1.0
    """Speed multiplier (SSML prosody rate): divides the length scale."""
    volume: float = 1.0
    """Linear gain (SSML prosody volume)."""


@dataclass(frozen=True)
class Pause:
    """Silence between sentences (SSML break)."""

    seconds: float


class PiperFrontend:
    """Text -> phonemes -> model ids for one voice config (no model needed)."""

    def __init__(
        self, config: PiperVoiceConfig, text: TextOptions | None = None, *, max_ids: int = MAX_SENTENCE_IDS
    ) -> None:
        """``max_ids``: the most input ids of one model run; a longer sentence is spoken in
        pieces (:mod:`.pieces`)."""
        if max_ids < MIN_SENTENCE_IDS:
            raise ValueError(f"max_ids must be at least {MIN_SENTENCE_IDS}, not {max_ids}")
        if config.phoneme_type == "espeak":
            # At load, not at the first announcement: without its dictionary espeak-ng reads nothing.
            check_voice(config.espeak_voice)
        self.config = config
        # The voice's language decides the rules (issue 16): English ones for English voices only.
        self.text = replace(text or TextOptions(), language=voice_language(config))
        self.max_ids = max_ids
        pad = len(config.phoneme_id_map[PAD])
        self._costs = {phoneme: len(ids) + pad for phoneme, ids in config.phoneme_id_map.items()}
        """Ids each phoneme adds to a run (looked up per phoneme when a long sentence is cut)."""
        self.languages = LanguageCheck(config, phonemize, lambda p: _merge_clusters(p, config.vowel_clusters))

    def _espeak(self, text: str, lang: str | None = None) -> list[list[str]]:
        if self.config.phoneme_type == "text":
            return [list(unicodedata.normalize("NFD", text))] if text.strip() else []
        return phonemize(text, lang or self.config.espeak_voice)

    def prepare(self, text: str) -> Prepared:
        """``text`` prepared as this voice reads it: its language's rules, each ``xml:lang`` span's
        espeak-ng voice settled (:mod:`.languages`), ``warnings`` for spans it could not read as
        asked.  Raises SSMLError for bad SSML and UnspeakableTextError for a script it cannot speak."""
        opts = self.text
        segments = prepare(
            text,
            options=opts.normalize_options,
            lexicon=opts.lexicon,
            ssml=opts.ssml,
            normalize=opts.normalize,
            language=opts.language,
        )
        return self.languages.resolve(Prepared(text, tuple(segments), opts))

    def segments(self, text: str | Prepared) -> Sequence[Segment]:
        """The prepared segments of ``text``: a Prepared's own when it was prepared with this
        voice's options (then nothing is parsed or normalised again), else ``text`` prepared here."""
        if isinstance(text, Prepared):
            if text.options == self.text:  # its spans and scripts checked (again) for this voice
                return self.languages.resolve(text).segments
            text = text.source  # prepared otherwise: read as this voice reads it, never a wrong reading
        return self.prepare(text).segments

    def plan(self, text: str | Prepared) -> list[Sentence | Pause]:
        """Sentences (with prosody) and pauses, in speaking order.

        Phonemes given directly (lexicon ``/IPA/`` entries, SSML ``<phoneme>``)
        join the sentence around them, so they do not break its intonation.
        """
        segments = self.segments(text)
        plan: list[Sentence | Pause] = []
        current: list[str] = []
        prosody = (1.0, 1.0)

        def close() -> None:
            if current and is_speakable(current):
                merged = _merge_clusters(current, self.config.vowel_clusters)
                plan.extend(self._bounded(Sentence(tuple(merged), rate=prosody[0], volume=prosody[1])))
            current.clear()

        for segment in segments:
            if isinstance(segment, Break):
                close()  # a break always ends the sentence; Break(0) is a paragraph end
                if segment.seconds > 0:
                    plan.append(Pause(segment.seconds))
                continue
            if (segment.rate, segment.volume) != prosody:
                close()
                prosody = (segment.rate, segment.volume)
            if isinstance(segment, Phonemes):
                if current and current[-1] != " ":
                    current.append(" ")
                current.extend(unicodedata.normalize("NFD", segment.ipa.strip()))
                continue
            sentences = self._espeak(segment.text, segment.lang)
            for index, phonemes in enumerate(sentences):
                if current and current[-1] != " " and phonemes:
                    current.append(" ")
                current.extend(phonemes)
                ends = phonemes[-1:] and phonemes[-1] in ".?!"
                if index < len(sentences) - 1 or ends:
                    close()
        close()
        return plan

    def _id_cost(self, phoneme: str) -> int:
        """Input ids ``phoneme`` adds to a run (itself and its PAD; none when it is skipped)."""
        return self._costs.get(phoneme, 0)

    def _bounded(self, sentence: Sentence) -> list[Sentence | Pause]:
        """``sentence``, or its pieces of at most :attr:`max_ids` ids with a comma's pause between."""
        id_map = self.config.phoneme_id_map
        fixed = len(id_map[BOS]) + len(id_map[PAD]) + len(id_map[EOS])
        if fixed + sum(self._id_cost(p) for p in sentence.phonemes) <= self.max_ids:
            return [sentence]
        end = PIECE_END if PIECE_END in id_map else None
        budget = self.max_ids - fixed - (self._id_cost(end) if end is not None else 0)
        pieces = [p for p in split_sentence(sentence.phonemes, self._id_cost, budget) if is_speakable(p)]
        _LOGGER.info(
            "a sentence of %d phonemes is spoken in %d pieces of at most %d ids",
            len(sentence.phonemes),
            len(pieces),
            self.max_ids,
        )
        out: list[Sentence | Pause] = []
        for index, piece in enumerate(pieces):
            if index:
                out.append(Pause(PIECE_PAUSE_S))
            if end is not None and index < len(pieces) - 1 and not ends_phrase(piece):
                piece = [*piece, end]
            out.append(Sentence(tuple(piece), rate=sentence.rate, volume=sentence.volume))
        return out

    def phonemize(self, text: str) -> list[list[str]]:
        """Phonemes of each speakable sentence of ``text``."""
        return [list(item.phonemes) for item in self.plan(text) if isinstance(item, Sentence)]

    def phoneme_ids(self, phonemes: Sequence[str]) -> list[int]:
        """Model input ids: BOS, then each phoneme followed by PAD, then EOS."""
        id_map = self.config.phoneme_id_map
        ids: list[int] = [*id_map[BOS], *id_map[PAD]]
        for phoneme in phonemes:
            mapped = id_map.get(phoneme)
            if mapped is None:
                _LOGGER.warning("phoneme %r is not in the voice's id map; skipped", phoneme)
                continue
            ids.extend(mapped)
            ids.extend(id_map[PAD])
        ids.extend(id_map[EOS])
        return ids

    def sentence_ids(self, text: str) -> list[list[int]]:
        """Model input ids of each speakable sentence of ``text``."""
        return [self.phoneme_ids(p) for p in self.phonemize(text)]
