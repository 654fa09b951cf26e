"""Text normalisation: what an announcer says for "£12.50", "14:05", "BA 2490" or "St. Pancras".

``normalize(text)`` returns the words to speak, with the sentence punctuation
(. , ? ! : ;) the phonemizer needs for clause boundaries and intonation. Pure
Python, no espeak; it never raises on any str and drops what cannot be spoken.
The rules run in a fixed order, most specific first (a phone number before a
range, a price before a plain number); see docs/normalization.md.
"""

from __future__ import annotations

import logging
import re

from edgetts.text.normalize import (
    abbreviations,
    addresses,
    cleanup,
    codes,
    dates,
    money,
    numbers,
    ranges,
    roman,
    signage,
    times,
    units,
    weekdays,
)
from edgetts.text.normalize.options import NormalizeOptions
from edgetts.text.normalize.rules import Rule

__all__ = ["NormalizeOptions", "normalize", "sanitize"]

_LOGGER = logging.getLogger(__name__)
_DEFAULT_OPTIONS = NormalizeOptions()
_HAS_DIGIT = re.compile(r"[0-9]")

sanitize = cleanup.sanitize


def _number(m: re.Match[str], options: NormalizeOptions) -> str:
    return numbers.read_number(m.group(0).replace("−", "-"), options.hundred_and, options.say_zero_as, years=True)


def _ordinal(m: re.Match[str], options: NormalizeOptions) -> str:
    return numbers.ordinal_str(m["n"].replace(",", ""), options.hundred_and)


_ORDINAL = Rule(
    "ordinal",
    re.compile(
        r"(?<![0-9A-Za-z.,])(?P<n>[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:st|nd|rd|th|ST|ND|RD|TH)"
        r"(?![A-Za-z0-9])"
    ),
    _ordinal,
)
_NUMBER = Rule(
    "number",
    re.compile(r"(?<![0-9A-Za-z_])(?:(?<![^\s(\[/])[-+])?(?:" + numbers.NUMBER_PATTERN + ")"),
    _number,
)

_WORD_RULES: tuple[Rule, ...] = (
    *roman.RULES,
    *abbreviations.RULES,
    *weekdays.RULES,
    *ranges.WORD_RULES,
    *signage.WORD_RULES,
)
"""Rules that need no digit: before the numbers, so "Mon 9-5" and "Max 3" are read as words first."""

_NUMERIC_RULES: tuple[Rule, ...] = (
    *ranges.EARLY_RULES,
    *signage.DIMENSION_RULES,
    *codes.PHONE_RULES,
    *dates.NUMERIC_RULES,
    *ranges.RULES,
    *times.RULES,
    *money.RULES,
    *signage.QUANTITY_RULES,
    *units.RULES,
    *dates.WORD_RULES,
    _ORDINAL,
    *codes.CODE_RULES,
    _NUMBER,
)


def normalize(text: str, options: NormalizeOptions | None = None) -> str:
    """The words that will be spoken for ``text`` (see the module docstring). Never raises."""
    options = options or _DEFAULT_OPTIONS
    text = cleanup.sanitize(text)
    if "@" in text or "#" in text or "." in text:  # addresses first: no later rule sees their dots
        for rule in addresses.RULES:
            text = rule.apply(text, options)
    for rule in _WORD_RULES:
        text = rule.apply(text, options)
    if _HAS_DIGIT.search(text):
        for rule in _NUMERIC_RULES:
            text = rule.apply(text, options)
    for rule in cleanup.RULES:
        text = rule.apply(text, options)
    return cleanup.tidy(cleanup.keep_speakable(text))
