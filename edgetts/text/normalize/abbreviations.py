"""Abbreviations: titles (Dr., Mr.), street words (St., Rd.), Latin (e.g., etc.), months (days: weekdays.py).

espeak-ng ends a sentence at "Dr." and "St."; expanding them here keeps "St. Pancras"
one phrase. "St"/"Dr" are Saint/Doctor before a name and Street/Drive after one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from edgetts.text.normalize.options import NormalizeOptions
from edgetts.text.normalize.rules import Rule, sentence_dot, spell

# Titles before a name, with or without their dot; in capitals too where the capitals are no other
# word ("MR A SHAH"; "MS" is also Microsoft, "COL" a pass, "GEN" a generation).
_TITLES = {
    "Mr": "Mister",
    "Mrs": "Missus",
    "Ms": "Miz",
    "Prof": "Professor",
    "Mt": "Mount",
    "Rev": "Reverend",
    "Revd": "Reverend",
    "Capt": "Captain",
    "Sgt": "Sergeant",
    "Lt": "Lieutenant",
    "Col": "Colonel",
    "Gen": "General",
    "Hon": "Honorable",
    "Rt": "Right",
    "Cllr": "Councillor",
    "Insp": "Inspector",
    "Supt": "Superintendent",
}
_CAPITAL_TITLES = ("MR", "MRS", "PROF", "REV", "CAPT", "SGT", "CLLR")
_PLACES = {
    "Rd": "Road",
    "Ave": "Avenue",
    "Ln": "Lane",
    "Sq": "Square",
    "Blvd": "Boulevard",
    "Cres": "Crescent",
    "Stn": "Station",
    "Sta": "Station",
    "Pl": "Place",
    "Ct": "Court",
    "Hwy": "Highway",
    "Pkwy": "Parkway",
    "Terr": "Terrace",
    "Ter": "Terrace",
    "Ctr": "Center",
    "Gdns": "Gardens",
    "Pde": "Parade",
}
# Before a number these are a road or a platform whatever comes before them ("take Hwy 9").
_BEFORE_NUMBER = {"Hwy": "Highway", "Rte": "Route", "Plat": "Platform", "Pfm": "Platform", "Vol": "Volume"}
# "Church St Station", "High St Kensington": St between a street's name and a place is Street.
_STREET_NAMES = frozenset(
    "High Main Church Market Station Mill Bridge Castle Broad Front Back Water Chapel School King "
    "Queen North South East West New Old Park Green".split()
)
_AFTER_STREET = frozenset(
    "Station Stn Entrance Exit Stop Market Bridge Junction Underground Tube Metro Subway Depot "
    "Interchange Approach Car Bus Shopping Post Police Library".split()
)
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
# Words that start a new sentence after "Baker St." rather than continue a name.
_SENTENCE_STARTERS = frozenset(
    "The This That These Those There Please We You It He She They I A An All Our Your "
    "Trains Passengers Customers Thank Thanks When If Do Don't Mind Attention".split()
)
_PREV_WORD = re.compile(r"(?:^|(?P<lead>[.!?:;]\s*)|\s)(?P<w>[A-Za-z][\w'-]*)\s+$")
_NEXT_WORD = re.compile(r"\s+(?P<w>[A-Za-z][\w'-]*)")
_ORDINAL_BEFORE = re.compile(r"(?<![0-9])[0-9]+(?:st|nd|rd|th)\s+$")


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
        if title != "Saint" or not _street_between(m, nxt["w"]):
            return title
    # "St" is far more often a street than "Dr" a drive: only a mid-sentence name makes a Drive.
    at_end = nxt is None and not m.string[m.end() :].strip(" ,;:.!?")
    if _capitalised_before(m, first_word_counts=title == "Saint" or at_end):
        return place + sentence_dot(m)
    return (title if title == "Doctor" else place) + sentence_dot(m)


def _street_between(m: re.Match[str], following: str) -> bool:
    """ "Church St Station", "High St Kensington": a street's name before St and a place or a
    known street name around it. "London St Pancras" stays Saint."""
    prev = _PREV_WORD.search(m.string, max(0, m.start() - 80), m.start())
    if prev is None or not prev["w"][0].isupper():
        return False
    return prev["w"] in _STREET_NAMES or (following in _AFTER_STREET and prev["w"] not in _SENTENCE_STARTERS)


def _title(m: re.Match[str], options: NormalizeOptions) -> str:
    key = m["ab"].capitalize() if m["ab"].isupper() and len(m["ab"]) > 1 else m["ab"]
    rest = m.string[m.end() :]
    if key == "Gen" and re.match(r"\s+[XYZ](?![A-Za-z])", rest):
        return m.group(0)  # "Gen Z" is a generation
    if key == "Rt" and not re.match(r"\s+Hon", rest):
        return m.group(0)
    # "Mr A Shah": after a title a lone A is an initial, not the article.
    return _TITLES[key] + (" " + spell("A", options) if m["initial"] else "")


def _place(m: re.Match[str], options: NormalizeOptions) -> str:
    ordinal_before = _ORDINAL_BEFORE.search(m.string, max(0, m.start() - 12), m.start())
    if not ordinal_before and not _capitalised_before(m, first_word_counts=True):
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


_DOTTED_ALT = _alternation(_DOTTED)
_E = r"(?![A-Za-z0-9])"

RULES = (
    Rule(
        "number_sign",
        re.compile(r"(?<![A-Za-z])(?P<ab>[Nn]os?)\.\s?(?=[0-9])|(?<![A-Za-z0-9&])#\s?(?=[0-9])"),
        lambda m, o: "numbers " if (m["ab"] or "").lower() == "nos" else "number ",
    ),
    Rule("ambiguous", re.compile(r"(?<![A-Za-z])(?P<ab>St|Dr|ST|DR)(?:\.|" + _E + ")"), _ambiguous),
    # A title before a name, or before "and Mrs ..." ("Mr & Mrs Patel", "Mr and Mrs Hughes").
    Rule(
        "title",
        re.compile(
            r"(?<![A-Za-z])(?P<ab>" + _alternation([*_TITLES, *_CAPITAL_TITLES]) + r")\.?"
            r"(?=\s+(?:[A-Z]|(?:&|and)\s+(?:Mrs?|Ms|Dr|MRS?)\b))"
            r"(?:\s+(?P<initial>A)\.?(?=\s+[A-Z]))?"
        ),
        _title,
    ),
    Rule(
        "before_number",
        re.compile(r"(?<![A-Za-z])(?P<ab>" + _alternation(_BEFORE_NUMBER) + r")\.?(?=\s?[0-9])"),
        lambda m, o: _BEFORE_NUMBER[m["ab"]] + " ",
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
)
