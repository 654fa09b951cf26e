"""A small, safe SSML subset for announcements.

Supported: <speak>, <break time|strength>, <say-as interpret-as [format]>,
<sub alias>, <prosody rate volume> (nestable), <phoneme ph [alphabet="ipa"]>,
<s>, <p>, <lang xml:lang> (and xml:lang on <speak>, <s>, <p>: issue 16).
Anything else, and any DOCTYPE or entity declaration, is rejected
with an :class:`SSMLError` naming the tag and attribute: malformed SSML is
never read aloud as tags.

This module parses and validates the document; what a <say-as> says is
:mod:`edgetts.text.say_as`.  :func:`parse` returns flat items (text with its
prosody, phonemes, pauses, sentence ends); :mod:`edgetts.text.prepare` turns
them into segments.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from edgetts.errors import EdgeTTSError
from edgetts.text.language import ENGLISH, espeak_voice_for, is_english, language_of
from edgetts.text.normalize import NormalizeOptions
from edgetts.text.say_as import SayAsError, say_as, say_as_foreign

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

MAX_BREAK_S = 10.0
"""Longer breaks are cut to this: a typo must not silence the announcer for minutes."""
PARAGRAPH_PAUSE_S = 0.5
"""Silence between two <p> paragraphs."""
MIN_RATE, MAX_RATE = 0.25, 4.0
MAX_VOLUME = 10.0
"""Linear gain (+20 dB); the engine clips the result to [-1, 1] anyway."""
MAX_DEPTH = 32

_SSML_NS = "{http://www.w3.org/2001/10/synthesis}"
_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
_DTD = re.compile(r"<!\s*(?:DOCTYPE|ENTITY|ELEMENT|ATTLIST)", re.IGNORECASE)

_ATTRIBUTES: dict[str, frozenset[str]] = {
    "speak": frozenset({"version", "xml:lang"}),
    "break": frozenset({"time", "strength"}),
    "say-as": frozenset({"interpret-as", "format"}),
    "sub": frozenset({"alias"}),
    "prosody": frozenset({"rate", "volume"}),
    "phoneme": frozenset({"ph", "alphabet"}),
    "s": frozenset({"xml:lang"}),
    "p": frozenset({"xml:lang"}),
    "lang": frozenset({"xml:lang"}),
}
_REQUIRED = {"say-as": "interpret-as", "sub": "alias", "phoneme": "ph", "lang": "xml:lang"}
_LANG_TAG = re.compile(r"[A-Za-z]{2,8}(?:[-_][A-Za-z0-9]{1,8})*")
_STRENGTHS = {
    "none": 0.0,
    "x-weak": 0.1,
    "weak": 0.25,
    "medium": 0.5,
    "strong": 0.75,
    "x-strong": 1.25,
}
_RATES = {"x-slow": 0.6, "slow": 0.8, "medium": 1.0, "default": 1.0, "fast": 1.25, "x-fast": 1.5}
_VOLUMES_DB = {
    "silent": -math.inf,
    "x-soft": -12.0,
    "soft": -6.0,
    "medium": 0.0,
    "default": 0.0,
    "loud": 6.0,
    "x-loud": 12.0,
}
_TIME = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?|\.[0-9]+)\s*(ms|s)\s*")
_RATE = re.compile(r"\s*([+-])?([0-9]+(?:\.[0-9]+)?)\s*(%)?\s*")
_DB = re.compile(r"\s*([+-]?[0-9]+(?:\.[0-9]+)?)\s*dB\s*")


class SSMLError(EdgeTTSError):
    """SSML that is not well-formed or outside the supported subset; the message says where."""


@dataclass(frozen=True)
class Prosody:
    rate: float = 1.0
    """Speed multiplier: 1.2 is 20 % faster."""
    volume: float = 1.0
    """Linear gain."""
    lang: str | None = None
    """The espeak-ng voice of an ``xml:lang`` in another language than the document's; None: its own."""


@dataclass(frozen=True)
class Text:
    """Document text; ``spoken`` when say-as already made them words (not normalised)."""

    text: str
    prosody: Prosody
    spoken: bool = False


@dataclass(frozen=True)
class PhonemeText:
    ipa: str
    prosody: Prosody


@dataclass(frozen=True)
class Pause:
    seconds: float


@dataclass(frozen=True)
class SentenceEnd:
    """</s> or </p>: the text so far ends a sentence."""


Item = Text | PhonemeText | Pause | SentenceEnd


def looks_like_ssml(text: str) -> bool:
    """Auto-detection: the stripped text starts with <speak, an XML declaration or a DOCTYPE
    (the last two so that such a document is parsed, or rejected, never read out as tags)."""
    head = text.lstrip()[:9].lower()
    return head.startswith(("<speak", "<?xml", "<!doctype"))


