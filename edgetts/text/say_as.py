"""<say-as>: what the content of one element says, in words (the interpretation side of SSML).

The reader of each ``interpret-as`` uses the normaliser's own rules
(:mod:`edgetts.text.normalize`), so "9:42" reads the same inside <say-as
interpret-as="time"> as in plain text.  Knows nothing of XML: the SSML walker
(:mod:`edgetts.text.ssml`) hands it the element's text and says where it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from edgetts.text.normalize import NormalizeOptions, codes, dates, numbers, times
from edgetts.text.normalize.rules import spell

DATE_FORMATS = ("dmy", "mdy", "ymd", "dm", "md")
"""What ``format`` may say with interpret-as="date"."""

_SIGNED_NUMBER = re.compile(r"\s*[-+]?(?:" + numbers.NUMBER_PATTERN + r")\s*")
_ORDINAL = re.compile(r"\s*([0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:st|nd|rd|th)?\s*", re.IGNORECASE)
_CLOCK = re.compile(
    r"\s*(?P<h>[0-9]{1,2})(?:[:.h](?P<m>[0-9]{2}))?(?::(?P<s>[0-9]{2}))?"
    r"\s*(?:(?P<ap>[AaPp])\.?\s?[Mm]\.?)?\s*"
)
_DATE_PARTS = re.compile(r"[0-9]+")


class SayAsError(ValueError):
    """The content or attributes do not fit; the message is the part after "SSML <say-as> at PATH: "."""


def say_as(text: str, interpret_as: str, fmt: str | None, options: NormalizeOptions) -> str:
    """The words for <say-as>; :class:`SayAsError` when the content does not fit ``interpret_as``."""
    reader = _SAY_AS.get(interpret_as)
    if reader is None:
        raise SayAsError(f"interpret-as={interpret_as!r} is not one of {', '.join(sorted(_SAY_AS))}")
    if fmt is not None and interpret_as != "date":
        raise SayAsError("format is only supported with interpret-as='date'")
    if fmt is not None and fmt not in DATE_FORMATS:
        raise SayAsError(f"format={fmt!r} is not one of {', '.join(DATE_FORMATS)}")
    words = reader(text, fmt, options)
    if not words:
        raise SayAsError(f"{text.strip()!r} cannot be read as {interpret_as}")
    return words


def say_as_foreign(text: str, interpret_as: str) -> str:
    """<say-as> in another language than English: espeak-ng reads the content in that language.

    Letters and digits to be spelled are written one by one (espeak-ng names each in the voice's
    language); every other kind is left to espeak-ng's own reading of numbers, dates and times.
    """
    if interpret_as not in _SAY_AS:
        raise SayAsError(f"interpret-as={interpret_as!r} is not one of {', '.join(sorted(_SAY_AS))}")
    if interpret_as in ("characters", "spell-out", "digits", "telephone"):
        words = " ".join(ch for ch in text if ch.isalnum())
    else:
        words = " ".join(text.split())
    if not words:
        raise SayAsError(f"{text.strip()!r} cannot be read as {interpret_as}")
    return words


def _characters(text: str, fmt: str | None, options: NormalizeOptions) -> str:
    out = []
    for ch in text:
        if ch.isascii() and ch.isalnum():
            out.append(spell(ch, options))
        elif ch.isalpha():
            out.append(ch)
    return " ".join(out)


def _digits(text: str, fmt: str | None, options: NormalizeOptions) -> str:
    if not any("0" <= c <= "9" for c in text):
        return ""
    return numbers.digits(text, options.say_zero_as)


def _cardinal(text: str, fmt: str | None, options: NormalizeOptions) -> str:
    if not _SIGNED_NUMBER.fullmatch(text):
        return ""
    return numbers.read_number(text.strip(), options.hundred_and, options.say_zero_as)


def _ordinal(text: str, fmt: str | None, options: NormalizeOptions) -> str:
    m = _ORDINAL.fullmatch(text)
    return numbers.ordinal_str(m[1].replace(",", ""), options.hundred_and) if m else ""


def _time(text: str, fmt: str | None, options: NormalizeOptions) -> str:
    m = _CLOCK.fullmatch(text)
    if m is None:
        return ""
    hour, minute = int(m["h"]), int(m["m"] or 0)
    if m["ap"]:
        if not 1 <= hour <= 12 or minute > 59:
            return ""
        return times.clock_12h(hour, minute, m["ap"].lower(), options)
    if m["m"] is None or hour > 23 or minute > 59:
        return ""
    words = times.clock_24h(hour, minute, m["h"].startswith("0"), options)
    if m["s"] and int(m["s"]) < 60:
        words += f" and {numbers.cardinal(int(m['s']))} seconds"
    return words


def _date(text: str, fmt: str | None, options: NormalizeOptions) -> str:
    fmt = fmt or options.date_order
    parts = _DATE_PARTS.findall(text)
    if len(parts) != len(fmt) or any(len(p) > 4 for p in parts):
        return ""
    fields = dict(zip(fmt, parts))
    day, month = int(fields["d"]), int(fields["m"])
    if not dates.valid_date(day, month):
        return ""
    year = dates.full_year(fields["y"]) if "y" in fields else None
    return dates.date_words(day, month, year, options.date_order)


def _telephone(text: str, fmt: str | None, options: NormalizeOptions) -> str:
    if not any("0" <= c <= "9" for c in text):
        return ""
    return codes.phone_words(text, options)


_Reader = Callable[[str, str | None, NormalizeOptions], str]

_SAY_AS: dict[str, _Reader] = {
    "characters": _characters,
    "spell-out": _characters,
    "digits": _digits,
    "cardinal": _cardinal,
    "number": _cardinal,
    "ordinal": _ordinal,
    "time": _time,
    "date": _date,
    "telephone": _telephone,
}
