"""First and last passes: make arbitrary Unicode safe to read, then tidy words and punctuation."""

from __future__ import annotations

import re
import unicodedata

from edgetts.text.normalize.options import NormalizeOptions
from edgetts.text.normalize.rules import Rule, sentence_dot, spell

# Dropped without a space: joiners, soft hyphens and bidi marks sit inside words.
_DROP_CATEGORIES = frozenset({"Cf", "Cs"})
_KEEP_PUNCTUATION = frozenset(".,?!:;'-")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Dashes, quotes and the fraction slash folded to what the rules look for (en dash stays: ranges).
_FOLD = str.maketrans(
    {
        "‐": "-",
        "‑": "-",
        "‒": "-",
        "—": " — ",
        "―": " — ",
        "−": "-",
        "’": "'",
        "‘": "'",
        "ʼ": "'",
        "`": "'",
        "´": "'",
        "⁄": "/",
    }
)
_SPACES = re.compile(r"\s+")
_PUNCT_RUN = re.compile(r"\s*([.,?!:;](?:\s*[.,?!:;])*)")
_PUNCT_STRENGTH = "?!.;:,"
_LEADING_PUNCT = re.compile(r"^[\s.,?!:;]+")


# "2½ hrs": NFKC would make it "21/2"; a whole number and a vulgar fraction are said "two and a half".
_MIXED_FRACTION = re.compile(r"(?<=[0-9])\s?([½¼¾])")
_FRACTION_WORDS = {"½": " and a half", "¼": " and a quarter", "¾": " and three quarters"}


def _mixed_fraction(m: re.Match[str]) -> str:
    return _FRACTION_WORDS[m.group(1)]


def sanitize(text: str) -> str:
    """Arbitrary Unicode to text that can be encoded and read: no surrogates, no controls.

    Lone surrogates (possible in a Python str, fatal to UTF-8 encoding) are dropped,
    control characters become spaces; compatibility forms are folded (NFKC: "½", "℃",
    full-width digits) so the rules see ASCII digits and symbols.
    """
    if not text.isascii():
        text = "".join(" " if unicodedata.category(c) == "Cs" else c for c in text)
        text = _MIXED_FRACTION.sub(_mixed_fraction, text)
        text = unicodedata.normalize("NFKC", text).translate(_FOLD)
    return _CONTROL.sub(" ", text)


def _keep(ch: str, previous: str) -> str:
    """What a character that no rule turned into words becomes: itself, a space or nothing."""
    if ch.isalnum() or ch in _KEEP_PUNCTUATION or ch == " ":
        return ch
    category = unicodedata.category(ch)
    if category[0] == "M":
        # A combining mark belongs to the letter before it; after a space it is debris.
        return ch if previous not in (" ", "") else ""
    if category in _DROP_CATEGORIES:
        return ""
    return " "  # symbols (emoji), other punctuation, separators, unassigned


def keep_speakable(text: str) -> str:
    """Replace every character that cannot be spoken (emoji, stray symbols) by a space."""
    if text.isascii():
        return _ASCII_UNSPEAKABLE.sub(" ", text)
    out: list[str] = []
    previous = ""
    for ch in text:
        kept = _keep(ch, previous)
        if kept:
            out.append(kept)
            previous = kept[-1]
    return "".join(out)


_ASCII_UNSPEAKABLE = re.compile(r"[^A-Za-z0-9 .,?!:;'\-]")


def _strongest(m: re.Match[str]) -> str:
    marks = m.group(1)
    for mark in _PUNCT_STRENGTH:
        if mark in marks:
            return mark + " "
    return ", "


def tidy(text: str) -> str:
    """One space between words, punctuation attached to the word before it, no runs of marks."""
    text = _PUNCT_RUN.sub(_strongest, _SPACES.sub(" ", text))  # collapse first: keeps \s* short
    text = _LEADING_PUNCT.sub("", text)
    # A comma or colon at the very end (left by a closing bracket) is no boundary.
    return _SPACES.sub(" ", text).strip().rstrip(",;:").rstrip()


def _hyphen(m: re.Match[str], options: NormalizeOptions) -> str:
    # A dash between spaces is a pause; elsewhere (not inside a word) it is noise.
    s, start, end = m.string, m.start(), m.end()
    spaced = (start == 0 or s[start - 1] == " ") and (end == len(s) or s[end] == " ")
    return ", " if spaced and 0 < start and end < len(s) else " "


def _slash(m: re.Match[str], options: NormalizeOptions) -> str:
    s, i = m.string, m.start()
    between_words = i > 0 and s[i - 1].isalpha() and i + 1 < len(s) and s[i + 1].isalpha()
    return " or " if between_words else " slash "


_SYMBOL_WORDS = {
    "&": " and ",
    "@": " at ",
    "+": " plus ",
    "=": " equals ",
    "%": " percent ",
    "#": " hash ",
    "×": " times ",
    "÷": " divided by ",
    "±": " plus or minus ",
    "~": " about ",
    "°": " degrees ",
    "$": " dollars ",
    "£": " pounds ",
    "€": " euros ",
    "¥": " yen ",
    "(": ", ",
    ")": ", ",
    "[": ", ",
    "]": ", ",
    "{": ", ",
    "}": ", ",
    "|": ", ",
    "—": ", ",
    "–": ", ",
    "…": ". ",
}
_SYMBOLS = re.compile("|".join(re.escape(s) for s in _SYMBOL_WORDS))

RULES = (
    Rule(
        "initialism",
        re.compile(r"(?<![A-Za-z.])(?:[A-Z]\.){2,}(?![A-Za-z])"),
        lambda m, o: spell(m.group(0), o) + sentence_dot(m),
    ),
    # "example.com", "v1.2.3": a dot inside a token is said.
    Rule("dot", re.compile(r"(?<=[A-Za-z0-9])\.(?=[a-z0-9])"), lambda m, o: " dot "),
    Rule("and_or", re.compile(r"\b([Aa]nd)/or\b"), lambda m, o: m.group(1) + " or"),
    Rule("slash", re.compile(r"/"), _slash),
    Rule("star", re.compile(r"(?:(?<=\s)|^)\*(?=\s|$)"), lambda m, o: " star "),
    Rule("symbol", _SYMBOLS, lambda m, o: _SYMBOL_WORDS[m.group(0)]),
    Rule("stray_hyphen", re.compile(r"(?<![\w])[-−]+|[-−]+(?![\w])|(?<=[0-9])-|-(?=[0-9])"), _hyphen),
    Rule("stray_apostrophe", re.compile(r"(?<![\w])'|'(?![\w])"), lambda m, o: " "),
)
