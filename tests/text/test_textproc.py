"""prepare(): the engine's entry point (lexicon -> normalisation -> segments)."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgetts.cli import text as cli_text
from edgetts.text.lexicon import Lexicon
from edgetts.text.normalize import NormalizeOptions
from edgetts.text.prepare import Break, Phonemes, Speak, prepare


def test_plain_text_gives_one_speak() -> None:
    assert prepare("Flight BA 2490 boards at 14:05.") == [
        Speak("Flight B eh twenty four ninety boards at fourteen oh five.")
    ]


def test_options_are_used() -> None:
    assert prepare("14:05", options=NormalizeOptions(time_24h="12h")) == [Speak("two oh five p m")]


def test_lexicon_applies_before_normalisation() -> None:
    lex = Lexicon.from_mapping({"T5": "Terminal 5", "Leicester": "Lester"})
    assert prepare("Heathrow T5 via Leicester at 9:42", lexicon=lex) == [
        Speak("Heathrow Terminal five via Lester at nine forty two")
    ]


def test_lexicon_ipa_gives_phonemes_segments() -> None:
    lex = Lexicon.from_mapping({"Reading": "/ɹˈɛdɪŋ/"})
    assert prepare("The 9:42 to Reading is late.", lexicon=lex) == [
        Speak("The nine forty two to"),
        Phonemes("ɹˈɛdɪŋ"),
        Speak("is late."),
    ]


def test_lexicon_in_ssml_text_and_prosody() -> None:
    lex = Lexicon.from_mapping({"Reading": "/ɹˈɛdɪŋ/"})
    out = prepare('<speak><prosody rate="slow">To Reading</prosody></speak>', lexicon=lex)
    assert out == [Speak("To", rate=0.8), Phonemes("ɹˈɛdɪŋ", rate=0.8)]


def test_no_normalize_keeps_words_but_applies_lexicon_and_ssml() -> None:
    lex = Lexicon.from_mapping({"Leicester": "Lester"})
    assert prepare("Leicester at 14:05", lexicon=lex, normalize=False) == [Speak("Lester at 14:05")]
    assert prepare('<speak>A <break time="1s"/> 14:05</speak>', normalize=False) == [
        Speak("A"),
        Break(1.0),
        Speak("14:05"),
    ]


def test_no_normalize_still_drops_controls_and_surrogates() -> None:
    assert prepare("a\x00b \ud800c", normalize=False) == [Speak("a b c")]


@pytest.mark.parametrize("text", ["", "   ", "🔥🔥", "...", "<speak></speak>", "\x00\x01", "—"])
def test_nothing_speakable_gives_empty_list(text: str) -> None:
    assert prepare(text) == []


def test_ssml_false_forces_plain() -> None:
    assert prepare("<speak>Hi</speak>", ssml=False) == [Speak("speak Hi slash speak")]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=()), max_size=120))
def test_plain_prepare_never_raises(text: str) -> None:
    for seg in prepare(text, ssml=False):
        assert isinstance(seg, (Speak, Phonemes, Break))
        if isinstance(seg, Speak):
            seg.text.encode("utf-8")


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=()), max_size=80))
def test_plain_prepare_with_lexicon_never_raises(text: str) -> None:
    lex = Lexicon.from_mapping({"a": "/ə/", "b c": "bee sea", "ß": "ess"})
    prepare(text, ssml=False, lexicon=lex)


class TestCli:
    def run(self, argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
        parser = argparse.ArgumentParser(prog="edgetts")
        cli_text.register(parser.add_subparsers())
        args = parser.parse_args(argv)
        code = args.func(args)
        out, err = capsys.readouterr()
        return code, out, err

    def test_plain(self, capsys: pytest.CaptureFixture[str]) -> None:
        assert self.run(["normalize", "Gate 17 at 14:05"], capsys) == (
            0,
            "Gate seventeen at fourteen oh five\n",
            "",
        )

    def test_options(self, capsys: pytest.CaptureFixture[str]) -> None:
        code, out, _ = self.run(
            ["normalize", "--time-24h", "12h", "--date-order", "mdy", "14:05 on 12/03/2025"], capsys
        )
        assert (code, out) == (0, "two oh five p m on December third twenty twenty five\n")

    def test_ssml_segments(self, capsys: pytest.CaptureFixture[str]) -> None:
        text = (
            '<speak>Hi <break time="500ms"/><prosody rate="fast">there</prosody>'
            '<phoneme ph="ɹˈɛdɪŋ">Reading</phoneme></speak>'
        )
        code, out, _ = self.run(["normalize", "--ssml", text], capsys)
        assert code == 0
        assert out.splitlines() == [
            "speak(rate=1.0, volume=1.0): Hi",
            "break 0.5 s",
            "speak(rate=1.25, volume=1.0): there",
            "phonemes: ɹˈɛdɪŋ",
        ]

    def test_bad_ssml_is_one_line_and_exit_2(self, capsys: pytest.CaptureFixture[str]) -> None:
        code, out, err = self.run(["normalize", "<speak><foo/></speak>"], capsys)
        assert code == 2 and out == ""
        assert err.startswith("edgetts: error: SSML <foo>") and err.count("\n") == 1


def test_blank_line_ends_a_paragraph_without_adding_a_mark() -> None:
    from edgetts.text.prepare import Break, Speak, prepare

    assert prepare("First line\n \nSecond line.", normalize=False) == [
        Speak("First line"),
        Break(0.0),
        Speak("Second line."),
    ]
    assert prepare("one\ntwo") == [Speak("one two")]
