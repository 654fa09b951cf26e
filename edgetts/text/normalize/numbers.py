"""Numbers as words: cardinals, ordinals, digit strings, pairs and years.

Only ASCII digits are read here; callers match ``[0-9]`` (never ``\\d``, which
also matches Arabic-Indic and other digits that ``int()`` would accept).
"""

from __future__ import annotations

_ONES = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
)
_TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_SCALES = ((10**12, "trillion"), (10**9, "billion"), (10**6, "million"), (1000, "thousand"))

MAX_CARDINAL = 10**15 - 1
"""Larger numbers are read digit by digit: nobody says "four quadrillion ..." on a platform."""

_ORDINAL_LAST = {
    "one": "first",
    "two": "second",
    "three": "third",
    "five": "fifth",
    "eight": "eighth",
    "nine": "ninth",
    "twelve": "twelfth",
}
_PLURAL_LAST = {"six": "sixes"}


def _below_100(n: int) -> str:
    if n < 20:
        return _ONES[n]
    tens, ones = divmod(n, 10)
    return _TENS[tens] if ones == 0 else f"{_TENS[tens]} {_ONES[ones]}"


def _below_1000(n: int, hundred_and: bool) -> str:
    hundreds, rest = divmod(n, 100)
    if hundreds == 0:
        return _below_100(rest)
    head = f"{_ONES[hundreds]} hundred"
    if rest == 0:
        return head
    return f"{head} {'and ' if hundred_and else ''}{_below_100(rest)}"


def digits(text: str, zero: str = "oh") -> str:
    """Each ASCII digit of ``text`` as a word ("3105" -> "three one oh five"); others ignored."""
    return " ".join(zero if c == "0" else _ONES[ord(c) - 48] for c in text if "0" <= c <= "9")


def cardinal(n: int, hundred_and: bool = False) -> str:
    """``n`` in words ("one thousand two hundred five"); digits beyond :data:`MAX_CARDINAL`."""
    if n < 0:
        return "minus " + cardinal(-n, hundred_and)
    if n > MAX_CARDINAL:
        return digits(str(n), "zero")
    if n < 1000:
        return _below_1000(n, hundred_and)
    parts: list[str] = []
    rest = n
    for scale, name in _SCALES:
        count, rest = divmod(rest, scale)
        if count:
            parts.append(f"{_below_1000(count, hundred_and)} {name}")
    if rest:
        # British "one thousand and five": the "and" goes before a last group below 100.
        joiner = "and " if hundred_and and rest < 100 else ""
        parts.append(joiner + _below_1000(rest, hundred_and))
    return " ".join(parts)


_MAX_DIGITS = len(str(MAX_CARDINAL))


def cardinal_str(text: str, hundred_and: bool = False) -> str:
    """:func:`cardinal` of a digit string, without ``int()`` on absurdly long ones
    (Python refuses to convert more than 4300 digits, and nobody would listen to them)."""
    text = text.lstrip("0") or "0"
    if len(text) > _MAX_DIGITS:
        return digits(text, "zero")
    return cardinal(int(text), hundred_and)


def ordinal_str(text: str, hundred_and: bool = False) -> str:
    """:func:`ordinal` of a digit string; digit by digit when it is too long to be a number."""
    text = text.lstrip("0") or "0"
    if len(text) > _MAX_DIGITS:
        return digits(text, "zero")
    return ordinal(int(text), hundred_and)


def ordinal_word(word: str) -> str:
    """The ordinal of one cardinal word ("twenty" -> "twentieth", "three" -> "third")."""
    if word in _ORDINAL_LAST:
        return _ORDINAL_LAST[word]
    if word.endswith("y"):
        return word[:-1] + "ieth"
    return word + "th"


def ordinal(n: int, hundred_and: bool = False) -> str:
    """``n`` as an ordinal ("twenty second"); digits without suffix beyond :data:`MAX_CARDINAL`."""
    if n < 0 or n > MAX_CARDINAL:
        return cardinal(n, hundred_and)
    words = cardinal(n, hundred_and).split(" ")
    words[-1] = ordinal_word(words[-1])
    return " ".join(words)


