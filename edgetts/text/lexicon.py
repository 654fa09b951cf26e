"""The site lexicon: how this site says its own names ("Leicester" -> "Lester").

Config (``lexicon:`` in YAML) maps a word or phrase to a replacement: a respelling
in plain text, or phonemes between slashes ("Reading": "/ɹˈɛdɪŋ/") that bypass
espeak-ng. Matching is case-insensitive on whole words, longest phrase first, and
runs before normalisation, so a respelling may itself contain numbers or codes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class LexiconPiece:
    """A run of text after lexicon lookup: words to normalise, or IPA to pass straight on."""

    text: str
    is_ipa: bool = False


def _key(phrase: str) -> str:
    return " ".join(phrase.split()).casefold()


def _ipa(replacement: str) -> str | None:
    """The IPA inside "/.../", or None for a respelling."""
    stripped = replacement.strip()
    if len(stripped) >= 2 and stripped[0] == "/" and stripped[-1] == "/":
        return stripped[1:-1].strip()
    return None


@dataclass(frozen=True)
class Lexicon:
    """Whole-word, case-insensitive replacements; build it with :meth:`from_mapping`."""

    entries: Mapping[str, str] = field(default_factory=dict)
    """casefolded, space-collapsed phrase -> replacement as configured."""

    _pattern: re.Pattern[str] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_mapping(cls, data: Mapping[str, object]) -> Lexicon:
        """Validate a ``lexicon:`` mapping; ValueError names the offending key."""
        if not isinstance(data, Mapping):
            raise ValueError(f"lexicon: expected a mapping of word -> replacement, got {type(data).__name__}")
        entries: dict[str, str] = {}
        for phrase, replacement in data.items():
            if not isinstance(phrase, str) or not phrase.strip():
                raise ValueError(f"lexicon: {phrase!r}: the word or phrase must be a non-empty string")
            if not isinstance(replacement, str) or not replacement.strip():
                raise ValueError(f"lexicon.{phrase}: the replacement must be a non-empty string")
            if _ipa(replacement) == "":
                raise ValueError(f"lexicon.{phrase}: empty phonemes between the slashes")
            key = _key(phrase)
            if key in entries:
                raise ValueError(f"lexicon.{phrase}: given twice (matching ignores case)")
            entries[key] = replacement.strip()
        return cls(entries, _compile(entries))

    def __len__(self) -> int:
        return len(self.entries)

    def apply(self, text: str) -> list[LexiconPiece]:
        """Split ``text`` into respelled text runs and IPA runs (adjacent text runs merged)."""
        pattern = self._pattern if self._pattern is not None else _compile(self.entries)
        if pattern is None:
            return [LexiconPiece(text)] if text else []
        pieces: list[LexiconPiece] = []
        text_run: list[str] = []
        last = 0
        for m in pattern.finditer(text):
            replacement = self.entries.get(_key(m.group(0)))
            text_run.append(text[last : m.start()])
            if replacement is None:  # a case-insensitive match whose casefold differs (rare scripts)
                text_run.append(m.group(0))
                last = m.end()
                continue
            ipa = _ipa(replacement)
            if ipa is None:
                text_run.append(replacement)
            else:
                pieces.append(LexiconPiece("".join(text_run)))
                text_run = []
                pieces.append(LexiconPiece(ipa, is_ipa=True))
            last = m.end()
        text_run.append(text[last:])
        pieces.append(LexiconPiece("".join(text_run)))
        return [p for p in pieces if p.text]

    def respell(self, text: str) -> str:
        """``text`` with respellings applied and IPA entries left as written (for display)."""
        return "".join(p.text if not p.is_ipa else f"/{p.text}/" for p in self.apply(text))


def _compile(entries: Mapping[str, str]) -> re.Pattern[str] | None:
    if not entries:
        return None
    # Longest first: "St Pancras International" wins over "St Pancras". Whitespace inside
    # a phrase matches any run of whitespace, as the key was collapsed the same way.
    alternatives = (
        r"\s+".join(re.escape(word) for word in phrase.split()) for phrase in sorted(entries, key=len, reverse=True)
    )
    return re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + r")(?!\w)", re.IGNORECASE)