def parse(text: str, options: NormalizeOptions | None = None, language: str = ENGLISH) -> list[Item]:
    """Parse an SSML document into items; raise :class:`SSMLError` on anything unsupported.

    ``language``: the voice's (edgetts.text.language); an ``xml:lang`` of another language
    marks its text with that espeak-ng voice (``Prosody.lang``), one of the voice's own
    language (any region) reads as the voice reads."""
    # Imported here: the XML parser costs ~1 MB of RSS, and most announcements are plain text.
    import xml.etree.ElementTree as ET

    if _DTD.search(text):
        raise SSMLError("SSML must not contain a DOCTYPE or entity declarations")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as err:
        raise SSMLError(f"SSML is not well-formed XML: {err}") from None
    except (ValueError, RecursionError) as err:  # lone surrogates, absurd nesting
        raise SSMLError(f"SSML cannot be parsed: {err}") from None
    if _tag(root, "") != "speak":
        raise SSMLError(f"SSML root element must be <speak>, not <{_tag(root, '')}>")
    walker = _Walker(options or NormalizeOptions(), language)
    walker.element(root, Prosody(), "speak", 0)
    return walker.items


def _tag(element: ET.Element, path: str) -> str:
    tag = element.tag if isinstance(element.tag, str) else "?"
    if tag.startswith(_SSML_NS):
        return tag[len(_SSML_NS) :]
    if tag.startswith("{"):
        raise SSMLError(f"SSML <{tag}> at {path or 'root'}: element from an unknown namespace")
    return tag


def _attributes(element: ET.Element, tag: str, path: str) -> dict[str, str]:
    attrs: dict[str, str] = {}
    for name, value in element.attrib.items():
        key = "xml:lang" if name == _XML_LANG else name
        if key not in _ATTRIBUTES[tag]:
            allowed = ", ".join(sorted(_ATTRIBUTES[tag])) or "none"
            raise SSMLError(f"SSML <{tag}> at {path}: unsupported attribute {key!r} (supported: {allowed})")
        attrs[key] = value
    required = _REQUIRED.get(tag)
    if required and required not in attrs:
        raise SSMLError(f"SSML <{tag}> at {path}: attribute {required!r} is required")
    return attrs