def plural(words: str) -> str:
    """Plural of the last word of a number ("nineteen eighty" -> "nineteen eighties")."""
    head, _, last = words.rpartition(" ")
    if last in _PLURAL_LAST:
        last = _PLURAL_LAST[last]
    elif last.endswith("y"):
        last = last[:-1] + "ies"
    else:
        last += "s"
    return f"{head} {last}" if head else last


def _pair(two: str, zero: str) -> str:
    """Two digits of a pair reading: "05" -> "oh five", "90" -> "ninety"."""
    if two[0] == "0":
        return f"{zero} {_ONES[int(two[1])]}" if two[1] != "0" else f"{zero} {zero}"
    return _below_100(int(two))


def pairs(text: str, zero: str = "oh") -> str:
    """How flight and route numbers are said: "2490" -> "twenty four ninety", "380" -> "three
    eighty".

    One or two digits are a cardinal, three are a digit and a pair, four are
    two pairs ("2400" -> "twenty four hundred"); longer strings go digit by digit.
    """
    n = len(text)
    if n == 0 or not text.isascii() or not text.isdigit():
        return digits(text, zero)
    if text[0] == "0" and n > 1:
        return digits(text, zero)
    if n <= 2:
        return _below_100(int(text))
    if n == 3:
        tail = "hundred" if text[1:] == "00" else _pair(text[1:], zero)
        return f"{_ONES[int(text[0])]} {tail}"
    if n == 4:
        if text[1:] == "000":
            return cardinal(int(text))
        tail = "hundred" if text[2:] == "00" else _pair(text[2:], zero)
        return f"{_below_100(int(text[:2]))} {tail}"
    return digits(text, zero)


def is_year(n: int) -> bool:
    """Whether a bare four-digit number is read as a year (see docs/normalization.md)."""
    return 1100 <= n <= 2099


def year(n: int, hundred_and: bool = False) -> str:
    """``n`` as a year: 1984 -> nineteen eighty four, 1905 -> nineteen oh five,
    2005 -> two thousand five, 2024 -> twenty twenty four; other numbers as cardinals."""
    if not 1000 <= n <= 9999 or n % 1000 == 0:
        return cardinal(n, hundred_and)
    if 2000 < n < 2010:
        return f"two thousand {_ONES[n - 2000]}"
    return pairs(str(n))


def fraction_digits(text: str) -> str:
    """Digits after a decimal point: "50" -> "five zero" (always "zero": "point zero five")."""
    return digits(text, "zero")


NUMBER_PATTERN = r"(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?|\.[0-9]+"
"""A number as written: "5", "1,250", "12.50", ".5" (no sign: callers decide what a dash is)."""


def read_number(text: str, hundred_and: bool = False, zero: str = "oh", years: bool = False) -> str:
    """Words for a string matched by :data:`NUMBER_PATTERN`, optionally signed with "-" or "+".

    Leading zeros ("007") are read as digits, decimals as "point" and digits,
    and with ``years`` a bare four-digit number in :func:`is_year`'s range as a year.
    """
    sign = ""
    if text[:1] in "-+":
        sign = "minus " if text[0] == "-" else "plus "
        text = text[1:]
    whole, _, frac = text.partition(".")
    if frac:
        head = read_number(whole, hundred_and, zero) if whole else ""
        spoken = f"{head} point {fraction_digits(frac)}".lstrip()
        return sign + spoken
    if "," in whole:
        return sign + cardinal_str(whole.replace(",", ""), hundred_and)
    if len(whole) > 1 and whole[0] == "0":
        return sign + digits(whole, zero)
    if len(whole) > _MAX_DIGITS:
        return sign + digits(whole, "zero")
    n = int(whole)
    if years and not sign and len(whole) == 4 and is_year(n):
        return year(n, hundred_and)
    return sign + cardinal(n, hundred_and)
