"""Ranges: "10-12", "Platforms 3-5", "£5-£10", "Gates B1-B6", "Coaches A-D", "8.30-17.30", "0700-0930".

A dash between two numbers (or times, or codes) is "to". A price range says its currency where it
is written: "£5-10" is five to ten pounds, "£5-£10" five pounds to ten pounds. Letters make a range only one
capital each side, in order ("A-D", not "T-Mobile"). Two dot times ("8.30-17.30") or four-digit
times with a leading zero ("0700-0930") around a dash are clock times: alone, "8.30" is a decimal
and "0700" digits.
"""

from __future__ import annotations

import re

from edgetts.text.normalize.money import CURRENCIES, money_words
from edgetts.text.normalize.numbers import cardinal_str
from edgetts.text.normalize.options import NormalizeOptions
from edgetts.text.normalize.rules import Rule, spell

_DASH = r"\s?[-–]\s?"
_HOUR = r"(?:[01]?[0-9]|2[0-3])"
_E = r"(?![A-Za-z0-9])"


def _money_range(m: re.Match[str], options: NormalizeOptions) -> str:
    currency = CURRENCIES[m["cur"]]
    first = cardinal_str(m["a"].replace(",", ""), options.hundred_and)
    return f"{first} to {money_words(m['b'], m['frac'], m['scale'], currency, options)}"


def _letter_range(m: re.Match[str], options: NormalizeOptions) -> str:
    if m["a"] >= m["b"]:
        return m.group(0)
    return f"{spell(m['a'], options)} to {spell(m['b'], options)}"


def _hhmm_range(m: re.Match[str], options: NormalizeOptions) -> str:
    a, b = m["a"], m["b"]
    return f"{a[:2]}:{a[2:]} to {b[:2]}:{b[2:]}"


def _dot_times(m: re.Match[str], options: NormalizeOptions) -> str:
    separator = "." if m["ap"] is not None else ":"
    return f"{m['h1']}:{m['m1']} to {m['h2']}{separator}{m['m2']}"


EARLY_RULES = (
    # Before the phone rules, which would read "0700-0930" as a number to dial.
    Rule(
        "range_hhmm",
        re.compile(
            r"(?<![0-9A-Za-z.,:+-])(?=0|[0-9]{4}"
            + _DASH
            + r"0)(?P<a>(?:[01][0-9]|2[0-3])[0-5][0-9])"
            + _DASH
            + r"(?P<b>(?:[01][0-9]|2[0-3])[0-5][0-9])(?![0-9A-Za-z:-]|\.[0-9])"
        ),
        _hhmm_range,
    ),
)

RULES = (
    Rule(
        "range_money",
        re.compile(
            r"(?P<cur>[£$€])(?P<a>[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?![.0-9])" + _DASH + r"(?![£$€])"
            r"(?P<b>[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.(?P<frac>[0-9]+))?"
            r"(?:\s?(?P<scale>thousand|million|billion|bn|mn|[kKmMb])(?![A-Za-z0-9]))?"
        ),
        _money_range,
    ),
    # "8.30-17.30", "5.30-7.30pm": clock times for the time rules ("7.30pm" they read as it is).
    Rule(
        "range_dot_times",
        re.compile(
            r"(?<![0-9:.,])(?P<h1>"
            + _HOUR
            + r")\.(?P<m1>[0-5][0-9])"
            + _DASH
            + r"(?P<h2>"
            + _HOUR
            + r")\.(?P<m2>[0-5][0-9])"
            r"(?:(?P<ap>(?=\s?[AaPp]\.?[Mm](?![A-Za-z])))|(?![0-9]|\.[0-9]))"
        ),
        _dot_times,
    ),
    Rule(
        "range_codes",
        re.compile(
            r"(?<![0-9A-Za-z])(?P<a>[A-Z]{1,2}[0-9]{1,3}|[0-9]{1,3}[A-Z])"
            + _DASH
            + r"(?=(?:[A-Z]{1,2}[0-9]{1,3}|[0-9]{1,3}[A-Z])"
            + _E
            + ")"
        ),
        lambda m, o: m["a"] + " to ",
    ),
    Rule(
        "range",
        re.compile(
            r"(?:(?<=[0-9])|(?<=[0-9][AaPp][Mm])|(?<=[0-9] [AaPp][Mm])|(?<=[0-9][AaPp]\.[Mm]\.)"
            r"|(?<=[0-9] [AaPp]\.[Mm]\.))\s?[-–]\s?(?=[£$€]?[0-9])"
        ),
        lambda m, o: " to ",
    ),
)
"""After numeric dates, before times and prices."""

WORD_RULES = (
    Rule(
        "range_letters",
        re.compile(r"(?<![A-Za-z0-9'-])(?P<a>[A-Z])" + _DASH + r"(?P<b>[A-Z])(?![A-Za-z0-9'-])"),
        _letter_range,
    ),
)
