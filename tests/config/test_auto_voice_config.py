"""`voice.model: auto` (issue 43): the language map's config, its voices, and each mistake named by its key."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgetts.config import ConfigError, dump_config, load_config, parse_config

AUTO = "voice:\n  model: auto\n  threads: 2\n  languages: {en: default, de: german}\n  language_default: en\n"
VOICES = "voices:\n  german:\n    model: de.onnx\n    threads: 1\n"


def problems(text: str, tmp_path: Path) -> list[str]:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return [p.replace(str(path), "F") for p in info.value.problems]


def test_auto_voices_are_the_maps_and_the_default_language_speaks_as_voice_name() -> None:
    config = parse_config(AUTO + "  language_per: sentence\n" + VOICES)
    voices = config.all_voices()
    assert list(voices) == ["default", "german"]
    assert voices["default"].model == "default" and voices["default"].threads == 2  # the section's settings
    assert voices["german"].model == "de.onnx" and voices["german"].threads == 1  # its own
    assert config.voice.language_per == "sentence" and config.voice.language_min_confidence == 0.6
    assert parse_config(dump_config(config)) == config  # print-config reads back


def test_a_model_named_in_the_map_is_a_voice_of_that_name_with_the_sections_settings(tmp_path: Path) -> None:
    from tools.make_test_voice import make_voice

    folder = tmp_path / "voices" / "fr_FR-tiny-low"
    model = make_voice(folder, "ok", language="fr")
    model.rename(folder / "fr_FR-tiny-low.onnx")
    Path(f"{model}.json").rename(folder / "fr_FR-tiny-low.onnx.json")
    config = parse_config(
        "voice:\n  model: auto\n  threads: 2\n  degrade_to: quick\n"
        "  languages: {en: default, fr: fr_FR-tiny-low}\n  language_default: en\n"
        f"voices:\n  dir: {tmp_path / 'voices'}\n  quick:\n    model: q.onnx\n"
    )
    voices = config.all_voices()
    assert list(voices) == ["default", "quick", "fr_FR-tiny-low"]
    assert (voices["fr_FR-tiny-low"].model, voices["fr_FR-tiny-low"].threads) == ("fr_FR-tiny-low", 2)
    assert voices["fr_FR-tiny-low"].degrade_to is None and voices["default"].degrade_to == "quick"


def test_a_voices_entry_as_the_default_languages_voice_gives_voice_name_its_settings() -> None:
    config = parse_config("voice:\n  model: auto\n  languages: {de: german}\n  language_default: de\n" + VOICES)
    assert config.all_voices()["default"].model == "de.onnx" and config.all_voices()["default"].threads == 1
    from edgetts.config.auto_voice import language_voices

    assert language_voices(config) == {"de": "default"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("voice:\n  model: auto\n", "F:1 voice/languages: required with model: auto"),
        (
            "voice:\n  model: auto\n  languages: {en: default}\n",
            "F:1 voice/language_default: required with model: auto",
        ),
        (
            "voice:\n  model: auto\n  languages: {en: default}\n  language_default: de\n",
            "F:4 voice/language_default: 'de' is not in voice/languages (en)",
        ),
        (
            "voice:\n  model: auto\n  languages: {en: default, xx: default}\n  language_default: en\n",
            "F:3 voice/languages/xx: 'xx' is not a language the identifier knows",
        ),
        (
            "voice:\n  languages: {en: default}\n",
            "F:2 voice/languages: only with model: auto",
        ),
        (
            "voice:\n  model: auto\n  languages:\n    en: default\n    de: de_DE-nobody-medium\n"
            "  language_default: en\n",
            "F:5 voice/languages/de: 'de_DE-nobody-medium' is neither a voice of voices: (none) nor found: "
            "no voice named 'de_DE-nobody-medium'",
        ),
        (
            "voice:\n  model: auto\n  languages:\n    en: default\n    de: /v/de.onnx\n  language_default: en\n",
            "F:5 voice/languages/de: '/v/de.onnx' is not a voice name",
        ),
        (
            "voice:\n  model: auto\n  name: main\n  languages:\n    en: default\n    de: main\n"
            "  language_default: en\n",
            "F:6 voice/languages/de: 'main' is voice/name, which speaks the default language (en)",
        ),
        (
            AUTO + "  language_min_confidence: 2\n",
            "F:6 voice/language_min_confidence: must be 0-1",
        ),
        (
            AUTO + "  language_per: paragraph\n",
            "F:6 voice/language_per: expected one of",
        ),
        ("voices:\n  fr:\n    model: auto\n", "F:3 voices/fr/model: auto chooses among voices"),
    ],
)
def test_mistakes_name_their_key(tmp_path: Path, text: str, expected: str) -> None:
    got = problems(text, tmp_path)
    assert len(got) == 1 and got[0].startswith(expected), got
