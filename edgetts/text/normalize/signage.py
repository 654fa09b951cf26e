"""Limits and quantities as signs write them: "Max 3 persons", "Min. age 18", "Qty 12 pcs", "£1.20 ea",
"6 ft 6 in", "24 x 18 x 12 in", "Opening hrs".

"max" and "min" are maximum and minimum; "min" right after a number stays minutes (units.py), "max"
after a quantity stays "max" (said so: "2 hrs max"), lower-case ones count only beside a number, and
a capitalised "Max" or "Min" before a capitalised word that is no limit ("Max Verstappen") is a name.
"in" is inches only after a number and where nothing else fits: after feet ("6 ft 6 in"), with its dot
("55 in."), before a dimension ("12 in x 8 in", "24 in wide") or at the end of a clause ("up to
12 in"); "in 5 minutes" and "4 in each hour" keep the word.
"""

from __future__ import annotations

import re

from edgetts.text.normalize.numbers import NUMBER_PATTERN, read_number
from edgetts.text.normalize.options import NormalizeOptions
from edgetts.text.normalize.rules import Rule, sentence_dot

_LIMIT_NOUNS = frozenset(
    "height width weight speed load stay age capacity length headroom persons people occupancy spend "
    "order temp temperature gross axle clearance items bags adults children guests passengers vehicle "
    "vehicles size".split()
)
_LIMITS = {"max": "maximum", "min": "minimum"}
_NEXT = re.compile(r"[\s:]+(?P<w>[A-Za-z]+|[0-9£$€])")
_WORDS = {
    "qty": "quantity",
    "wt": "weight",
    "ea": "each",
    "hrs": "hours",
    "hr": "hour",
    "hols": "holidays",
    "hol": "holiday",
    "approx": "approximately",
}


def _cased(word: str, like: str) -> str:
    """``word`` with the case of the abbreviation it replaces ("Max" -> "Maximum"); capitals as lower
    case, since espeak-ng may spell a word in capitals."""
    return word.capitalize() if like[:1].isupper() and not like.isupper() else word


_DIGIT = re.compile(r"[0-9£$€]")
_AFTER_QUANTITY = re.compile(r"[0-9][0-9.,]*\s?[A-Za-z/]*\s$")


def _near_number(m: re.Match[str]) -> bool:
    """A number close by: in lower case these are abbreviations only beside a quantity
    ("max 2 bags", "2 hrs max", "min spend £10"); lower-case words alone are left as written."""
    return bool(_DIGIT.search(m.string, max(0, m.start() - 20), m.end() + 24))


def _limit(m: re.Match[str], options: NormalizeOptions) -> str:
    written = m["w"]
    if written.islower() and not _near_number(m):
        return m.group(0)
    if written.lower() == "max" and _AFTER_QUANTITY.search(m.string, max(0, m.start() - 24), m.start()):
        return m.group(0)  # "3.5kg max", "2 hrs max": said "max", a word; a trailing "min" is not one
    nxt = _NEXT.match(m.string, m.end())
    if written[0].isupper() and not written.isupper() and not m["dot"] and nxt is not None:
        following = nxt["w"]
        if following[0].isupper() and following.lower() not in _LIMIT_NOUNS:
            return m.group(0)  # "Max Verstappen", "Min Jung"
    return _cased(_LIMITS[written.lower()], written) + sentence_dot(m)


_AFTER_FEET = re.compile(r"(?:[0-9] ?(?:ft|feet|foot)|[0-9]')\s*$")
_INCH_CONTEXT = re.compile(r"\s*(?:$|[,;:)!?]|x\s|by\s|(?:wide|high|tall|long|deep|thick|screen|display)\b)")


def _inches(m: re.Match[str], options: NormalizeOptions) -> str:
    before = m.string[max(0, m.start() - 12) : m.start()]
    after = m.string[m.end() :]
    dotted = m.group(0).endswith(".")
    if not (dotted or _AFTER_FEET.search(before) or _INCH_CONTEXT.match(after)):
        return m.group(0)
    number = read_number(m["num"], options.hundred_and, options.say_zero_as)
    return f"{number} {'inch' if m['num'] == '1' else 'inches'}" + sentence_dot(m)


def _word(m: re.Match[str], options: NormalizeOptions) -> str:
    written = m["w"] or m["w2"] or m["w3"]
    if written.islower() and not _near_number(m):
        return m.group(0)
    return _cased(_WORDS[written.lower()], written) + sentence_dot(m)


_E = r"(?![A-Za-z0-9])"

WORD_RULES = (
    # "min" right after a number is minutes: units.py reads it later.
    Rule(
        "limit",
        re.compile(r"(?<![A-Za-z0-9])(?<![0-9] )(?P<w>[Mm]ax|MAX|[Mm]in|MIN)(?P<dot>\.)?" + _E),
        _limit,
    ),
    Rule(
        "signage_word",
        re.compile(
            r"(?<![A-Za-z])(?:(?P<w>[Qq]ty|QTY|[Ww]t|[Hh]ols?|[Aa]pprox)(?![A-Za-z0-9])\.?"
            r"|(?<![0-9] )(?<![0-9])(?P<w2>[Hh]rs?)(?![A-Za-z0-9])\.?)"
            r"|(?:(?<=[0-9] )|(?<=[0-9]p ))(?P<w3>ea)\.?" + _E
        ),
        _word,
    ),
    Rule("number_of", re.compile(r"(?<![A-Za-z])(?P<ab>[Nn]o)\.\s(?=of\b)"), lambda m, o: m["ab"][0] + "umber "),
)


DIMENSION_RULES = (
    # "24 x 18 x 12 in": "by". Only between numbers, spaced alike on both sides ("x3105" is an extension).
    Rule("dimensions", re.compile(r"(?<=[0-9])(?: x |x)(?=[0-9])"), lambda m, o: " by "),
)
"""Before the phone and extension rules: "24 x 18" is no extension."""

QUANTITY_RULES = (
    Rule(
        "inches",
        re.compile(r"(?<![0-9A-Za-z.,])(?P<num>" + NUMBER_PATTERN + r")\s?in\.?(?![A-Za-z0-9])"),
        _inches,
    ),
)
"""Before units.py: "6 ft 6 in" needs its feet still written."""
