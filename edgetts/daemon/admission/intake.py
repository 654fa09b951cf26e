"""Bytes from strangers: checked before anything converts them (issue 13).

An announce payload comes from whoever can publish on the topic.  Python's
own converters raise on hostile input (a 4,301-digit integer, ``[`` nested
1,000 deep, ``1`` followed by 309 zeros turned into a float, a lone surrogate
encoded as UTF-8), and an exception the intake does not expect crash-loops the
daemon on redelivery.  So the raw bytes are pre-scanned for nesting depth and
number length *before* :mod:`json` sees them, JSON is decoded with hooks that
refuse what the scan cannot see (NaN, duplicate keys, non-finite floats), and
every string that goes back out (logs, events) passes :func:`escape` first.
"""

from __future__ import annotations

import html
import json
import math
import re
from typing import Any

from edgetts.text.ssml import looks_like_ssml


class PayloadError(ValueError):
    """A payload that cannot be accepted; ``str()`` is the reason sent in the `rejected` event."""


MAX_DEPTH = 16
"""Deepest nesting of JSON arrays/objects accepted (an announcement needs 1)."""

MAX_NUMBER_CHARS = 32
"""Longest JSON number token, characters (sign, digits, point, exponent)."""

# A JSON string, escapes included; an unterminated one runs to the end (json then says why).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\Z)', re.S)
_LONG_NUMBER = re.compile(rb"[-0-9][0-9.eE+-]{%d,}" % MAX_NUMBER_CHARS)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")

# Terminal escape sequences: CSI (ESC [ ... final), OSC (ESC ] ... BEL or ESC \), ESC (intermediates) final
# (`ESC c`, `ESC ( B` as `tput sgr0` writes),
# and the 8-bit CSI.  `printf '\e[31mFire\e[0m' | mosquitto_pub -s` should say "Fire".
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[ -/]*[0-~]|\x9b[0-?]*[ -/]*[@-~]")
# HTML/XML-looking tags and comments in text that is not SSML: `<b>Gate 5</b>` says "Gate 5".
_TAG = re.compile(r"<!--.*?-->|</?[A-Za-z][\w:.-]*(?:\s[^<>]*)?/?>|<![A-Za-z][^<>]*>|<\?[^<>]*\?>", re.S)
_WHITESPACE_CONTROLS = frozenset("\t\n\r")


def prescan(payload: bytes) -> None:
    """Raise :class:`PayloadError` when JSON ``payload`` nests too deep or has an overlong number.

    Works on the bytes with strings blanked out, so nothing is converted yet.
    """
    skeleton = _STRING.sub(b'""', payload)
    long_number = _LONG_NUMBER.search(skeleton)
    if long_number is not None:
        raise PayloadError(
            f"number too long ({len(long_number.group())} characters at byte {long_number.start()}; "
            f"at most {MAX_NUMBER_CHARS})"
        )
    depth = 0
    for byte in skeleton.translate(None, _NOT_BRACKETS):
        depth += 1 if byte in b"[{" else -1
        if depth > MAX_DEPTH:
            raise PayloadError(f"JSON nested deeper than {MAX_DEPTH} levels")


def _int(token: str) -> int:
    if len(token) > MAX_NUMBER_CHARS:  # the pre-scan's job; kept so no caller can skip it by accident
        raise PayloadError(f"number too long ({len(token)} characters)")
    return int(token)


def _float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise PayloadError(f"number out of range: {token[:40]}")
    return value


def _constant(token: str) -> Any:
    raise PayloadError(f"{token} is not a JSON number")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise PayloadError(f"duplicate key {escape(key, 40)!r}")
        obj[key] = value
    return obj


def decode_json(text: str) -> Any:
    """``text`` as JSON (after :func:`prescan` of its bytes); raises PayloadError only."""
    try:
        return json.loads(
            text, parse_int=_int, parse_float=_float, parse_constant=_constant, object_pairs_hook=_no_duplicates
        )
    except json.JSONDecodeError as exc:
        raise PayloadError(f"bad JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:  # cannot pass the pre-scan; a second line all the same
        raise PayloadError(f"JSON nested deeper than {MAX_DEPTH} levels") from None


def _check_codepoints(text: str) -> None:
    if "\x00" in text:
        raise PayloadError("payload contains NUL")
    for ch in text:
        if "\ud800" <= ch <= "\udfff":
            raise PayloadError(f"payload contains a lone surrogate (U+{ord(ch):04X})")


def clean_text(text: str) -> str:
    """The words of ``text`` without terminal escapes or (outside SSML) HTML tags.

    Raises PayloadError for what cannot be cleaned: NUL, lone surrogates, other
    control characters (a tab, newline or carriage return is whitespace).
    """
    _check_codepoints(text)
    text = _ANSI.sub("", text)
    if "<" in text and not looks_like_ssml(text):
        stripped = _TAG.sub(" ", text)
        if stripped != text:  # it was markup: `&amp;` means "&"
            text = html.unescape(stripped)
            _check_codepoints(text)
    for pos, ch in enumerate(text):
        if (ch < " " and ch not in _WHITESPACE_CONTROLS) or "\x7f" <= ch <= "\x9f":
            raise PayloadError(f"text contains control character U+{ord(ch):04X} at {pos}")
    return text


def escape(text: str, limit: int = 200) -> str:
    """``text`` safe for one log line and for UTF-8 JSON: non-printables as escapes, at most ``limit`` chars."""
    if len(text) > limit:
        text = text[:limit] + "..."
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


__all__ = ["MAX_DEPTH", "MAX_NUMBER_CHARS", "PayloadError", "clean_text", "decode_json", "escape", "prescan"]
