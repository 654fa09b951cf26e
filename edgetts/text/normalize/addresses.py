"""Web and e-mail addresses and hashtags, read so a listener can type them (issue 16).

"https://www.nationalrail.co.uk/status" is "W W W dot nationalrail dot co dot U K
slash status": the scheme is not said, "www" and a label without a vowel ("bbc")
are spelled, a two-letter top-level domain is spelled, ``/ - _`` are "slash",
"dash", "underscore", a query's ``? = &`` are "question mark", "equals", "and".
Digits are said one by one ("room101" -> "room one oh one"), one or two of them as
a number ("route66" -> "route sixty six").  An e-mail address reads its local part
the same way, then "at" and the domain.  "#TrainTimes" is "hashtag Train Times";
"#12" stays "number twelve" (a number after # is a number, edgetts.text.normalize.codes).

These rules run first, so no later rule sees an address's dots or digits.
"""

from __future__ import annotations

import re

from edgetts.text.normalize.numbers import cardinal, digits
from edgetts.text.normalize.options import NormalizeOptions
from edgetts.text.normalize.rules import Rule, spell

# Top-level domains a bare address ("example.com/tickets") is recognised by; with a scheme or
# "www." any is.  Lower case only: "Platform.Com" is not an address.
_TLDS = (
    "com",
    "org",
    "net",
    "info",
    "gov",
    "edu",
    "io",
    "app",
    "dev",
    "eu",
    "uk",
    "de",
    "fr",
    "es",
    "it",
    "nl",
    "ie",
    "us",
    "ca",
    "au",
    "nz",
    "ch",
    "at",
    "be",
    "cn",
    "jp",
    "in",
    "travel",
    "shop",
)
_SEPARATORS = {
    ".": "dot",
    "/": "slash",
    "-": "dash",
    "_": "underscore",
    "?": "question mark",
    "=": "equals",
    "&": "and",
    "#": "hash",
    "%": "percent",
    "+": "plus",
    "~": "tilde",
    ":": "colon",
    "@": "at",
}
_TOKEN = re.compile(r"[A-Za-z]+|[0-9]+|[^A-Za-z0-9]")
_NO_VOWEL = re.compile(r"[b-df-hj-np-tv-xz]+", re.IGNORECASE)
_TRAILING = ".,;:!?)]}'\""
_HOST = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_PATH = r"(?:[/?#][^\s<>\"'()\[\]{}]*)?"

_URL = re.compile(
    r"(?<![\w@.])(?:(?P<scheme>(?:https?|ftp)://)(?P<host1>" + _HOST + r"(?:\." + _HOST + r")*)"
    r"|(?P<host2>www\." + _HOST + r"(?:\." + _HOST + r")+)"
    r"|(?P<host3>(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+(?:" + "|".join(_TLDS) + r"))(?![A-Za-z0-9-]))"
    r"(?::(?P<port>[0-9]{1,5}))?(?P<path>" + _PATH + r")"
)
_EMAIL = re.compile(
    r"(?<![\w.+-])(?P<local>[A-Za-z0-9](?:[A-Za-z0-9._%+-]*[A-Za-z0-9])?)@"
    r"(?P<host>" + _HOST + r"(?:\." + _HOST + r")+)(?![\w-])"
)
_HASHTAG = re.compile(r"(?<![\w&#])#(?P<tag>[A-Za-z][A-Za-z0-9_]*)")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])|_+")


def _number(run: str, options: NormalizeOptions) -> str:
    if len(run) <= 2 and not (len(run) == 2 and run.startswith("0")):
        return cardinal(int(run))
    return " ".join(digits(ch, options.say_zero_as) for ch in run)


def _read(part: str, options: NormalizeOptions, *, host: bool = False) -> list[str]:
    """The words of a piece of an address, token by token."""
    words: list[str] = []
    labels = part.split(".") if host else [part]
    for index, label in enumerate(labels):
        if index:
            words.append("dot")
        last = host and index == len(labels) - 1 and len(labels) > 1
        for token in _TOKEN.findall(label):
            if token.isdigit():
                words.append(_number(token, options))
            elif token.isalpha():
                spelled = token.lower() == "www" or _NO_VOWEL.fullmatch(token) or (last and len(token) == 2)
                words.append(spell(token, options) if spelled else token)
            elif token in _SEPARATORS:
                words.append(_SEPARATORS[token])
    return words


def _split_trailing(m: re.Match[str]) -> tuple[str, str]:
    """The path without the sentence's punctuation after it ("see example.com/a." keeps its stop)."""
    path = m["path"] or ""
    kept = path.rstrip(_TRAILING)
    return kept, path[len(kept) :]


def _url(m: re.Match[str], options: NormalizeOptions) -> str:
    path, after = _split_trailing(m)
    host = m["host1"] or m["host2"] or m["host3"]
    words = _read(host, options, host=True)
    if m["port"]:
        words += ["colon", _number(m["port"], options)]
    path = path.rstrip("/")
    if path:
        words += _read(path, options)
    return " " + " ".join(words) + " " + after


def _email(m: re.Match[str], options: NormalizeOptions) -> str:
    words = _read(m["local"], options) + ["at"] + _read(m["host"], options, host=True)
    return " " + " ".join(words) + " "


def _hashtag(m: re.Match[str], options: NormalizeOptions) -> str:
    return " hashtag " + " ".join(p for p in _CAMEL.split(m["tag"]) if p) + " "


RULES = (
    Rule("email", _EMAIL, _email),
    Rule("url", _URL, _url),
    Rule("hashtag", _HASHTAG, _hashtag),
)
