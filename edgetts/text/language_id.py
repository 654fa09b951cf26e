"""Which language a text is written in, for `voice.model: auto` (issue 43).

The identifier is py3langid (langid.py's model and method, faster code): chosen by
``tools/bench_langid.py`` on short announcement-like texts (``benchmarks/results/bench_langid.json``),
where it was as accurate as the best portable candidate at a small fraction of its time per text,
and its model ships inside its pure-Python wheel, so it works offline on x86_64 and aarch64
alike.  It is imported only when an identifier is built (`voice.model: auto` configured): its model
takes about a second to decompress and ~30 MB.

Languages are the identifier's codes (ISO 639-1 where there is one: ``en``, ``de``, ``zh``).  It is
restricted to the languages the config maps, so a short German line cannot come out as Luxembourgish;
a guess below ``min_confidence`` is no guess (None): the caller falls back to its default language.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

_LOGGER = logging.getLogger(__name__)

IDENTIFIER = "py3langid"
"""The package that identifies languages (a dependency of the `daemon` extra)."""

KNOWN_LANGUAGES = frozenset(
    "ace af am an ar ary arz as az ba bcl be bg bn br bs ca crh cs cy da de dz el en eo es et eu ext fa fi fo "
    "fr fuv fy ga gcf gcr gd gl gom grc gu gug guw ha hbo he hi hr ht hu hy id ig is it ja jv ka kab kik kk km "
    "kn ko ku ky la lb lg lij ln lo lt ltg lv mg mk ml mn mr ms mt my ne nl nn no nso oc om or pa pcm pl ps pt "
    "qu ro ru rw sa sdh se si sk sl sn so sq sr st sv sw ta te tg th tk tl tr tt ug uk ur uz uzs vec vi vo wa "
    "wuu xh yo yue zh zu".split()
)
"""The languages py3langid 0.4's model tells apart (its ``labels`` less ``zxx``, "no language"):
written out so a config is checked without loading the model (tests/text/test_language_id.py
compares it with the model's)."""

DEFAULT_MIN_CONFIDENCE = 0.6
"""Below this probability (over the configured languages) a guess is no guess.  A text with no
letters (`12:30`) is none at all, and a word two languages share (`OK.`) scores 0.5 in each of
two; on the held-out set (seven languages) one right guess of 175 scored below 0.6 ("Next stop:
Central Station.", 0.46) and none was wrong (tools/bench_langid.py)."""

_TAG = re.compile(r"<[^>]*>")
# A sentence ends at . ? ! before a space, or at the full-width marks of Chinese and Japanese.
_SENTENCE_END = re.compile(r"(?<=[.?!])\s+|(?<=[。！？])\s*")


@dataclass(frozen=True)
class Guess:
    """What the identifier made of a text."""

    language: str | None
    """The language, one of those configured; None when it was unsure (below ``min_confidence``)."""

    confidence: float
    """Its probability among the configured languages, 0-1."""


class LanguageIdentifier:
    """py3langid restricted to ``languages``; builds (imports and loads) the model at once."""

    def __init__(self, languages: Iterable[str], min_confidence: float = DEFAULT_MIN_CONFIDENCE) -> None:
        from py3langid.langid import MODEL_FILE
        from py3langid.langid import LanguageIdentifier as _Model  # the model: only when auto is configured

        self.languages = tuple(sorted(set(languages)))
        unknown = [lang for lang in self.languages if lang not in KNOWN_LANGUAGES]
        if unknown:
            raise ValueError(f"languages the identifier does not know: {', '.join(unknown)}")
        self.min_confidence = min_confidence
        self._model: Any = _Model.from_model_file(MODEL_FILE, norm_probs=True)
        if len(self.languages) > 1:  # (set_languages with one language leaves nothing to compare)
            self._model.set_languages(list(self.languages))

    def identify(self, text: str) -> Guess:
        """The language of ``text`` (SSML tags are not text: left out)."""
        plain = " ".join(_TAG.sub(" ", text).split())
        if len(self.languages) == 1:
            return Guess(self.languages[0], 1.0)
        if not any(c.isalpha() for c in plain):
            return Guess(None, 0.0)  # digits and signs alone: every language alike
        language, confidence = self._model.classify(plain)
        confidence = float(confidence)
        if confidence < self.min_confidence or language not in self.languages:
            return Guess(None, confidence)
        return Guess(str(language), confidence)


def split_sentences(text: str) -> list[str]:
    """``text`` cut after each sentence's end (``. ? !`` before a space, ``。！？`` anywhere), each piece
    with its own words and marks, spaces around it dropped; the pieces joined by spaces read as ``text``."""
    return [piece.strip() for piece in _SENTENCE_END.split(text) if piece.strip()]


__all__ = [
    "DEFAULT_MIN_CONFIDENCE",
    "IDENTIFIER",
    "KNOWN_LANGUAGES",
    "Guess",
    "LanguageIdentifier",
    "split_sentences",
]
