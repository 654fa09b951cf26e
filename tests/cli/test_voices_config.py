"""`voices/base_url` and `voices/dir` beside the voices named under `voices:` (edgetts/config/voices.py):
reserved keys, every existing config still valid, errors naming file, line and key."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from edgetts.config import Config, ConfigError, VoiceModelSettings, dump_config, parse_config
from edgetts.voice.install.index import PIPER_VOICES_URL


def test_the_reserved_keys_live_beside_the_named_voices() -> None:
    config = parse_config(
        "voices:\n  base_url: http://mirror.local/piper/\n  dir: /srv/voices\n"
        "  fr:\n    model: fr_FR-siwis-medium\n  es:\n    model: /v/es.onnx\n    threads: 2\n"
    )
    assert list(config.voices) == ["fr", "es"] and config.voices["fr"].model == "fr_FR-siwis-medium"
    assert list(config.all_voices()) == ["default", "fr", "es"]
    assert config.voice_library.base_url == "http://mirror.local/piper/"
    assert config.voices_dir() == Path("/srv/voices")
    # print-config shows them where they were written, and reads back the same
    shown = dump_config(config)
    assert "voices:\n  base_url: http://mirror.local/piper/\n  dir: /srv/voices\n  fr:\n" in shown
    assert "voice_library" not in shown and parse_config(shown) == config
    # a copy with another default voice keeps them
    assert replace(config, voice=replace(config.voice, threads=1)).voice_library == config.voice_library


def test_defaults_follow_the_state_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STATE_DIRECTORY", raising=False)
    assert Config().voices_dir() == Path("/var/lib/edgetts/voices")  # the first of the search folders
    assert Config().voice_library.base_url == PIPER_VOICES_URL
    assert parse_config("queue:\n  state_dir: /data/edgetts\n").voices_dir() == Path("/data/edgetts/voices")
    monkeypatch.setenv("STATE_DIRECTORY", "/var/lib/edgetts-b")
    assert Config().voices_dir() == Path("/var/lib/edgetts-b/voices")
    nulls = parse_config("voices:\n  base_url: null\n  dir: null\n")
    assert nulls.voice_library.base_url == PIPER_VOICES_URL and nulls.voices_dir() == Path("/var/lib/edgetts-b/voices")


def test_configs_written_before_the_reserved_keys_read_as_before() -> None:
    old = parse_config("voices:\n  fr:\n    model: /v/fr.onnx\n  quiet:\n")
    assert list(old.voices) == ["fr", "quiet"] and old.voices["quiet"] == VoiceModelSettings()
    assert old.voice_library == Config().voice_library
    assert parse_config("voices:\n").voices == {} and parse_config("voices: {}\n").voices == {}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "voices:\n  dir:\n    model: x\n",
            "f.yaml:2 voices/dir: 'dir' is reserved (voices/dir: a folder), not a voice name",
        ),
        (
            "voices:\n  base_url:\n    model: x\n",
            "f.yaml:2 voices/base_url: 'base_url' is reserved (voices/base_url: a URL)",
        ),
        (
            "voices:\n  fr: fr_FR-siwis-medium\n",
            "f.yaml:2 voices/fr: a voice is a mapping of settings (e.g. `fr: {model",
        ),
        (
            "voices:\n  base_url: ftp://x/y\n",
            "f.yaml:2 voices/base_url: 'ftp://x/y' is not an http(s):// or file:// URL",
        ),
        ("voices:\n  base_url: mirror.local\n", "f.yaml:2 voices/base_url: 'mirror.local' is not an http(s)://"),
        ("voices:\n  dir: ''\n", "f.yaml:2 voices/dir: must not be empty (null for the default)"),
        (
            "voices:\n  fr:\n    model: x\n  dir: 5\n",
            "f.yaml:4 voices/dir: expected VoiceModelSettings or a string, got 5",
        ),
    ],
)
def test_a_bad_entry_names_file_line_and_key(text: str, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "f.yaml")
    assert len(caught.value.problems) == 1 and caught.value.problems[0].startswith(problem), caught.value.problems


def test_check_config_reports_a_voice_named_dir(tmp_path: Path) -> None:
    path = tmp_path / "edgetts.yaml"
    path.write_text("voice:\n  threads: 1\nvoices:\n  base_url: https://m.example\n  dir:\n    model: default\n")
    done = subprocess.run(
        [sys.executable, "-m", "edgetts.cli", "check-config", str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip() == (
        f"{path}:5 voices/dir: 'dir' is reserved (voices/dir: a folder), not a voice name: name the voice otherwise"
    )
