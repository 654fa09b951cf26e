"""Which language a text is read in, and which scripts a voice of that language can speak (issue 16).

A Piper voice names its espeak-ng voice (``en-us``, ``de``, ``cmn``): its
*language* here is that name's first part (``en``, ``de``, ``cmn``), which
decides the rules: the English normaliser runs only for ``en``; every other
language gets espeak-ng's own reading of numbers and abbreviations.

A voice speaks the scripts of its language and Latin letters (espeak-ng reads
a Latin word in a Chinese or Russian voice with its English rules, as piper-tts
does).  A letter of any other script would come out as espeak-ng's name for it
("Chinese letter", "kyrillisch"), so an announcement holding one is refused
(:func:`foreign_letters`).  Digits, punctuation and symbols belong to no script.
"""

from __future__ import annotations

import unicodedata

ENGLISH = "en"

# Unicode character-name prefixes that name a script (the first word of unicodedata.name).
_SCRIPT_OF_NAME = {
    "LATIN": "Latin",
    "CYRILLIC": "Cyrillic",
    "GREEK": "Greek",
    "ARMENIAN": "Armenian",
    "GEORGIAN": "Georgian",
    "HEBREW": "Hebrew",
    "ARABIC": "Arabic",
    "DEVANAGARI": "Devanagari",
    "BENGALI": "Bengali",
    "GURMUKHI": "Gurmukhi",
    "GUJARATI": "Gujarati",
    "ORIYA": "Oriya",
    "TAMIL": "Tamil",
    "TELUGU": "Telugu",
    "KANNADA": "Kannada",
    "MALAYALAM": "Malayalam",
    "SINHALA": "Sinhala",
    "THAI": "Thai",
    "LAO": "Lao",
    "TIBETAN": "Tibetan",
    "MYANMAR": "Myanmar",
    "KHMER": "Khmer",
    "ETHIOPIC": "Ethiopic",
    "CHEROKEE": "Cherokee",
    "HANGUL": "Hangul",
    "HIRAGANA": "Kana",
    "KATAKANA": "Kana",
    "CJK": "Han",
    "BOPOMOFO": "Bopomofo",
}
# Scripts of the languages espeak-ng reads that are not written in Latin letters.
_LANGUAGE_SCRIPTS: dict[str, frozenset[str]] = {
    **{
        code: frozenset({"Cyrillic"})
        for code in ("ru", "uk", "be", "bg", "mk", "sr", "kk", "ky", "tt", "ba", "cv", "mn")
    },
    **{code: frozenset({"Greek"}) for code in ("el", "grc")},
    **{code: frozenset({"Arabic"}) for code in ("ar", "fa", "ur", "ug", "sd", "ps")},
    **{code: frozenset({"Devanagari"}) for code in ("hi", "mr", "ne", "sa", "kok", "bpy")},
    **{code: frozenset({"Bengali"}) for code in ("bn", "as")},
    **{code: frozenset({"Han", "Bopomofo"}) for code in ("cmn", "yue", "hak", "zh")},
    "ja": frozenset({"Kana", "Han"}),
    "ko": frozenset({"Hangul", "Han"}),
    "hy": frozenset({"Armenian"}),
    "ka": frozenset({"Georgian"}),
    "he": frozenset({"Hebrew"}),
    "pa": frozenset({"Gurmukhi"}),
    "gu": frozenset({"Gujarati"}),
    "or": frozenset({"Oriya"}),
    "ta": frozenset({"Tamil"}),
    "te": frozenset({"Telugu"}),
    "kn": frozenset({"Kannada"}),
    "ml": frozenset({"Malayalam"}),
    "si": frozenset({"Sinhala"}),
    "th": frozenset({"Thai"}),
    "my": frozenset({"Myanmar"}),
    "am": frozenset({"Ethiopic"}),
    "chr": frozenset({"Cherokee"}),
}
# BCP 47 primary tags whose espeak-ng voice has another name.
_ESPEAK_ALIASES = {
    "zh": "cmn",
    "zh-cn": "cmn",
    "zh-tw": "cmn",
    "zh-sg": "cmn",
    "zh-hk": "yue",
    "zh-yue": "yue",
    "nb": "nb",
    "iw": "he",
}


def language_of(espeak_voice: str) -> str:
    """The language an espeak-ng voice name reads: ``en-us`` -> ``en``, ``cmn-latn-pinyin`` -> ``cmn``."""
    name = espeak_voice.strip().lower().replace("_", "-")
    name = _ESPEAK_ALIASES.get(name, name)
    return _ESPEAK_ALIASES.get(name.split("-")[0], name.split("-")[0]) or ENGLISH


def is_english(language: str) -> bool:
    """Whether the English rules (normaliser, abbreviations, letter respellings) apply."""
    return language_of(language) == ENGLISH


def espeak_voice_for(tag: str) -> str:
    """The espeak-ng voice an SSML ``xml:lang`` names: ``en-GB`` -> ``en-gb``, ``zh-CN`` -> ``cmn``,
    ``de-DE`` -> ``de`` (a region espeak-ng has no voice for is dropped by the caller's check)."""
    name = tag.strip().lower().replace("_", "-")
    return _ESPEAK_ALIASES.get(name, name)


def scripts_of(language: str) -> frozenset[str]:
    """The scripts a voice of ``language`` speaks: its own and Latin."""
    return _LANGUAGE_SCRIPTS.get(language_of(language), frozenset()) | {"Latin"}


def script_of(ch: str) -> str | None:
    """The script of a letter; None for digits, punctuation, symbols, marks and letters of no script."""
    if not unicodedata.category(ch).startswith("L"):
        return None
    try:
        name = unicodedata.name(ch)
    except ValueError:
        return None
    if name.startswith("FULLWIDTH LATIN") or name.startswith("HALFWIDTH KATAKANA"):
        return "Latin" if "LATIN" in name else "Kana"
    return _SCRIPT_OF_NAME.get(name.split(" ", 1)[0].split("-", 1)[0])


def foreign_letters(text: str, language: str) -> dict[str, str]:
    """Letters of ``text`` in scripts a voice of ``language`` cannot speak: script -> its letters
    in order of appearance (at most 12 each)."""
    allowed = scripts_of(language)
    found: dict[str, str] = {}
    for ch in text:
        if ch.isascii():
            continue
        script = script_of(ch)
        if script is not None and script not in allowed and len(found.get(script, "")) < 12:
            found[script] = found.get(script, "") + ch
    return found


def unspeakable_reason(text: str, language: str, voice: str) -> str | None:
    """Why a voice of ``language`` (named ``voice``) cannot read ``text``; None when it can."""
    found = foreign_letters(text, language)
    if not found:
        return None
    scripts = ", ".join(f"{script} letters ({letters!r})" for script, letters in found.items())
    allowed = " and ".join(sorted(scripts_of(language)))
    return f"text in {scripts}, which the {voice} voice cannot speak (it speaks {allowed} letters)"