class _Walker:
    """Depth-first walk of the tree collecting items; one instance per document."""

    def __init__(self, options: NormalizeOptions, language: str = ENGLISH) -> None:
        self.options = options
        self.language = language_of(language)
        self.items: list[Item] = []

    def text(self, text: str | None, prosody: Prosody) -> None:
        if text and text.strip():
            self.items.append(Text(text, prosody))

    def element(self, element: ET.Element, prosody: Prosody, path: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise SSMLError(f"SSML at {path}: elements nested more than {MAX_DEPTH} deep")
        tag = _tag(element, path)
        if tag not in _ATTRIBUTES:
            raise SSMLError(
                f"SSML <{tag}> at {path}: unsupported element (supported: {', '.join(sorted(_ATTRIBUTES))})"
            )
        if tag == "speak" and depth > 0:
            raise SSMLError(f"SSML <speak> at {path}: <speak> may only be the root element")
        attrs = _attributes(element, tag, path)
        handler = getattr(self, "on_" + tag.replace("-", "_"), None)
        if handler is not None:
            handler(element, attrs, prosody, path)
            return
        if tag == "prosody":
            prosody = _prosody(prosody, attrs, path)
        if "xml:lang" in attrs:
            prosody = self.lang(prosody, attrs["xml:lang"], tag, path)
        self.container(element, tag, prosody, path, depth)

    def lang(self, prosody: Prosody, tag_value: str, tag: str, path: str) -> Prosody:
        """``prosody`` in the language ``xml:lang`` names (None for the voice's own language)."""
        if not _LANG_TAG.fullmatch(tag_value.strip()):
            raise SSMLError(
                f"SSML <{tag}> at {path}: xml:lang={tag_value!r} is not a language tag like 'de' or 'en-GB'"
            )
        voice = espeak_voice_for(tag_value)
        return replace(prosody, lang=None if language_of(voice) == self.language else voice)

    def container(self, element: ET.Element, tag: str, prosody: Prosody, path: str, depth: int) -> None:
        """<speak>, <s>, <p>, <prosody>: text and child elements in order."""
        if tag == "p" and any(isinstance(i, (Text, PhonemeText)) for i in self.items):
            self.items.append(Pause(PARAGRAPH_PAUSE_S))
        self.text(element.text, prosody)
        for child in element:
            self.element(child, prosody, f"{path}/{_tag(child, path)}", depth + 1)
            self.text(child.tail, prosody)
        if tag in ("s", "p"):
            self.items.append(SentenceEnd())

    def on_break(self, element: ET.Element, attrs: dict[str, str], prosody: Prosody, path: str) -> None:
        _leaf(element, "break", path, allow_text=False)
        seconds = _break_seconds(attrs, path)
        if seconds > 0:
            self.items.append(Pause(seconds))

    def on_sub(self, element: ET.Element, attrs: dict[str, str], prosody: Prosody, path: str) -> None:
        _leaf(element, "sub", path)
        self.text(attrs["alias"], prosody)

    def on_phoneme(self, element: ET.Element, attrs: dict[str, str], prosody: Prosody, path: str) -> None:
        _leaf(element, "phoneme", path)
        alphabet = attrs.get("alphabet", "ipa")
        if alphabet != "ipa":
            raise SSMLError(f"SSML <phoneme> at {path}: alphabet={alphabet!r} is not supported (only 'ipa')")
        ipa = " ".join(attrs["ph"].split())
        if not ipa:
            raise SSMLError(f"SSML <phoneme> at {path}: attribute 'ph' is empty")
        self.items.append(PhonemeText(ipa, prosody))

    def on_say_as(self, element: ET.Element, attrs: dict[str, str], prosody: Prosody, path: str) -> None:
        _leaf(element, "say-as", path)
        try:
            if is_english(prosody.lang or self.language):
                words = say_as(element.text or "", attrs["interpret-as"], attrs.get("format"), self.options)
            else:
                words = say_as_foreign(element.text or "", attrs["interpret-as"])
        except SayAsError as err:
            raise SSMLError(f"SSML <say-as> at {path}: {err}") from None
        self.items.append(Text(words, prosody, spoken=True))


def _leaf(element: ET.Element, tag: str, path: str, allow_text: bool = True) -> None:
    if len(element):
        raise SSMLError(f"SSML <{tag}> at {path}: must not contain other elements")
    if not allow_text and element.text and element.text.strip():
        raise SSMLError(f"SSML <{tag}> at {path}: must be empty")


def _break_seconds(attrs: dict[str, str], path: str) -> float:
    if "time" in attrs:
        m = _TIME.fullmatch(attrs["time"])
        if m is None:
            raise SSMLError(f"SSML <break> at {path}: time={attrs['time']!r} is not a duration like '500ms' or '1.5s'")
        seconds = float(m[1]) / (1000.0 if m[2] == "ms" else 1.0)
        return min(seconds, MAX_BREAK_S)
    strength = attrs.get("strength", "medium")
    if strength not in _STRENGTHS:
        raise SSMLError(f"SSML <break> at {path}: strength={strength!r} is not one of {', '.join(_STRENGTHS)}")
    return _STRENGTHS[strength]


def _rate(value: str, path: str) -> float:
    if value in _RATES:
        return _RATES[value]
    m = _RATE.fullmatch(value)
    if m is not None and (m[3] or not m[1]):
        number = float(m[2])
        if not m[3]:
            factor = number  # a plain multiplier
        elif m[1]:
            factor = 1.0 + (number if m[1] == "+" else -number) / 100.0  # relative: +10%
        else:
            factor = number / 100.0  # of the normal rate: 80%
        if MIN_RATE <= factor <= MAX_RATE:
            return factor
    raise SSMLError(
        f"SSML <prosody> at {path}: rate={value!r} is not x-slow, slow, medium, fast, x-fast, "
        f"a percentage (80%, +10%) or a multiplier (1.2) between {MIN_RATE} and {MAX_RATE}"
    )


def _volume(value: str, path: str) -> float:
    db = _VOLUMES_DB.get(value)
    if db is None:
        m = _DB.fullmatch(value)
        if m is not None and -60.0 <= float(m[1]) <= 20.0:
            db = float(m[1])
    if db is None:
        raise SSMLError(
            f"SSML <prosody> at {path}: volume={value!r} is not silent, x-soft, soft, medium, "
            f"loud, x-loud or a gain in dB between -60dB and +20dB (e.g. +6dB)"
        )
    return 0.0 if db == -math.inf else 10.0 ** (db / 20.0)


def _prosody(outer: Prosody, attrs: dict[str, str], path: str) -> Prosody:
    """Nested prosody multiplies: slow inside slow is slower still."""
    rate = outer.rate * _rate(attrs["rate"].strip(), path) if "rate" in attrs else outer.rate
    volume = outer.volume * _volume(attrs["volume"].strip(), path) if "volume" in attrs else outer.volume
    return Prosody(round(min(max(rate, MIN_RATE), MAX_RATE), 6), round(min(volume, MAX_VOLUME), 6))
