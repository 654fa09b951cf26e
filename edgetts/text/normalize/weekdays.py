"""Days of the week as signs and timetables write them: "Mon-Fri", "Sat & Sun", "Tue/Thu", "Closed Sun".

A run of day abbreviations joined by ``- – / , & and or to`` is read as days: a dash is "to",
a slash "and" ("Tue/Thu": Tuesday and Thursday; "Mon/Wed/Fri": Monday, Wednesday and Friday).
A day on its own: Mon, Tue(s), Thu(r)(s) and Fri are always days (no English word is spelled so);
Wed and Sat (verbs too) need a dot or a cue, Sun (the star, the newspaper) a cue: a digit after it
("Sun 11-4", "Sun. 5 May"), a schedule word before it ("Closed", "Open", "every", "on", "until"),
or another day anywhere in the text ("Sat 9-1, Sun closed").  "Sun & Sea Travel" stays the sun.
"""

from __future__ import annotations

import re

from edgetts.text.normalize.options import NormalizeOptions
from edgetts.text.normalize.rules import Rule, sentence_dot

DAYS = {
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
_ALWAYS = frozenset({"Mon", "Tue", "Tues", "Thu", "Thur", "Thurs", "Fri"})
_NEED_DOT_OR_CUE = frozenset({"Wed", "Sat"})
_CUE_WORDS = frozenset("closed open opens opening every each on until till til except late next this".split())
_DAY_WORDS = "|".join(sorted([*DAYS, *(d.upper() for d in DAYS)], key=len, reverse=True))
_TOKEN = r"(?:" + _DAY_WORDS + r")(?![A-Za-z0-9'])\.?"
_SEP = r"(?:\s?[-–]\s?|\s*/\s*|\s*,\s*|\s+(?:&|and|or|to)\s+)"
_PIECES = re.compile(r"(?P<day>" + _DAY_WORDS + r")\.?|(?P<sep>" + _SEP + r")")
_ANY_DAY = re.compile(
    r"(?<![A-Za-z])(?:(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day|(?:Mon|Tues?|Wed|Thu(?:rs?)?|Fri|Sat)\.?)(?![a-z])"
)
_DIGIT_AFTER = re.compile(r"\s*[0-9]")
_LIST_AFTER = re.compile(r"\s*,|\s+(?:and|or|to)\b")
_PREV = re.compile(r"(?P<w>[A-Za-z]+)\W*$")


def _sep_words(sep: str, last: bool) -> str:
    mark = sep.strip()
    if mark in ("-", "–"):
        return " to "
    if mark == "/":
        return " and " if last else ", "
    if mark == ",":
        return ", "
    return f" {'and' if mark == '&' else mark} "


def _has_cue(m: re.Match[str], key: str, dotted: bool) -> bool:
    """Whether a lone Wed, Sat or Sun is a day here (see the module docstring)."""
    if key in _NEED_DOT_OR_CUE and dotted:
        return True
    if _DIGIT_AFTER.match(m.string, m.end()):
        return True
    if dotted and _LIST_AFTER.match(m.string, m.end()):
        return True  # "Sun., Mon.", "Sun. and holidays"
    prev = _PREV.search(m.string, max(0, m.start() - 30), m.start())
    if prev is not None and prev["w"].lower() in _CUE_WORDS:
        return True
    others = _ANY_DAY.findall(m.string[: m.start()] + " " + m.string[m.end() :])
    return bool(others)


def _days(m: re.Match[str], options: NormalizeOptions) -> str:
    pieces = [p for p in _PIECES.finditer(m.group(0))]
    days = [p["day"].capitalize() for p in pieces if p["day"]]
    if len(days) == 1:
        key = days[0]
        if key not in _ALWAYS and not _has_cue(m, key, m.group(0).endswith(".")):
            return m.group(0)
    seps = [p["sep"] for p in pieces if p["sep"] is not None]
    words = DAYS[days[0]]
    for index, (sep, day) in enumerate(zip(seps, days[1:], strict=True)):
        words += _sep_words(sep, last=index == len(seps) - 1) + DAYS[day]
    return words + sentence_dot(m)


RULES = (
    Rule("weekdays_m_f", re.compile(r"(?<![A-Za-z])M\s?[-–]\s?F(?![A-Za-z0-9])"), lambda m, o: "Monday to Friday"),
    Rule("weekdays", re.compile(r"(?<![A-Za-z'])" + _TOKEN + r"(?:" + _SEP + _TOKEN + r")*"), _days),
)
