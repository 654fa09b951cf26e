"""Config: typed, validated as a whole, `FILE:LINE key/path: problem`, CLI verbs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from edgetts.config import Config, ConfigError, dump_config, load_config, parse_config

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "config" / "edgetts.yaml"


def problems(text: str, tmp_path: Path) -> list[str]:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return [p.replace(str(path), "F") for p in info.value.problems]


def test_empty_file_is_all_defaults() -> None:
    config = parse_config("")
    assert config == Config(device=config.device)  # device.id defaults to the host name
    assert config.mqtt.port == 1883 and config.voice.model == "default"
    assert config.announce_topics[0] == f"edgetts/{config.device.id}/announce"
    assert "edgetts/all/announce" in config.announce_topics


def test_shipped_config_is_valid_and_documents_every_key() -> None:
    config = load_config(SHIPPED)
    text = SHIPPED.read_text()

    # every key of the effective config appears in the shipped file, each with a comment
    def keys(d: dict, prefix: str = "") -> list[str]:
        out = []
        for k, v in d.items():
            if isinstance(v, dict) and k != "voices":
                out += keys(v, f"{prefix}{k}/")
            else:
                out.append(f"{prefix}{k}")
        return out

    lines = text.splitlines()
    for key in keys(config.to_dict()):
        *parents, leaf = key.split("/")
        start = 0
        for level, parent in enumerate(parents):  # find the key inside its section
            start = next(i for i in range(start, len(lines)) if lines[i].startswith("  " * level + f"{parent}:"))
        idx = [i for i in range(start, len(lines)) if lines[i].lstrip("# ").startswith(f"{leaf}:")]
        assert idx, f"{key} is not in {SHIPPED.name}"
        i = idx[0]
        assert "#" in lines[i].split(":", 1)[1] or lines[i - 1].strip().startswith("#"), key


def test_every_problem_names_file_line_and_key_path(tmp_path: Path) -> None:
    text = (
        "device:\n  id: pi-1\n"
        "mqtt:\n  port: 99999\n"
        "audio:\n  lead_in_ms: soon\n"
        "queue:\n  default_priority: urgent\n"
        "bogus: 1\n"
    )
    assert problems(text, tmp_path) == [
        "F:4 mqtt/port: 99999 is not a TCP port (1-65535)",
        "F:6 audio/lead_in_ms: expected an integer, got 'soon'",
        "F:8 queue/default_priority: expected one of 'emergency', 'high', 'normal', 'low', got 'urgent'",
        "F:9 bogus: unknown section (known: audio, cache, clips, cpu, device, duck, fallback, homeassistant, http, "
        "keepalive, lexicon, logging, loudness, memory, mqtt, normalize, queue, schedule, sync, voice, voices, "
        "wyoming)",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mqtt:\n  hots: x\n", "F:2 mqtt/hots: unknown key"),
        ("mqtt:\n  tls:\n    enabled: true\n    ca_file: /nonexistent.pem\n", "F:4 mqtt/tls/ca_file: no such file"),
        ("mqtt:\n  username: u\n  password: p\n  password_file: /x\n", "F:4 mqtt/password_file: set only one"),
        ("mqtt:\n  password: p\n", "F:2 mqtt/password: a password needs mqtt/username"),
        ("mqtt:\n  topic_prefix: a/+/b\n", "F:2 mqtt/topic_prefix:"),
        ("audio:\n  preempt_fade_ms: 50\n", "F:2 audio/preempt_fade_ms: must be 0-30"),
        ("audio:\n  volume: 1.5\n", "F:2 audio/volume: must be 0-1"),
        ("audio:\n  sample_format: int8\n", "F:2 audio/sample_format: expected one of"),
        # (issue 6: a missing voice file is no config error any more: the daemon starts on clips)
        ("voice:\n  model: ''\n", "F:2 voice/model: must not be empty"),
        ("voice:\n  streaming: false\n  fast_start_ids: 5000\n", "F:3 voice/fast_start_ids: must be 0-4096"),
        ("voice:\n  streaming: true\n  fast_start_ids: -1\n", "F:3 voice/fast_start_ids: must be 0-4096"),
        ("fallback:\n  rules:\n    - match: 'fire('\n      clip: alarm\n", "F:3 fallback/rules/0/match: bad regular"),
        (
            "fallback:\n  rules:\n    - match: fire\n      clip: ../x\n",
            "F:4 fallback/rules/0/clip: '../x' is not a clip",
        ),
        ("fallback:\n  rules:\n    - clip: x\n", "F:3 fallback/rules/0/match: required key missing"),
        ("fallback:\n  default_clip: /etc/passwd\n", "F:2 fallback/default_clip: '/etc/passwd' is not a clip"),
        ('fallback:\n  default_clip: "a\\n"\n', "F:2 fallback/default_clip:"),
        ("fallback:\n  deadline_ms: 10\n", "F:2 fallback/deadline_ms: must be 50-600000"),
        ("cache:\n  max_mb: -1\n", "F:2 cache/max_mb: must be >= 0"),
        ("cache:\n  min_uses: 0\n", "F:2 cache/min_uses: must be 1-100"),
        ("loudness:\n  target_dbfs: 3\n", "F:2 loudness/target_dbfs: must be -60 to 0 dBFS"),
        ("voices:\n  fr:\n    modle: x\n", "F:3 voices/fr/modle: unknown key"),
        ("voices:\n  default:\n    model: default\n", "F:2 voices/default: same name as voice/name"),
        ("voice:\n  degrade_rtf: 0\n", "F:2 voice/degrade_rtf: must be 0.05-10"),
        ("voice:\n  degrade_rtf: fast\n", "F:2 voice/degrade_rtf: expected a number, got 'fast'"),
        (
            "voice:\n  degrade_to: quick\n",
            "F:2 voice/degrade_to: 'quick' is not int8, a configured voice (default) or a path to an .onnx file",
        ),
        ("voices:\n  int8:\n    model: x\n", "F:2 voices/int8: 'int8' is reserved: `degrade_to: int8` names"),
        ("voice:\n  name: int8\n", "F:2 voice/name: 'int8' is reserved"),
        ("voice:\n  degrade_to: default\n", "F:2 voice/degrade_to: names this voice itself"),
        ("voice:\n  degrade_to: ''\n", "F:2 voice/degrade_to: must not be empty"),
        ("voices:\n  fr:\n    model: x\n    degrade_to: nope\n", "F:4 voices/fr/degrade_to: 'nope' is not int8"),
        ("device:\n  id: 'a/b'\n", "F:2 device/id:"),
        ('device:\n  id: "hall-1\\n"\n', "F:2 device/id:"),  # a newline would end up in every topic
        ("device:\n  groups: [ok, 'no#']\n", "F:2 device/groups/1:"),
        ("mqtt:\n  port: 1\n  port: 2\n", "F:3 mqtt/port: duplicate key"),
        ("mqtt: [1, 2]\n", "F:1 mqtt: expected a mapping"),
        ("mqtt:\n  port: 1883\n   host: x\n", "F:3 (yaml):"),
        ("- a\n- b\n", "F:1 (top): expected a mapping"),
        ("queue:\n  max_length: true\n", "F:2 queue/max_length: expected an integer, got True"),
        ("normalize:\n  time_24h: 24h\n", "F:2 normalize/time_24h: expected one of"),
        ("cpu:\n  inference_cores: [4, 4]\n", "F:2 cpu/inference_cores: a CPU is listed twice"),
        ("cpu:\n  inference_cores: fast\n", "F:2 cpu/inference_cores: expected"),
        ("keepalive:\n  interval_s: 0.1\n", "F:2 keepalive/interval_s: must be 0 (off) or 1-86400"),
        ("memory:\n  lock: sometimes\n", "F:2 memory/lock: expected true or false"),
        ("normalize:\n  colour: red\n", "F:2 normalize/colour: unknown key"),
        ("lexicon:\n  Reading: 5\n", "F:2 lexicon/Reading: expected a string"),
        ("lexicon:\n  '  ': x\n", "F:1 lexicon: "),
        ("wyoming:\n  satellite_uri: tcp://0.0.0.0:10200\n", "F:2 wyoming/satellite_uri: must differ from uri"),
        ("wyoming:\n  satellite_uri: tcp://0.0.0.0\n", "F:2 wyoming/satellite_uri: 'tcp://0.0.0.0': a tcp:// uri"),
        (
            "wyoming:\n  announce: false\n  satellite_uri: tcp://0.0.0.0:10700\n",
            "F:3 wyoming/satellite_uri: a satellite takes announcements",
        ),
    ],
)
def test_problems(tmp_path: Path, text: str, expected: str) -> None:
    got = problems(text, tmp_path)
    assert len(got) == 1 and got[0].startswith(expected), got


def test_values_are_typed() -> None:
    c = parse_config(
        "audio:\n  device: 3\n  sample_rate: 48000\n  volume: 1\nmqtt:\n  protocol: 5\n"
        "voices:\n  fr:\n    model: default\n    length_scale: 1.2\n"
    )
    assert c.audio.device == 3 and c.audio.volume == 1.0 and isinstance(c.audio.volume, float)
    assert c.mqtt.protocol == "5"
    assert list(c.all_voices()) == ["default", "fr"] and c.voices["fr"].length_scale == 1.2


def test_print_config_round_trips() -> None:
    c = parse_config("device:\n  id: x1\n  groups: [hall]\nvoices:\n  fr: {model: default}\n")
    again = parse_config(dump_config(c))
    assert again == c
    assert "test" not in yaml.safe_load(dump_config(c))["mqtt"]["topic_prefix"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    # the verbs as cli_daemon.register() defines them (edgetts.cli.main wires the same ones)
    return subprocess.run(
        [sys.executable, "-m", "edgetts.cli", *args], capture_output=True, text=True, timeout=60, cwd=ROOT
    )


def test_check_and_print_config_verbs(tmp_path: Path) -> None:
    good = _cli("check-config", str(SHIPPED))
    assert good.returncode == 0, good.stderr
    bad_file = tmp_path / "bad.yaml"
    bad_file.write_text("mqtt:\n  port: x\n")
    bad = _cli("check-config", str(bad_file))
    assert bad.returncode == 1
    assert bad.stderr.strip() == f"{bad_file}:2 mqtt/port: expected an integer, got 'x'"
    assert "Traceback" not in bad.stderr
    shown = _cli("print-config", str(SHIPPED))
    assert shown.returncode == 0
    assert parse_config(shown.stdout) == load_config(SHIPPED)
    missing = _cli("check-config", str(tmp_path / "none.yaml"))
    assert missing.returncode == 1 and "cannot read" in missing.stderr


def test_text_settings_reach_the_voice(test_voices: dict[str, Path]) -> None:
    from edgetts.config import VoiceModelSettings
    from edgetts.daemon.assets import load_configured_voice

    config = parse_config("normalize:\n  time_24h: 12h\nlexicon:\n  Reading: /ɹˈɛdɪŋ/\n  Leicester: Lester\n", "F")
    text = config.text_options()
    assert text.normalize_options is not None and text.normalize_options.time_24h == "12h"
    voice = load_configured_voice(VoiceModelSettings(model=str(test_voices["ok"])), text)
    plain = load_configured_voice(VoiceModelSettings(model=str(test_voices["ok"])), Config().text_options())
    spoken = "".join(voice.frontend.phonemize("Reading at 14:05")[0])
    assert spoken.startswith("ɹˈɛdɪŋ ")
    assert "".join(plain.frontend.phonemize("Reading at 14:05")[0]) != spoken
    assert "tˈuː ˈoʊ fˈaɪv pˈiːʲ ˈɛm" in spoken  # "two oh five p m"
    assert voice.frontend.phonemize("Leicester") == plain.frontend.phonemize("Lester")


def test_missing_voice_file_is_left_to_the_daemon(tmp_path: Path) -> None:
    """Issue 6: the daemon must start when its voice is missing (it runs on clips, degraded)."""
    path = tmp_path / "c.yaml"
    path.write_text("voice:\n  model: /no/such/voice.onnx\n")
    assert load_config(path).voice.model == "/no/such/voice.onnx"


def test_fallback_cache_and_loudness_sections(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = parse_config(
        "clips:\n  dir: /srv/clips\n"
        "fallback:\n  default_clip: chime_sorry\n  deadline_ms: 1500\n"
        "  rules:\n    - {match: 'fire|evacuat', clip: fire_alarm}\n    - {match: train, clip: trains}\n"
        "cache:\n  dir: /var/cache/x\n  max_mb: 12.5\n"
        "loudness:\n  target_dbfs: -18\n"
    )
    assert config.clips.dir == "/srv/clips"
    assert config.fallback.default_clip == "chime_sorry" and config.fallback.deadline_ms == 1500
    assert [(r.match, r.clip) for r in config.fallback.rules] == [("fire|evacuat", "fire_alarm"), ("train", "trains")]
    assert config.cache.max_mb == 12.5 and str(config.cache.resolved_dir()) == "/var/cache/x"
    assert config.loudness.target_dbfs == -18.0
    # defaults: cache under systemd's CacheDirectory only; max_mb 0 turns it off
    monkeypatch.delenv("CACHE_DIRECTORY", raising=False)
    assert Config().cache.resolved_dir() is None
    monkeypatch.setenv("CACHE_DIRECTORY", str(tmp_path))
    assert Config().cache.resolved_dir() == tmp_path / "phrases"
    assert parse_config("cache:\n  max_mb: 0\n").cache.resolved_dir() is None
    assert Config().fallback.deadline_ms == 4000 and Config().fallback.default_clip is None


def test_degrade_to_names_a_voice_or_an_onnx_file() -> None:
    """issue 14: the faster variant of a voice too slow for the board."""
    config = parse_config(
        "voice:\n  degrade_to: fast\n  degrade_rtf: 0.6\nvoices:\n  fast:\n    model: a.onnx\n"
        "  fr:\n    model: fr.onnx\n    degrade_to: /v/fr-int8.onnx\n"
    )
    assert (config.voice.degrade_to, config.voice.degrade_rtf) == ("fast", 0.6)
    assert config.voices["fr"].degrade_to == "/v/fr-int8.onnx" and config.voices["fr"].degrade_rtf == 0.8
    # By default a voice degrades to its own int8 variant (edgetts.daemon.pacing.int8); null: to nothing.
    assert config.voices["fast"].degrade_to == "int8"
    assert parse_config("voice:\n  degrade_to: null\n").voice.degrade_to is None
    assert parse_config("voice:\n  degrade_to: int8\n").voice.degrade_to == "int8"
