"""A voice's language, the scripts it speaks, and the tags SSML names languages by (issue 16)."""

from __future__ import annotations

import pytest

from edgetts.text.language import (
    espeak_voice_for,
    foreign_letters,
    is_english,
    language_of,
    script_of,
    scripts_of,
    unspeakable_reason,
)
from edgetts.voice.piper.phonemize import clause_terminator


@pytest.mark.parametrize(
    ("voice", "language"),
    [
        ("en-us", "en"),
        ("en-GB-x-rp", "en"),
        ("de", "de"),
        ("fr-fr", "fr"),
        ("es-419", "es"),
        ("cmn", "cmn"),
        ("cmn-latn-pinyin", "cmn"),
        ("zh", "cmn"),
        ("zh_CN", "cmn"),
        ("yue", "yue"),
        ("", "en"),
    ],
)
def test_language_of(voice: str, language: str) -> None:
    assert language_of(voice) == language
    assert is_english(voice) == (language == "en")


@pytest.mark.parametrize(
    ("tag", "voice"),
    [("en-GB", "en-gb"), ("de-DE", "de-de"), ("zh-CN", "cmn"), ("zh-HK", "yue"), ("fr", "fr"), ("ES_es", "es-es")],
)
def test_espeak_voice_for_an_ssml_tag(tag: str, voice: str) -> None:
    assert espeak_voice_for(tag) == voice


@pytest.mark.parametrize(
    ("ch", "script"),
    [
        ("a", "Latin"),
        ("ß", "Latin"),
        ("é", "Latin"),
        ("Ａ", "Latin"),
        ("北", "Han"),
        ("ひ", "Kana"),
        ("カ", "Kana"),
        ("ｶ", "Kana"),
        ("Ж", "Cyrillic"),
        ("Ω", "Greek"),
        ("ש", "Hebrew"),
        ("ع", "Arabic"),
        ("한", "Hangul"),
        ("5", None),
        ("。", None),
        ("€", None),
        ("\u0301", None),
        ("ʼ", None),
    ],
)
def test_script_of(ch: str, script: str | None) -> None:
    assert script_of(ch) == script


def test_every_voice_speaks_latin_and_its_own_script() -> None:
    assert scripts_of("de") == {"Latin"}
    assert scripts_of("cmn") == {"Latin", "Han", "Bopomofo"}
    assert scripts_of("ja") == {"Latin", "Kana", "Han"}
    assert scripts_of("ru") == {"Latin", "Cyrillic"}


def test_foreign_letters_and_the_reason() -> None:
    assert foreign_letters("Gleis 3, München! 20 € «ok»", "de") == {}
    assert foreign_letters("Next: 北京 and Москва", "en") == {"Han": "北京", "Cyrillic": "Москва"}
    assert foreign_letters("北京 Hongqiao G123", "cmn") == {}
    assert unspeakable_reason("Platform 4", "en", "en-us") is None
    assert unspeakable_reason("Москва", "de", "de") == (
        "text in Cyrillic letters ('Москва'), which the de voice cannot speak (it speaks Latin letters)"
    )


@pytest.mark.parametrize(
    ("consumed", "is_last", "expected"),
    [
        ("你好。再", False, ("", True)),
        ("你好？ 再", False, ("", True)),
        ("下一站：北", False, ("", False)),
        ("请勿吸烟；谢", False, ("", False)),
        ("谢谢、好", False, ("", False)),
        ("他说：「列车晚点。」然", False, ("", True)),
        ("مرحبا؟ ن", False, ("?", True)),
        ("نعم، ش", False, (",", False)),
        ("¿Dónde? N", False, ("?", True)),
    ],
)
def test_clause_terminators_of_other_scripts(consumed: str, is_last: bool, expected: tuple[str, bool]) -> None:
    # as piper-tts 1.8.0 writes them (tests/voice/test_voice_languages.py compares whole texts)
    assert clause_terminator(consumed, is_last) == expected
