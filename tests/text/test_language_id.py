"""The language identifier of `voice.model: auto` (issue 43): short announcements in each language,
restricted to the configured languages, unsure texts left to the default, sentences cut as spoken."""

from __future__ import annotations

import pytest

from edgetts.text.language_id import KNOWN_LANGUAGES, LanguageIdentifier, split_sentences

# Not the held-out set of tools/bench_langid.py: other lines, so this checks the product, not the benchmark.
TEXTS = {
    "en": ["The 7:05 bus to the airport leaves from stop B.", "Please collect your order at counter two."],
    "de": [
        "Der Bus um 7:05 Uhr zum Flughafen fährt von Steig B.",
        "Bitte holen Sie die Bestellung an Schalter zwei ab.",
    ],
    "fr": ["Le bus de 7 h 05 pour l'aéroport part de l'arrêt B.", "Veuillez retirer votre commande au guichet deux."],
    "es": ["El autobús de las 7:05 al aeropuerto sale de la parada B.", "Recoja su pedido en el mostrador dos."],
    "it": ["L'autobus delle 7:05 per l'aeroporto parte dalla fermata B.", "Ritirate l'ordine allo sportello due."],
    "nl": ["De bus van 7:05 naar het vliegveld vertrekt vanaf halte B.", "Haal uw bestelling op bij balie twee."],
    "pl": ["Autobus o 7:05 na lotnisko odjeżdża z przystanku B.", "Prosimy odebrać zamówienie przy okienku drugim."],
}


@pytest.fixture(scope="module")
def identifier() -> LanguageIdentifier:
    return LanguageIdentifier(TEXTS)


@pytest.mark.parametrize("language", sorted(TEXTS))
def test_short_announcements_are_told_apart(identifier: LanguageIdentifier, language: str) -> None:
    for text in TEXTS[language]:
        guess = identifier.identify(text)
        assert guess.language == language, (text, guess)
        assert guess.confidence >= identifier.min_confidence


def test_only_the_configured_languages_are_guessed_and_unsure_texts_are_no_guess() -> None:
    two = LanguageIdentifier(["en", "de"])
    # Luxembourgish-looking German stays German; Dutch is no language of the two: German or English
    assert two.identify("Moien, de Zuch fiert um 10 Auer.").language in ("de", None)
    assert two.identify("12:30 / 14:45").language is None  # no letters: no guess, confidence 0
    assert two.identify("OK.").language is None  # 0.5 each: below the threshold
    assert two.identify('<speak>Achtung, <break time="1s"/> der Zug fährt ab.</speak>').language == "de"
    assert LanguageIdentifier(["de"]).identify("Platform 3").language == "de"  # one language: always it


def test_unknown_languages_are_refused() -> None:
    with pytest.raises(ValueError, match="does not know: xx"):
        LanguageIdentifier(["en", "xx"])


def test_known_languages_are_the_models() -> None:
    from py3langid.langid import MODEL_FILE
    from py3langid.langid import LanguageIdentifier as Model

    assert KNOWN_LANGUAGES == set(Model.from_model_file(MODEL_FILE).labels) - {"zxx"}


def test_sentences_are_cut_after_their_ends() -> None:
    assert split_sentences("Der Zug fährt ab.  The train departs!\nGate 3?  ") == [
        "Der Zug fährt ab.",
        "The train departs!",
        "Gate 3?",
    ]
    assert split_sentences("At 10.15 on platform 2.5 km away") == ["At 10.15 on platform 2.5 km away"]
    assert split_sentences("欢迎光临。下一站北京南站。") == ["欢迎光临。", "下一站北京南站。"]
