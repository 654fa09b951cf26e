"""Numbers that are names, not quantities: phone numbers, extensions, flights, registrations,
platforms and other letter-digit codes. Each is read in the groups a person would use."""

from __future__ import annotations

import re

from edgetts.text.normalize.numbers import cardinal, digits, pairs
from edgetts.text.normalize.options import NormalizeOptions
from edgetts.text.normalize.rules import Rule, spell

_GROUP_SPLIT = re.compile(r"[^0-9+]+")
# Short capitalised words that look like airline codes in shouted text ("IN 10 MINUTES").
_NOT_AIRLINES = frozenset(
    "AM PM AN AS AT BE BY DO GO HE IF IN IS IT ME MY NO OF OK ON OR SO TO UP US WE "
    "AND ARE BUT CAN FOR GET HAS HER HIM HIS HOW ITS NOT NOW OFF ONE OUR OUT SEE "
    "SHE THE TOO TWO WAS WAY WHO WHY YES YOU ALL ANY".split()
)


def phone_words(text: str, options: NormalizeOptions) -> str:
    """ "+44 20 7946 0958" -> "plus four four, two oh, seven nine four six, oh nine five eight"."""
    text = text.replace("(0)", " ")
    groups = [g for g in _GROUP_SPLIT.split(text) if g]
    spoken: list[str] = []
    for group in groups:
        plus = group.startswith("+")
        words = digits(group, options.say_zero_as)
        if words:
            spoken.append(("plus " if plus else "") + words)
    # Commas give the pauses between groups that make a number easy to write down.
    return ", ".join(spoken)


def _phone(m: re.Match[str], options: NormalizeOptions) -> str:
    count = sum(c.isdigit() for c in m.group(0))
    if not 7 <= count <= 15:
        return m.group(0)
    return phone_words(m.group(0), options)


def _extension(m: re.Match[str], options: NormalizeOptions) -> str:
    word = m["w"] if m["w"].lower() == "extension" else "extension"
    return f"{word} {digits(m['n'], options.say_zero_as)}"


def _registration(m: re.Match[str], options: NormalizeOptions) -> str:
    return f"{spell(m['a'], options)} {spell(m['b'], options)}"


def _flight(m: re.Match[str], options: NormalizeOptions) -> str:
    if m["air"] in _NOT_AIRLINES:
        return m.group(0)
    words = f"{spell(m['air'], options)} {pairs(m['n'], options.say_zero_as)}"
    if m["suf"]:
        words += " " + spell(m["suf"], options)
    return words


def _flight_word(m: re.Match[str], options: NormalizeOptions) -> str:
    return f"{m['w']} {pairs(m['n'], options.say_zero_as)}"


_RUNS = re.compile(r"[0-9]+|[A-Za-z]+")


def code_words(text: str, options: NormalizeOptions) -> str:
    """Letters and digits: "3b" -> "three B", "A380" -> "A three eighty", "M25" -> "M twenty five".

    Letter runs are spelled (a real word of four letters or more is kept), digit runs
    of one or two are numbers, of three or four pairs, longer ones digits."""
    out: list[str] = []
    for run in _RUNS.findall(text):
        if run[0].isdigit():
            if len(run) <= 2 and run[0] != "0":
                out.append(cardinal(int(run)))
            elif len(run) <= 4:
                out.append(pairs(run, options.say_zero_as))
            else:
                out.append(digits(run, options.say_zero_as))
        elif len(run) >= 4 and not run.isupper():
            out.append(run)  # a real word glued to a number: "Terminal5"
        else:
            out.append(spell(run, options))
    return " ".join(out)


_B = r"(?<![0-9A-Za-z+])"
_E = r"(?![0-9A-Za-z])"

PHONE_RULES = (
    Rule(
        "phone_international",
        re.compile(r"(?<![0-9A-Za-z+])\+[0-9]{1,4}(?:[ .-]?(?:\(0\)\s?)?[0-9]{1,6}){0,6}" + _E),
        _phone,
    ),
    Rule(
        "phone_national",
        re.compile(r"(?<![0-9A-Za-z+(])(?:\(0[0-9]{2,5}\)|0[0-9]{2,5})(?:[ -][0-9]{2,5}){1,4}" + _E),
        _phone,
    ),
    Rule(
        "phone_us",
        re.compile(_B + r"(?:(?:\([0-9]{3}\)\s?|[0-9]{3}-)[0-9]{3}|[2-9][0-9]{2})-[0-9]{4}" + _E),
        _phone,
    ),
    Rule(
        "extension",
        re.compile(r"(?<![A-Za-z0-9])(?P<w>[Ee]xtension|EXTENSION|[Ee]xtn?\.?|EXT\.?|x)\s?(?P<n>[0-9]{2,6})" + _E),
        _extension,
    ),
)
"""Phone numbers and extensions: run before anything else reads their digits."""

CODE_RULES = (
    # "Call 999", "dial 101": a number to key in is read digit by digit.
    Rule(
        "number_to_dial",
        re.compile(r"(?<=\b[Cc]all |\b[Dd]ial |\b[Rr]ing |\b[Tt]ext )(?P<n>[0-9]{3,15})" + _E),
        lambda m, o: digits(m["n"], o.say_zero_as),
    ),
    Rule(
        "registration",
        re.compile(_B + r"(?P<a>[A-Z]{2}[0-9]{2})\s?(?P<b>[A-Z]{3})" + _E),
        _registration,
    ),
    Rule(
        "flight",
        re.compile(_B + r"(?P<air>[A-Z]{2,3})\s?(?P<n>[0-9]{1,4})(?P<suf>[A-Z])?" + _E),
        _flight,
    ),
    Rule(
        "flight_word",
        re.compile(r"(?<![A-Za-z])(?P<w>[Ff]light|FLIGHT)\s+(?P<n>[0-9]{3,4})" + _E),
        _flight_word,
    ),
    Rule(
        "code",
        re.compile(r"(?<![0-9A-Za-z.,'])(?=[A-Za-z]*[0-9])(?=[0-9]*[A-Za-z])[0-9A-Za-z]+" + _E),
        lambda m, o: code_words(m.group(0), o),
    ),
)
"""Flights, registrations, platforms: after prices, units and dates have taken their digits."""
