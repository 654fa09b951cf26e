"""An installed voice's name means the configured voice that speaks with it: in an announcement's
`"voice"`, a Wyoming `synthesize` and the console's speech request (Assets.voice_named), and a
config's `voice.model` is looked up in `voices.dir` first (edgetts.daemon.assets.installed_model)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from edgetts.config import VoiceModelSettings, parse_config
from edgetts.daemon.admission.admit import parse
from edgetts.daemon.admission.messages import PayloadError
from edgetts.daemon.assets import Assets, installed_model
from edgetts.voice.install.store import VoiceStore

from support.fakes import FakeVoice
from support.voice_mirror import tiny_voice

DE = "de_DE-thorsten-medium"


def _assets(tmp_path: Path) -> Assets:
    config = parse_config(
        f"voice:\n  model: en_US-lessac-medium\nvoices:\n  dir: {tmp_path}\n  de:\n    model: {DE}\n"
        "  backup:\n    model: /opt/voices/fr_FR-siwis-medium.onnx\n"
    )
    # what the loader names a voice: its model file's name; "backup" did not load
    voices = {"default": FakeVoice("en_US-lessac-medium"), "de": FakeVoice(DE)}
    return Assets(config, voices=voices, voice_errors={"backup": "voice model not found"})


def test_a_configured_name_or_the_installed_name_it_speaks_with(tmp_path: Path) -> None:
    assets = _assets(tmp_path)
    assert [assets.voice_named(n) for n in ("de", DE, "default", "en_US-lessac-medium")] == ["de", "de"] + 2 * [
        "default"
    ]
    assert assets.voice_named("/opt/voices/fr_FR-siwis-medium.onnx") == "backup"  # not loaded: its model as written
    assert assets.voice_named("de_DE-thorsten-low") is None and assets.voice_named("fr_FR-siwis-medium") is None


def test_an_announcement_naming_an_installed_voice_is_queued_for_its_configured_voice(tmp_path: Path) -> None:
    assets = _assets(tmp_path)
    ann, text = parse(b'{"id": "a", "text": "Guten Tag.", "voice": "' + DE.encode() + b'"}', time.time(), assets)
    assert ann.voice == "de" and text is not None
    ann, _ = parse(b'{"id": "b", "text": "Hello.", "voice": "de"}', time.time(), assets)
    assert ann.voice == "de"
    with pytest.raises(PayloadError, match=r"unknown voice 'de_DE-thorsten-low' \(known: default, de, backup\)"):
        parse(b'{"id": "c", "text": "Hallo.", "voice": "de_DE-thorsten-low"}', time.time(), assets)


def test_wyoming_and_the_console_take_the_installed_name(tmp_path: Path) -> None:
    pytest.importorskip("wyoming")
    pytest.importorskip("starlette")
    from wyoming.tts import SynthesizeVoice

    from edgetts.daemon.inbound.http.tts import side_request
    from edgetts.daemon.inbound.wyoming.voices import pick

    assets = _assets(tmp_path)
    assert pick(assets, SynthesizeVoice(name=DE)).name == "de"
    assert pick(assets, SynthesizeVoice(name="en_US-lessac-medium")).name == "default"
    assert side_request({"text": "Hallo.", "voice": DE}, assets, {"text", "voice"}).voice_name == "de"


def test_a_model_name_installed_in_the_voices_folder_is_loaded_from_there(tmp_path: Path) -> None:
    config = parse_config(f"voices:\n  dir: {tmp_path / 'voices'}\n")
    store = VoiceStore(tmp_path / "voices")
    model = tiny_voice(tmp_path / "gen", "de")
    (tmp_path / "voices" / DE).mkdir(parents=True)
    (tmp_path / "voices" / DE / f"{DE}.onnx").write_bytes(model.read_bytes())
    (tmp_path / "voices" / DE / f"{DE}.onnx.json").write_bytes(Path(f"{model}.json").read_bytes())
    assert store.find(DE) is not None
    found = installed_model(config, VoiceModelSettings(model=DE, threads=1))
    assert found == VoiceModelSettings(model=str(tmp_path / "voices" / DE / f"{DE}.onnx"), threads=1)
    for other in ("default", "/elsewhere/x.onnx", "de_DE-other-low"):  # left to the loader as written
        assert installed_model(config, VoiceModelSettings(model=other)).model == other
