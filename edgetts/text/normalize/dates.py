"""Dates: "12/03/2025", "2025-03-12", "3 March", "March 3rd, 2025", decades ("1980s")."""

from __future__ import annotations

import re

from edgetts.text.normalize.numbers import cardinal, ordinal, plural, year
from edgetts.text.normalize.options import NormalizeOptions
from edgetts.text.normalize.rules import Rule

MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_MONTH_BY_PREFIX = {name[:3].lower(): i for i, name in enumerate(MONTHS, 1)}
_MONTH_BY_PREFIX["sept"] = 9
# Full names, and three-letter forms ("Sept" too) only with a capital: "mar" and "jun" are words.
# Only a short form takes a dot: after "May" or "March" a dot ends the sentence (issue 16).
_MONTH = (
    r"(?P<mon>January|February|March|April|May|June|July|August|September|October|"
    r"November|December|(?:Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)(?![A-Za-z])\.?)"
)
_DAY = r"(?P<d>[12][0-9]|3[01]|0?[1-9])"
_ORD = r"(?:st|nd|rd|th)?"
_YEAR = r"(?P<y>[0-9]{4})"
_E = r"(?![0-9A-Za-z])"


def month_number(name: str) -> int:
    return _MONTH_BY_PREFIX[name.rstrip(".").lower()[: 4 if name.lower().startswith("sept") else 3]]


def date_words(day: int, month: int, year_: int | None, order: str, article: bool = True) -> str:
    """Spoken date: "the twelfth of March twenty twenty five" (dmy), "March twelfth ..." (mdy)."""
    name = MONTHS[month - 1]
    if order == "mdy":
        words = f"{name} {ordinal(day)}"
    else:
        words = f"{'the ' if article else ''}{ordinal(day)} of {name}"
    if year_ is not None:
        words += " " + year(year_)
    return words


def valid_date(day: int, month: int) -> bool:
    return 1 <= month <= 12 and 1 <= day <= (29 if month == 2 else 30 if month in (4, 6, 9, 11) else 31)


def full_year(text: str) -> int:
    """Two-digit years are this century below 70 ("25" -> 2025), else the last ("85" -> 1985)."""
    n = int(text)
    if len(text) == 2:
        return 2000 + n if n < 70 else 1900 + n
    return n


def _preceded_by_the(m: re.Match[str]) -> bool:
    return m.string[max(0, m.start() - 4) : m.start()].lower() == "the "


def _numeric(m: re.Match[str], options: NormalizeOptions) -> str:
    a, b = int(m["a"]), int(m["b"])
    day, month = (a, b) if options.date_order == "dmy" else (b, a)
    if not valid_date(day, month):
        return m.group(0).replace(m["sep"], " slash " if m["sep"] == "/" else " ")
    return date_words(day, month, full_year(m["y"]), options.date_order, not _preceded_by_the(m))


def _iso(m: re.Match[str], options: NormalizeOptions) -> str:
    day, month = int(m["d"]), int(m["mo"])
    if not valid_date(day, month):
        return m.group(0).replace("-", " ")
    return date_words(day, month, int(m["y"]), options.date_order, not _preceded_by_the(m))


def _day_month(m: re.Match[str], options: NormalizeOptions) -> str:
    y = int(m["y"]) if m["y"] else None
    return date_words(int(m["d"]), month_number(m["mon"]), y, "dmy", not _preceded_by_the(m))


def _month_day(m: re.Match[str], options: NormalizeOptions) -> str:
    words = f"{MONTHS[month_number(m['mon']) - 1]} {ordinal(int(m['d']))}"
    if m["y"]:
        words += f"{m['comma'] or ''} {year(int(m['y']))}"
    return words


def _decade(m: re.Match[str], options: NormalizeOptions) -> str:
    if m["n"]:
        return plural(cardinal(int(m["n"])))  # "over 18s"
    if m["c"]:
        return plural(year(int(m["c"] + m["d"] + "0")))
    return plural(cardinal(int(m["d"] + "0")))


NUMERIC_RULES = (
    Rule(
        "date_iso",
        re.compile(r"(?<![0-9A-Za-z.,/-])(?P<y>[0-9]{4})-(?P<mo>[0-9]{2})-(?P<d>[0-9]{2})" + _E),
        _iso,
    ),
    Rule(
        "date_numeric",
        re.compile(
            r"(?<![0-9A-Za-z.,/-])(?P<a>[0-9]{1,2})(?P<sep>[/.-])(?P<b>[0-9]{1,2})(?P=sep)"
            r"(?P<y>[0-9]{4}|[0-9]{2})" + _E
        ),
        _numeric,
    ),
)
"""All-numeric dates: before "-" and "/" are taken as ranges and fractions."""

WORD_RULES = (
    Rule(
        "date_day_month",
        re.compile(r"(?<![0-9A-Za-z.,])" + _DAY + _ORD + r"(?:\s+of)?\s+" + _MONTH + r"(?:,?\s+" + _YEAR + r")?" + _E),
        _day_month,
    ),
    Rule(
        "date_month_day",
        re.compile(
            r"(?<![A-Za-z])"
            + _MONTH
            + r"\s+"
            + _DAY
            + _ORD
            + r"(?![0-9A-Za-z:]|\s?[AaPp]\.?\s?[Mm](?![A-Za-z]))"
            + r"(?:(?P<comma>,)?\s+"
            + _YEAR
            + _E
            + r")?"
        ),
        _month_day,
    ),
    Rule(
        "decade",
        re.compile(r"(?<![0-9A-Za-z])'?(?:(?P<c>1[1-9]|20)?(?P<d>[1-9]|(?<=[0-9])0)0|(?P<n>[0-9]{1,2}))'?s" + _E),
        _decade,
    ),
)
