"""prepare_text(): a text prepared once per announcement, and the phrase-cache key it gives (issue 12)."""

from __future__ import annotations

import dataclasses

import pytest
import test_normalize

from edgetts.text.lexicon import Lexicon
from edgetts.text.normalize import NormalizeOptions, normalize
from edgetts.text.prepare import Break, Phonemes, Prepared, Speak, TextOptions, prepare, prepare_text
from edgetts.text.ssml import SSMLError

from support.paths import ROOT


def _corpus() -> list[str]:
    lines = (ROOT / "tests" / "data" / "announcements.txt").read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip()] + [text for text, _ in test_normalize.DEFAULT_CASES]


def test_prepared_holds_source_segments_and_options() -> None:
    options = TextOptions(normalize_options=NormalizeOptions(time_24h="12h"))
    got = prepare_text("Boarding at 14:05.", options)
    assert got == Prepared("Boarding at 14:05.", (Speak("Boarding at two oh five p m."),), options)
    assert got.segments == tuple(prepare("Boarding at 14:05.", options=options.normalize_options))
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.source = "other"  # type: ignore[misc]


def test_bad_ssml_raises_and_plain_text_never_does() -> None:
    with pytest.raises(SSMLError, match="not well-formed XML: mismatched tag"):
        prepare_text("<speak>Gate <break time='1s'> open</speak>", TextOptions())
    assert prepare_text("<speak without a close", TextOptions(ssml=False)).segments != ()
    assert prepare_text("... !!!", TextOptions()).segments == ()  # nothing speakable: no segments, no error


def test_plain_text_key_is_the_old_key_on_the_corpus() -> None:
    """Entries written before issue 12 were keyed by normalize(text): the corpus keeps hitting them."""
    texts = _corpus()
    assert len(texts) > 300
    for text in texts:
        assert prepare_text(text, TextOptions()).key == normalize(text), text
    for options, text, _spoken in test_normalize.OPTION_CASES:
        assert prepare_text(text, TextOptions(normalize_options=options)).key == normalize(text, options), text


def test_ssml_key_is_the_source() -> None:
    text = '<speak>Platform <say-as interpret-as="cardinal">4</say-as>.</speak>'
    got = prepare_text(text, TextOptions())
    assert got.ssml and got.key == "ssml:" + text
    # the same text read as plain text (ssml: false) is keyed by its words
    plain = prepare_text(text, TextOptions(ssml=False))
    assert not plain.ssml and plain.key == normalize(text)


def test_key_tells_apart_what_the_old_key_did_not() -> None:
    """Where the spoken text differs from normalize(text), the key follows what is spoken."""
    # a paragraph end is a sentence end: "one two" and "one\n\ntwo" no longer share an entry
    para = prepare_text("Platform one\n\nPlatform two", TextOptions(normalize=False))
    assert para.segments == (Speak("Platform one"), Break(0.0), Speak("Platform two"))
    assert para.key == "Platform one\n\nPlatform two"
    assert para.key != prepare_text("Platform one Platform two", TextOptions(normalize=False)).key
    # a lexicon respelling or IPA is keyed by what is said
    lex = Lexicon.from_mapping({"Leicester": "Lester", "Reading": "/ɹˈɛdɪŋ/"})
    got = prepare_text("Leicester to Reading.", TextOptions(lexicon=lex))
    assert got.segments == (Speak("Lester to"), Phonemes("ɹˈɛdɪŋ"))
    assert got.key == "Lester to /ɹˈɛdɪŋ/" != normalize("Leicester to Reading.")
