"""Phoneme ids identical to piper-tts 1.8.0's (the test oracle) for the same voice and text."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from edgetts.voice.piper.phonemize import clause_terminator, phonemize, phonemize_clauses

from support.paths import ROOT, corpus_lines

# espeak-ng 1.52.0's data (espeakng-loader's) reads "has been" as hˈæzbiːn; the
# shipped data of 724808c (the commit piper-tts 1.8.0 builds) reads hɐzbɪn (issue 16).
HAS_BEEN = {line for line in corpus_lines() if "has been" in line}
GPL = (ROOT / "edgetts" / "data" / "espeak" / "COPYING").read_text(encoding="utf-8")


def gpl_sentences() -> list[str]:
    """The sentences of the GPL text (espeak-ng's COPYING) with its line breaks joined."""
    paragraphs = (" ".join(p.split()) for p in re.split(r"\n\s*\n", GPL))
    return [s for p in paragraphs for s in re.split(r"(?<=[.!?])\s+", p) if s]


# Punctuation and layout cases checked against piper-tts when the phonemizer was written.
EXTRA = [
    "Hello world",
    "Is it raining? Yes! It is.",
    'He said "stop." Then he left.',
    "Wait... what happened",
    "Dr. Smith lives on Baker St. near the park.",
    "The price is $12.50, or about 10 euros; that's fine: really.",
    "First line\n\nSecond paragraph here.",
    "Call 0161 496 0000 now!",
    "e.g. this, i.e. that.",
    "(Platform 3) is closed.",
    'She asked: "Are you coming?" and left',
    "Item #4 & item @5 cost 50%.",
    "What?! No way.",
    "Mr. and Mrs. Jones arrived at 10 a.m.",
    "café naïve résumé",
    "The quick brown fox jumps over the lazy dog and keeps running through the field while the "
    "farmer watches from the old wooden fence near the red barn at the end of the long road",
]


def _oracle_ids(piper_voice, text: str) -> list[list[int]]:  # type: ignore[no-untyped-def]
    return [piper_voice.phonemes_to_ids(p) for p in piper_voice.phonemize(text) if p]


@pytest.mark.parametrize("line", corpus_lines() + EXTRA)
def test_ids_equal_piper(raw_voice, piper_voice, line: str) -> None:  # type: ignore[no-untyped-def]
    assert raw_voice.frontend.sentence_ids(line) == _oracle_ids(piper_voice, line)


@pytest.mark.parametrize("line", sorted(HAS_BEEN))
def test_has_been_reads_as_in_piper(raw_voice, piper_voice, line: str) -> None:  # type: ignore[no-untyped-def]
    ours = ["".join(s) for s in raw_voice.frontend.phonemize(line)]
    assert any("hɐzbɪn" in s for s in ours) and not any("hˈæzbiːn" in s for s in ours)
    assert ours == ["".join(s) for s in piper_voice.phonemize(line)]


def test_gpl_text_has_its_sentences() -> None:
    sentences = gpl_sentences()
    assert len(sentences) == 223
    assert sentences[0] == "GNU GENERAL PUBLIC LICENSE Version 3, 29 June 2007"
    assert sentences[-1] == "But first, please read <http://www.gnu.org/philosophy/why-not-lgpl.html>."


@pytest.mark.parametrize("sentence", gpl_sentences())
def test_gpl_sentence_ids_equal_piper(raw_voice, piper_voice, sentence: str) -> None:  # type: ignore[no-untyped-def]
    # The phonemizer's sentences, not the front end's: that one cuts a sentence longer
    # than the voice's input bound into pieces (piper-tts does not), and GPL sentences are long.
    ours = [raw_voice.frontend.phoneme_ids(p) for p in phonemize(sentence, "en-us")]
    assert ours == _oracle_ids(piper_voice, sentence)


def test_whole_corpus_as_one_text_splits_like_piper(raw_voice, piper_voice) -> None:  # type: ignore[no-untyped-def]
    text = "\n".join(corpus_lines())
    ours = raw_voice.frontend.sentence_ids(text)
    assert len(ours) == 30  # 20 lines, several with two or more sentences
    assert ours == _oracle_ids(piper_voice, text)


def test_cli_phoneme_ids_match_piper(piper_voice) -> None:  # type: ignore[no-untyped-def]
    line = corpus_lines()[2]
    out = subprocess.run(
        [sys.executable, "-m", "edgetts.cli", "phonemes", line, "--ids", "--no-normalize"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert [json.loads(row) for row in out.splitlines()] == _oracle_ids(piper_voice, line)


def test_linking_glide_is_written_as_in_piper() -> None:
    # espeak-ng writes ';' between "the" and a vowel; piper's build renders it as ʲ.
    assert "".join(phonemize("the alarm", "en-us")[0]) == "ðɪʲ ɐlˈɑːɹm"
    assert "".join(phonemize("the door", "en-us")[0]) == "ðə dˈɔːɹ"


@pytest.mark.parametrize(
    ("text", "voice", "passes"),
    [
        ("the door", "en-us", 1),
        ("Mind the gap.", "en-us", 1),
        ("the alarm", "en-us", 2),
        ("We apologise for the inconvenience.", "en-us", 2),
        ("drei Züge", "de", 2),
        ("Guten Tag", "de", 1),
    ],
)
def test_mnemonic_pass_runs_only_where_it_can_change_the_ipa(
    monkeypatch: pytest.MonkeyPatch, text: str, voice: str, passes: int
) -> None:
    # The second espeak-ng pass (mnemonics) is half of its time; it can only matter at an
    # empty IPA phone (the link) or a German tap.  The parity tests above check the output.
    from edgetts.voice.piper import phonemize as module

    modes: list[int] = []
    real = module._Espeak.clauses

    def counted(self: object, text: str, mode: int) -> list[tuple[str, str]]:
        modes.append(mode)
        return real(self, text, mode)  # type: ignore[arg-type]

    monkeypatch.setattr(module._Espeak, "clauses", counted)
    phonemes = "".join(phonemize(text, voice)[0])
    assert len(modes) == passes
    assert ("ʲ" in phonemes) == (voice == "en-us" and passes == 2)


def test_clauses_carry_terminators_and_sentence_ends() -> None:
    clauses = phonemize_clauses("Attention all staff: a drill, today. Go now!", "en-us")
    assert [(c.terminator, c.ends_sentence) for c in clauses] == [
        (":", False),
        (",", False),
        (".", True),
        ("!", True),
    ]


@pytest.mark.parametrize(
    ("consumed", "is_last", "expected"),
    [
        ("Good morning. T", False, (".", True)),
        ("Attention all staff: a", False, (":", False)),
        ("conveyor C, p", False, (",", False)),
        ("What?! N", False, ("?", True)),
        ('He said "stop." T', False, (".", True)),
        ("Wait... w", False, ("", False)),
        ("Wait\u2026 w", False, ("", False)),
        ("the end", True, ("", True)),
        ("First line\n\nS", False, ("", True)),
        ("a very long clause without any mark h", False, ("", False)),
    ],
)
def test_clause_terminator(consumed: str, is_last: bool, expected: tuple[str, bool]) -> None:
    assert clause_terminator(consumed, is_last) == expected


def test_empty_and_symbol_only_text_has_no_phonemes() -> None:
    assert phonemize("", "en-us") == []
    assert all(set(s) <= set(" .,!?") for s in phonemize(", . ? ...", "en-us"))
    # espeak-ng reads some symbols as words: "!!!" is "exclamation", an emoji its name.
    assert "".join(phonemize("!!!", "en-us")[0]) == "ˈɛkskləmˌeɪʃən!"
