"""The one entry point the engine calls: text or SSML in, segments to speak out.

``prepare()`` applies the site lexicon, then normalisation, to plain text or to
the text nodes of an SSML document, and returns :class:`Speak` (words for
espeak-ng), :class:`Phonemes` (IPA that bypasses espeak-ng) and :class:`Break`
(silence) segments in playing order.

:func:`prepare_text` does it once per announcement (issue 12) and keeps the
result as :class:`Prepared`, which the daemon checks SSML with, keys the
phrase cache with and hands to the voice, so no later stage parses or
normalises the same text again.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace

from edgetts.text import ssml as ssml_mod
from edgetts.text.language import ENGLISH, is_english
from edgetts.text.lexicon import Lexicon, LexiconPiece
from edgetts.text.normalize import NormalizeOptions, sanitize
from edgetts.text.normalize import normalize as normalize_text


@dataclass(frozen=True)
class Speak:
    """Words to phonemize with espeak-ng, already normalised."""

    text: str
    rate: float = 1.0
    """Speed multiplier: 1.2 is 20 % faster."""
    volume: float = 1.0
    """Linear gain."""
    lang: str | None = None
    """The espeak-ng voice an SSML ``xml:lang`` / ``<lang>`` asks for this span; None: the voice's own."""


@dataclass(frozen=True)
class Phonemes:
    """IPA from the lexicon or <phoneme>; bypasses espeak-ng."""

    ipa: str
    rate: float = 1.0
    volume: float = 1.0


@dataclass(frozen=True)
class Break:
    """Silence."""

    seconds: float


Segment = Speak | Phonemes | Break


@dataclass(frozen=True)
class TextOptions:
    """How text is prepared before espeak-ng."""

    normalize: bool = True
    """Run the text normaliser (numbers, times, money, codes ...)."""
    normalize_options: NormalizeOptions | None = None
    lexicon: Lexicon | None = None
    ssml: bool | None = None
    """True: parse as SSML; False: plain text; None: SSML when it starts with ``<speak``."""
    language: str = ENGLISH
    """The language the voice reads (edgetts.text.language.language_of its espeak-ng voice): the
    English normaliser runs only for ``en``; other languages leave numbers and abbreviations to
    espeak-ng.  A Piper voice sets it from its ``.onnx.json``."""


@dataclass(frozen=True)
class Prepared:
    """A text prepared once: what it said, how it was prepared, and what is to be spoken."""

    source: str
    """The text as it came (plain text or SSML)."""
    segments: tuple[Segment, ...]
    """:func:`prepare`'s segments of ``source`` with ``options``; empty when nothing is speakable."""
    options: TextOptions
    """What ``segments`` were prepared with: a voice with other options prepares ``source`` itself."""
    warnings: tuple[str, ...] = ()
    """What the voice could not read as asked (an SSML ``xml:lang`` span its phonemes do not cover),
    one line each; the daemon logs them and puts them in the `queued` event's ``detail``."""

    @property
    def ssml(self) -> bool:
        """Whether ``source`` was read as SSML."""
        return self.options.ssml if self.options.ssml is not None else ssml_mod.looks_like_ssml(self.source)

    @property
    def key(self) -> str:
        """What the phrase cache keys this text by.

        SSML: ``"ssml:"`` + the source (markup decides what is said).  Plain text:
        the words to speak, so spellings that read alike share an entry; for one
        paragraph without lexicon hits this is ``normalize(source)``, the key of
        every entry written before issue 12.  IPA shows as ``/ipa/``, a paragraph
        end as a blank line (both change the audio).
        """
        if self.ssml:
            return "ssml:" + self.source
        out = ""
        for seg in self.segments:
            if isinstance(seg, Break):
                out += "\n\n"
            else:
                word = seg.text if isinstance(seg, Speak) else f"/{seg.ipa}/"
                out += word if not out or out.endswith("\n") else " " + word
        return out


def prepare_text(text: str, options: TextOptions) -> Prepared:
    """``text`` prepared with ``options``, once; raises :class:`edgetts.text.ssml.SSMLError` for bad SSML."""
    segments = prepare(
        text,
        options=options.normalize_options,
        lexicon=options.lexicon,
        ssml=options.ssml,
        normalize=options.normalize,
        language=options.language,
    )
    return Prepared(text, tuple(segments), options)


