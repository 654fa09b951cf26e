"""Abbreviations: titles (Dr., Mr.), street words (St., Rd.), Latin (e.g., etc.), months, days.

espeak-ng ends a sentence at "Dr." and "St."; expanding them here keeps "St. Pancras"
one phrase. "St"/"Dr" are Saint/Doctor before a name and Street/Drive after one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from edgetts.text.normalize.options import NormalizeOptions
from edgetts.text.normalize.rules import Rule, sentence_dot

_TITLES = {"Mr": "Mister", "Mrs": "Missus", "Ms": "Miz", "Prof": "Professor", "Mt": "Mount"}
_PLACES = {
    "Rd": "Road",
    "Ave": "Avenue",
    "Ln": "Lane",
    "Sq": "Square",
    "Blvd": "Boulevard",
    "Cres": "Crescent",
    "Stn": "Station",
}
_AMBIGUOUS = {"St": ("Saint", "Street"), "Dr": ("Doctor", "Drive")}
# (expansion, may the dot also end the sentence?)
_DOTTED: dict[str, tuple[str, bool]] = {
    "approx": ("approximately", False),
    "etc": ("et cetera", True),
    "e.g": ("for example", False),
    "i.e": ("that is", False),
    "vs": ("versus", False),
    "incl": ("including", False),
    "excl": ("excluding", False),
    "dept": ("department", True),
    "tel": ("telephone", False),
    "apt": ("apartment", False),
    "ltd": ("limited", True),
    "inc": ("incorporated", True),
    "jr": ("junior", True),
    "sr": ("senior", True),
}
_MONTHS = {
    "Jan": "January",
    "Feb": "February",
    "Mar": "March",
    "Apr": "April",
    "Jun": "June",
    "Jul": "July",
    "Aug": "August",
    "Sep": "September",
    "Sept": "September",
    "Oct": "October",
    "Nov": "November",
    "Dec": "December",
}
_DAYS = {
    "Mon": "Monday",
    "Tue": "Tuesday",
    "Tues": "Tuesday",
    "Wed": "Wednesday",
    "Thu": "Thursday",
    "Thur": "Thursday",
    "Thurs": "Thursday",
    "Fri": "Friday",
    "Sat": "Saturday",
    "Sun": "Sunday",
}
# Words that start a new sentence after "Baker St." rather than continue a name.
_SENTENCE_STARTERS = frozenset(
    "The This That These Those There Please We You It He She They I A An All Our Your "
    "Trains Passengers Customers Thank Thanks When If Do Don't Mind Attention".split()
)
_PREV_WORD = re.compile(r"(?:^|(?P<lead>[.!?:;]\s*)|\s)(?P<w>[A-Za-z][\w'-]*)\s+$")
_NEXT_WORD = re.compile(r"\s+(?P<w>[A-Za-z][\w'-]*)")


def _alternation(words: Iterable[str]) -> str:
    """A regex alternation of ``words``, longest first so "Sept" wins over "Sep"."""
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


def _capitalised_before(m: re.Match[str], *, first_word_counts: bool) -> bool:
    """A capitalised word just before the match ("Baker St"); the first word of a
    sentence counts only with ``first_word_counts`` ("Call Dr. ..." is no street)."""
    # Look only a little way back: a search over the whole prefix would be quadratic.
    prev = _PREV_WORD.search(m.string, max(0, m.start() - 80), m.start())
    if prev is None or not prev["w"][0].isupper():
        return False
    starts_sentence = prev.start("w") == 0 or prev["lead"] is not None
    return first_word_counts or not starts_sentence


def _ambiguous(m: re.Match[str], options: NormalizeOptions) -> str:
    title, place = _AMBIGUOUS[m["ab"].capitalize()]
    nxt = _NEXT_WORD.match(m.string, m.end())
    if nxt and nxt["w"][0].isupper() and nxt["w"] not in _SENTENCE_STARTERS:
        return title
    # "St" is far more often a street than "Dr" a drive: only a mid-sentence name makes a Drive.
    at_end = nxt is None and not m.string[m.end() :].strip(" ,;:.!?")
    if _capitalised_before(m, first_word_counts=title == "Saint" or at_end):
        return place + sentence_dot(m)
    return (title if title == "Doctor" else place) + sentence_dot(m)


def _title(m: re.Match[str], options: NormalizeOptions) -> str:
    return _TITLES[m["ab"]]


def _place(m: re.Match[str], options: NormalizeOptions) -> str:
    if not _capitalised_before(m, first_word_counts=True):
        return m.group(0)
    return _PLACES[m["ab"]] + sentence_dot(m)


def _dotted(m: re.Match[str], options: NormalizeOptions) -> str:
    key = m["ab"].lower()
    words, may_end = _DOTTED[key]
    if m["ab"][0].isupper():
        words = words[0].upper() + words[1:]
    return words + (sentence_dot(m) if may_end else "")


def _month(m: re.Match[str], options: NormalizeOptions) -> str:
    return _MONTHS[m["ab"]] + sentence_dot(m)


def _day_range(m: re.Match[str], options: NormalizeOptions) -> str:
    return f"{_DAYS[m['a']]} to {_DAYS[m['b']]}" + sentence_dot(m)


def _day(m: re.Match[str], options: NormalizeOptions) -> str:
    return _DAYS[m["ab"] or m["sun"] or m["sun_end"]] + sentence_dot(m)


_DAY_ALT = _alternation(_DAYS)
_DOTTED_ALT = _alternation(_DOTTED)
_E = r"(?![A-Za-z0-9])"

RULES = (
    Rule(
        "number_sign",
        re.compile(r"(?<![A-Za-z])(?P<ab>[Nn]os?)\.\s?(?=[0-9])|(?<![A-Za-z0-9&])#\s?(?=[0-9])"),
        lambda m, o: "numbers " if (m["ab"] or "").lower() == "nos" else "number ",
    ),
    Rule("ambiguous", re.compile(r"(?<![A-Za-z])(?P<ab>St|Dr|ST|DR)(?:\.|" + _E + ")"), _ambiguous),
    Rule(
        "title",
        re.compile(r"(?<![A-Za-z])(?P<ab>" + _alternation(_TITLES) + r")\.?(?=\s+[A-Z])"),
        _title,
    ),
    Rule(
        "place",
        re.compile(r"(?<=[A-Za-z] )(?P<ab>" + _alternation(_PLACES) + r")(?:\.|" + _E + ")"),
        _place,
    ),
    Rule(
        "dotted",
        re.compile(r"(?<![A-Za-z.])(?P<ab>" + _DOTTED_ALT + r")\.", re.IGNORECASE),
        _dotted,
    ),
    Rule("month", re.compile(r"(?<![A-Za-z])(?P<ab>" + _alternation(_MONTHS) + r")\."), _month),
    Rule(
        "day_range",
        re.compile(r"(?<![A-Za-z])(?P<a>" + _DAY_ALT + r")\.?\s?[-–]\s?(?P<b>" + _DAY_ALT + r")(?:\.|" + _E + ")"),
        _day_range,
    ),
    # "Sun." is also the star and the newspaper: only a day when a date or list follows.
    Rule(
        "day",
        re.compile(
            r"(?<![A-Za-z])(?:(?P<ab>" + _alternation(set(_DAYS) - {"Sun"}) + r")\.|"
            r"(?P<sun>Sun)\.(?=\s*[0-9,]|\s+(?:and|or|to)\b)"
            r"|(?:(?<=Sat\. and )|(?<=Saturday and )|(?<=Sat\. & ))(?P<sun_end>Sun)\.)"
        ),
        _day,
    ),
)
