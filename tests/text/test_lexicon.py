"""The site lexicon: whole-word, case-insensitive, longest first, respellings and IPA."""

from __future__ import annotations

import pytest

from edgetts.text.lexicon import Lexicon, LexiconPiece


@pytest.fixture()
def lexicon() -> Lexicon:
    return Lexicon.from_mapping(
        {
            "Leicester": "Lester",
            "Reading": "/ɹˈɛdɪŋ/",
            "St Pancras": "Saint Pancras",
            "St Pancras International": "Saint Pancras Inter national",
            "Milngavie": "Mull guy",
            "C++": "C plus plus",
        }
    )


def test_respelling(lexicon: Lexicon) -> None:
    assert lexicon.apply("Trains to Leicester.") == [LexiconPiece("Trains to Lester.")]


def test_case_insensitive(lexicon: Lexicon) -> None:
    assert lexicon.respell("LEICESTER and leicester") == "Lester and Lester"


def test_whole_words_only(lexicon: Lexicon) -> None:
    assert lexicon.respell("Leicestershire, Readings") == "Leicestershire, Readings"


def test_longest_phrase_first(lexicon: Lexicon) -> None:
    assert lexicon.respell("St Pancras International and St Pancras") == (
        "Saint Pancras Inter national and Saint Pancras"
    )


def test_phrase_matches_any_whitespace(lexicon: Lexicon) -> None:
    assert lexicon.respell("st  pancras\ninternational") == "Saint Pancras Inter national"


def test_ipa_entry_splits_text(lexicon: Lexicon) -> None:
    assert lexicon.apply("Change at Reading for Leicester") == [
        LexiconPiece("Change at "),
        LexiconPiece("ɹˈɛdɪŋ", is_ipa=True),
        LexiconPiece(" for Lester"),
    ]


def test_ipa_at_edges(lexicon: Lexicon) -> None:
    assert lexicon.apply("Reading") == [LexiconPiece("ɹˈɛdɪŋ", is_ipa=True)]


def test_symbols_in_keys(lexicon: Lexicon) -> None:
    assert lexicon.respell("I like C++ a lot") == "I like C plus plus a lot"


def test_empty_lexicon_is_identity() -> None:
    lex = Lexicon.from_mapping({})
    assert len(lex) == 0
    assert lex.apply("anything") == [LexiconPiece("anything")]
    assert lex.apply("") == []


def test_regex_characters_are_literal() -> None:
    lex = Lexicon.from_mapping({"a.b": "dot", "(x)": "paren"})
    assert lex.respell("a.b axb (x)") == "dot axb paren"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"": "x"}, "non-empty"),
        ({"   ": "x"}, "non-empty"),
        ({5: "x"}, "non-empty string"),
        ({"Leeds": ""}, r"lexicon\.Leeds: the replacement must be a non-empty string"),
        ({"Leeds": 5}, r"lexicon\.Leeds: the replacement must be a non-empty string"),
        ({"Leeds": None}, r"lexicon\.Leeds"),
        ({"Leeds": "//"}, r"lexicon\.Leeds: empty phonemes"),
        ({"Leeds": "x", "LEEDS": "y"}, r"lexicon\.LEEDS: given twice"),
    ],
)
def test_validation_errors_name_the_key(data: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Lexicon.from_mapping(data)


def test_not_a_mapping() -> None:
    with pytest.raises(ValueError, match="lexicon: expected a mapping"):
        Lexicon.from_mapping(["Leeds"])  # type: ignore[arg-type]
