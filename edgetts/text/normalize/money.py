"""Prices: "$500", "£12.50", "€0.99", "GBP 5", "20 EUR", "£1.5m", "50p"."""

from __future__ import annotations

import re
from dataclasses import dataclass

from edgetts.text.normalize.numbers import cardinal, cardinal_str, read_number
from edgetts.text.normalize.options import NormalizeOptions
from edgetts.text.normalize.rules import Rule


@dataclass(frozen=True)
class Currency:
    """The words of one currency, singular and plural, main unit and hundredth."""

    one: str
    many: str
    minor_one: str | None
    minor_many: str | None


_DOLLAR = Currency("dollar", "dollars", "cent", "cents")
_POUND = Currency("pound", "pounds", "penny", "pence")
_EURO = Currency("euro", "euros", "cent", "cents")
_YEN = Currency("yen", "yen", None, None)
CURRENCIES = {
    "$": _DOLLAR,
    "USD": _DOLLAR,
    "US$": _DOLLAR,
    "£": _POUND,
    "GBP": _POUND,
    "€": _EURO,
    "EUR": _EURO,
    "¥": _YEN,
    "JPY": _YEN,
}
_SCALE_WORDS = {
    "k": "thousand",
    "K": "thousand",
    "thousand": "thousand",
    "m": "million",
    "M": "million",
    "mn": "million",
    "million": "million",
    "bn": "billion",
    "b": "billion",
    "billion": "billion",
    "trillion": "trillion",
}

_NUM = r"(?P<int>[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.(?P<frac>[0-9]+))?"
_SCALE = r"(?:\s?(?P<scale>thousand|million|billion|trillion|bn|mn|[kKmMb])(?![A-Za-z0-9]))?"
_SYMBOL = r"(?P<cur>US\$|[$£€¥])"
_CODE = r"(?P<cur>USD|GBP|EUR|JPY)"


def _count(number: str, one: str, many: str, options: NormalizeOptions) -> str:
    words = cardinal_str(number.replace(",", ""), options.hundred_and)
    return f"{words} {one if words == 'one' else many}"


def money_words(whole: str, frac: str | None, scale: str | None, cur: Currency, options: NormalizeOptions) -> str:
    """("12", "50", None, pounds) -> "twelve pounds fifty" (``money_style`` "full": "... and
    fifty pence")."""
    number = whole + (f".{frac}" if frac else "")
    if scale:
        return f"{read_number(number, options.hundred_and)} {_SCALE_WORDS[scale]} {cur.many}"
    if frac is None or len(frac) != 2 or cur.minor_one is None or cur.minor_many is None:
        if frac:
            return f"{read_number(number, options.hundred_and)} {cur.many}"
        return _count(whole, cur.one, cur.many, options)
    if frac == "00":
        return _count(whole, cur.one, cur.many, options)
    if not whole.strip("0,"):
        return _count(frac, cur.minor_one, cur.minor_many, options)
    head = _count(whole, cur.one, cur.many, options)
    if options.money_style == "full":
        return f"{head} and {_count(frac, cur.minor_one, cur.minor_many, options)}"
    return f"{head} {cardinal(int(frac), options.hundred_and)}"


def _amount(m: re.Match[str], options: NormalizeOptions) -> str:
    words = money_words(m["int"], m["frac"], m["scale"], CURRENCIES[m["cur"]], options)
    return ("minus " if m.groupdict().get("neg") else "") + words


def _pence(m: re.Match[str], options: NormalizeOptions) -> str:
    if m["unit"] == "p":
        return _count(m["int"], "penny", "pence", options)
    return _count(m["int"], "cent", "cents", options)


_B = r"(?<![0-9A-Za-z.,])"
_E = r"(?![0-9A-Za-z])"

RULES = (
    Rule("money_symbol", re.compile(r"(?P<neg>[-−])?" + _SYMBOL + r"\s?" + _NUM + _SCALE), _amount),
    Rule("money_code_first", re.compile(r"(?<![A-Za-z])" + _CODE + r"\s?" + _NUM + _SCALE), _amount),
    Rule(
        "money_after",
        re.compile(_B + _NUM + _SCALE + r"\s?(?:" + _CODE + _E + r"|(?P<sym>[€£$¥]))"),
        lambda m, o: money_words(m["int"], m["frac"], m["scale"], CURRENCIES[m["cur"] or m["sym"]], o),
    ),
    Rule("money_pence", re.compile(_B + r"(?P<int>[0-9]{1,3})\s?(?P<unit>p|¢)" + _E), _pence),
)
