"""Clock times ("14:05", "2:30pm", "10 am") and compound durations ("1h30")."""

from __future__ import annotations

import re

from edgetts.text.normalize.numbers import cardinal
from edgetts.text.normalize.options import NormalizeOptions
from edgetts.text.normalize.rules import Rule, sentence_dot, spell


def _minutes(m: int) -> str:
    if m < 10:
        return f"oh {cardinal(m)}"
    return cardinal(m)


def am_pm(letter: str, options: NormalizeOptions) -> str:
    """ "a m" / "p m" (lower case: they are words here, not a code); the a per ``letter_a``."""
    return spell(letter + "m", options).lower()


def clock_12h(hour: int, minute: int, letter: str | None, options: NormalizeOptions) -> str:
    """A 12-hour reading: "two thirty p m", "two p m", "ten oh five"."""
    words = cardinal(hour % 12 or 12)
    if minute:
        words += " " + _minutes(minute)
    if letter:
        words += " " + am_pm(letter, options)
    return words


def clock_24h(hour: int, minute: int, leading_zero: bool, options: NormalizeOptions) -> str:
    """A time written without am/pm, read per ``options.time_24h``."""
    if hour == 0 and minute == 0:
        return "midnight"
    style = options.time_24h
    if style == "12h":
        if hour == 12 and minute == 0:
            return "noon"
        # Only a time that can't be a 12-hour one gets a m / p m: "9:42" stays as written.
        letter = "p" if hour >= 13 else "a" if hour == 0 or leading_zero else None
        if letter is None and minute == 0:
            return f"{cardinal(hour)} o'clock"
        return clock_12h(hour, minute, letter, options)
    if hour == 0:
        head = "oh oh" if style == "oh" else "zero"
    elif leading_zero and style == "oh":
        head = "oh " + cardinal(hour)
    else:
        head = cardinal(hour)
    if minute:
        return f"{head} {_minutes(minute)}"
    if hour >= 13 or leading_zero or hour == 0:
        return f"{head} hundred"
    return f"{cardinal(hour)} o'clock"


def _and_seconds(written: str | None) -> str:
    """ " and thirty seconds" for ":30"; nothing for ":00" ("10:15:00" is ten fifteen)."""
    seconds = int(written) if written else 0
    return f" and {cardinal(seconds)} second{'s' if seconds != 1 else ''}" if seconds else ""


def _ampm_time(m: re.Match[str], options: NormalizeOptions) -> str:
    minute = int(m["m"]) if m["m"] else 0
    return clock_12h(int(m["h"]), minute, m["ap"].lower(), options) + _and_seconds(m["s"]) + sentence_dot(m)


def _clock(m: re.Match[str], options: NormalizeOptions) -> str:
    hour, minute = int(m["h"]), int(m["m"])
    return clock_24h(hour, minute, m["h"].startswith("0"), options) + _and_seconds(m["s"])


def _hours_minutes(m: re.Match[str], options: NormalizeOptions) -> str:
    hours, minutes = int(m["h"]), int(m["m"])
    words = f"{cardinal(hours)} hour{'s' if hours != 1 else ''}"
    if minutes:
        words += f" {cardinal(minutes)} minute{'s' if minutes != 1 else ''}"
    return words


# "a.m." may swallow a full stop; "am" never does (the lookahead leaves the "." alone).
_AMPM = r"(?P<ap>[AaPp])(?:\.\s?[Mm]\.?|\s?[Mm])(?![A-Za-z0-9])"

RULES = (
    Rule(
        "time_ampm",
        re.compile(r"(?<![0-9:.,])(?P<h>1[0-2]|0?[1-9])(?:[:.](?P<m>[0-5][0-9])(?::(?P<s>[0-5][0-9]))?)?\s?" + _AMPM),
        _ampm_time,
    ),
    Rule(
        "time_clock",
        re.compile(
            r"(?<![0-9:.,])(?P<h>[01]?[0-9]|2[0-3]):(?P<m>[0-5][0-9])"
            r"(?::(?P<s>[0-5][0-9]))?(?![0-9:])"
        ),
        _clock,
    ),
    # "08.15": a dot time, as British timetables write it; the leading zero rules out a decimal.
    Rule(
        "time_dotted",
        re.compile(r"(?<![0-9:.,])(?P<h>0[0-9])\.(?P<m>[0-5][0-9])(?P<s>)(?![0-9.]|\.[0-9])"),
        _clock,
    ),
    Rule(
        "duration_h_min",
        re.compile(
            r"(?<![0-9A-Za-z.,])(?P<h>[0-9]{1,3})\s?(?:h|hrs?|hours?)\s?(?P<m>[0-5]?[0-9])"
            r"\s?(?:m|mins?|minutes?)?(?![A-Za-z0-9])"
        ),
        _hours_minutes,
    ),
)