_SENTENCE_END = (".", "?", "!")
_MARK_STRENGTH = "?!.;:,"
_LEADING_MARKS = re.compile(r"\s*([.,?!:;]+)")
_PARAGRAPH = re.compile(r"\n[^\S\n]*\n\s*")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def prepare(
    text: str,
    *,
    options: NormalizeOptions | None = None,
    lexicon: Lexicon | None = None,
    ssml: bool | None = None,
    normalize: bool = True,
    language: str = ENGLISH,
) -> list[Segment]:
    """Segments to speak for ``text``; ``[]`` when nothing in it can be spoken.

    ``ssml=None`` detects SSML (text starting with ``<speak``). ``normalize=False``
    keeps the words as written (lexicon and SSML still apply). ``language``: the
    voice's (:attr:`TextOptions.language`); text in another language than English
    is not normalised. Raises :class:`edgetts.text.ssml.SSMLError` for bad SSML;
    plain text never raises.
    """
    if ssml is None:
        ssml = ssml_mod.looks_like_ssml(text)
    segments: list[Segment] = []
    if ssml:
        for item in ssml_mod.parse(text, options, language):
            _add_item(segments, item, options, lexicon, normalize, language)
        return _tidy(segments)
    # A blank line ends a paragraph, and with it a sentence, even without a full
    # stop (as espeak-ng and piper-tts read it); Break(0) carries that boundary.
    for index, paragraph in enumerate(_PARAGRAPH.split(text)):
        if index:
            segments.append(Break(0.0))
        _add_item(segments, ssml_mod.Text(paragraph, ssml_mod.Prosody()), options, lexicon, normalize, language)
    return _tidy(segments)


def _add_item(
    segments: list[Segment],
    item: ssml_mod.Item,
    options: NormalizeOptions | None,
    lexicon: Lexicon | None,
    normalize: bool,
    language: str,
) -> None:
    if isinstance(item, ssml_mod.Pause):
        segments.append(Break(item.seconds))
    elif isinstance(item, ssml_mod.PhonemeText):
        segments.append(Phonemes(item.ipa, item.prosody.rate, item.prosody.volume))
    elif isinstance(item, ssml_mod.SentenceEnd):
        _end_sentence(segments)
    elif item.spoken:
        segments.append(Speak(item.text, item.prosody.rate, item.prosody.volume, item.prosody.lang))
    else:
        rate, volume, lang = item.prosody.rate, item.prosody.volume, item.prosody.lang
        # English rules for English text only; a span in another language has that language's rules.
        english = is_english(lang if lang is not None else language)
        pieces = lexicon.apply(item.text) if lexicon else None
        for piece_text, is_ipa in _pieces(item.text, pieces):
            if is_ipa:
                segments.append(Phonemes(piece_text, rate, volume))
            else:
                # Punctuation right after an element ("<sub/>. Next") belongs to the text before.
                lead = _LEADING_MARKS.match(piece_text)
                if lead:
                    _attach_mark(segments, lead.group(1))
                words = (
                    normalize_text(piece_text, options) if normalize and english else _plain(piece_text, fold=english)
                )
                segments.append(Speak(words, rate, volume, lang))


def _pieces(text: str, pieces: list[LexiconPiece] | None) -> list[tuple[str, bool]]:
    if pieces is None:
        return [(text, False)]
    return [(p.text, p.is_ipa) for p in pieces]


def _plain(text: str, fold: bool = True) -> str:
    """Without normalisation: only what would break later stages goes (surrogates, controls).

    ``fold=False`` (other languages than English) keeps full-width and other compatibility forms:
    espeak-ng reads "。" and "？" otherwise than "." and "?" (issue 16), as piper-tts does.
    """
    if fold or text.isascii():
        return " ".join(sanitize(text).split())
    return " ".join(_CONTROL.sub(" ", "".join(" " if unicodedata.category(c) == "Cs" else c for c in text)).split())


def _end_sentence(segments: list[Segment]) -> None:
    _attach_mark(segments, ".")


def _attach_mark(segments: list[Segment], marks: str) -> None:
    """End the last spoken text with the strongest of ``marks``, unless it ends a sentence."""
    mark = next((m for m in _MARK_STRENGTH if m in marks), "")
    for i in range(len(segments) - 1, -1, -1):
        seg = segments[i]
        if isinstance(seg, Speak) and _speakable(seg.text):
            text = seg.text.rstrip()
            if mark and not text.endswith(_SENTENCE_END):
                segments[i] = replace(seg, text=text.rstrip(",;:") + mark)
            return
        if isinstance(seg, Phonemes):
            return


def _speakable(text: str) -> bool:
    return any(c.isalnum() for c in text)


def _tidy(segments: list[Segment]) -> list[Segment]:
    """Drop empty segments, merge neighbours with equal prosody; [] if nothing is speakable."""
    out: list[Segment] = []
    for seg in segments:
        if isinstance(seg, Speak) and not _speakable(seg.text):
            continue
        if isinstance(seg, Phonemes) and not seg.ipa.strip():
            continue
        prev = out[-1] if out else None
        if (
            isinstance(seg, Speak)
            and isinstance(prev, Speak)
            and (prev.rate, prev.volume, prev.lang) == (seg.rate, seg.volume, seg.lang)
        ):
            out[-1] = replace(prev, text=f"{prev.text} {seg.text}")
        elif isinstance(seg, Break) and isinstance(prev, Break):
            out[-1] = Break(prev.seconds + seg.seconds)
        else:
            out.append(seg)
    if not any(isinstance(seg, (Speak, Phonemes)) for seg in out):
        return []
    return out
