"""Roman numerals: "Henry VIII" is "Henry the eighth", "World War II" and "Chapter IV" are cardinals.

Capital letters that spell a numeral are far more often words, initials or codes ("I", "MIX",
"CD", "DC", "XL", "Malcolm X"), so a numeral is read only where its context says it is one
(issue 43):

- after a word that numbers its parts ("Chapter", "Part", "World War", "Super Bowl", "Vol."):
  a cardinal ("Part three"). A lone C, D, L or M there is a letter ("Type C", "Block D");
- after a name of a monarch or pope ("George", "Louis", "John Paul"), or after a capitalised
  name that follows a title ("King", "Queen", "Pope"): "the" and an ordinal ("Louis the fourteenth");
- after any other capitalised word, a numeral of two or more of I, V and X only ("Rocky IV",
  "Block II"): a cardinal. A single letter there ("Malcolm X", "Plan B") stays a letter;
- at the start of a line, two or more letters and a full stop ("III. Exits"): a heading, a cardinal.

"I" alone is read as one only after a numbering word or a regnal title and name: everywhere
else it is the pronoun.
"""

from __future__ import annotations

import re

from edgetts.text.normalize.numbers import cardinal, ordinal
from edgetts.text.normalize.options import NormalizeOptions
from edgetts.text.normalize.rules import Rule

_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
# The canonical spelling only: "IIII" or "VX" is no numeral, so "MIMIC" or "DIV" never matches.
_NUMERAL = r"(?=[MDCLXVI])M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})"

# Words after which a numeral numbers a part; the spoken word for an abbreviated one.
_NUMBERING = {
    "Act": "Act",
    "Annex": "Annex",
    "Apollo": "Apollo",
    "Appendix": "Appendix",
    "Article": "Article",
    "Book": "Book",
    "Chapter": "Chapter",
    "Class": "Class",
    "Episode": "Episode",
    "Grade": "Grade",
    "Level": "Level",
    "Mark": "Mark",
    "Mk": "Mark",
    "Part": "Part",
    "Phase": "Phase",
    "Round": "Round",
    "Scene": "Scene",
    "Section": "Section",
    "Series": "Series",
    "Stage": "Stage",
    "Super Bowl": "Super Bowl",
    "Type": "Type",
    "Vol": "Volume",
    "Volume": "Volume",
    "World War": "World War",
}
_REGNAL_TITLES = frozenset(
    "King Queen Pope Emperor Empress Tsar Czar Kaiser Prince Princess Duke Duchess Saint St Sultan Pharaoh".split()
)
_REGNAL_NAMES = frozenset(
    "Alexander Alfonso Anne Benedict Boniface Catherine Charles Clement Constantine Edward Elizabeth "
    "Ferdinand Francis Frederick George Gregory Gustav Harold Henry Innocent James John Juan Leo "
    "Leopold Louis Ludwig Mary Napoleon Nicholas Paul Peter Philip Pius Ramesses Richard Robert "
    "Rudolf Sixtus Stephen Urban Victor Wilhelm William".split()
)
_SINGLE_IN_NUMBERING = frozenset("IVX")  # a lone C, D, L or M after "Type" or "Block" is a letter


def value(numeral: str) -> int:
    """The value of a canonical numeral ("XIV" -> 14); 0 for an empty string."""
    total = 0
    for letter, following in zip(numeral, [*numeral[1:], ""], strict=True):
        v = _VALUES[letter]
        total += -v if following and _VALUES[following] > v else v
    return total


def _keyword_alternation() -> str:
    words = sorted(_NUMBERING, key=len, reverse=True)
    return "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in words)


def _numbering(m: re.Match[str], options: NormalizeOptions) -> str:
    numeral = m["n"]
    if len(numeral) == 1 and numeral not in _SINGLE_IN_NUMBERING:
        return m.group(0)
    key = " ".join(m["kw"].split()).title()
    word = _NUMBERING.get(key, key)
    if m["kw"].isupper():
        word = word.upper()
    elif not m["kw"][0].isupper():
        word = word.lower()
    return f"{word} {cardinal(value(numeral), options.hundred_and)}"


def _is_regnal(m: re.Match[str]) -> bool:
    """A monarch's or pope's name, or any name right after a regnal title ("King Zog")."""
    if m["name"] in _REGNAL_NAMES:
        return True
    before = m.string[max(0, m.start() - 40) : m.start()].split()
    return bool(before) and before[-1] in _REGNAL_TITLES


def _after_title(m: re.Match[str]) -> bool:
    """ "Queen Elizabeth I", "King John I": only then is a lone I not the pronoun."""
    before = m.string[max(0, m.start() - 60) : m.start()].split()
    return any(word in _REGNAL_TITLES for word in before[-3:])


def _after_name(m: re.Match[str], options: NormalizeOptions) -> str:
    name, numeral = m["name"], m["n"]
    if len(numeral) == 1 and (numeral not in _SINGLE_IN_NUMBERING or _INITIAL.match(m.string, m.end())):
        return m.group(0)  # "John C", "George V. Smith": initials, not numerals
    if _is_regnal(m) and (numeral != "I" or _after_title(m)):
        return f"{name} the {ordinal(value(numeral), options.hundred_and)}"
    if len(numeral) >= 2 and set(numeral) <= set("IVX") and not name.isupper() and name not in _NOT_NAMES:
        return f"{name} {cardinal(value(numeral), options.hundred_and)}"
    return m.group(0)


def _heading(m: re.Match[str], options: NormalizeOptions) -> str:
    return f"{m['lead']}{cardinal(value(m['n']), options.hundred_and)}."


_INITIAL = re.compile(r"\.\s+[A-Z]")
# Capitalised words that are no name: "The IV stand", "Our XI" keep their letters.
_NOT_NAMES = frozenset(
    "The A An This That These Those Our Your My His Her Their Its No Any All Each Every And Or Of In On "
    "At To For With By From Please If When Is Are Was Were".split()
)
_E = r"(?![A-Za-z0-9])"

RULES = (
    # The numbering word in any case ("WORLD WAR II"), the numeral in capitals only ("part i" is no numeral).
    Rule(
        "roman_numbering",
        re.compile(r"(?<![A-Za-z])(?P<kw>(?i:" + _keyword_alternation() + r"))\.?\s+(?P<n>" + _NUMERAL + r")" + _E),
        _numbering,
    ),
    Rule(
        "roman_after_name",
        re.compile(r"(?<![A-Za-z])(?P<name>[A-Z][A-Za-z]+)\s+(?P<n>" + _NUMERAL + r")" + _E),
        _after_name,
    ),
    Rule(
        "roman_heading",
        re.compile(r"(?:^|(?<=\n))(?P<lead>\s*)(?P<n>(?=[MDCLXVI]{2})" + _NUMERAL + r")\.(?=\s+[A-Z])"),
        _heading,
    ),
)
