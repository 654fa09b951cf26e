"""The command line, as a user runs it: exit codes, files written, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np

from edgetts import __version__
from edgetts.audio.wav import read_wav
from edgetts.engine import SynthesisConfig

from support.alsa import Capture


def edgetts(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "edgetts.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env if env is not None else dict(os.environ),
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str], needle: str) -> None:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("edgetts: error:")]
    assert len(errors) == 1, result.stderr
    assert needle in errors[0]


def test_version() -> None:
    result = edgetts("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"edgetts {__version__}"


def test_synth_writes_the_voice_output(tmp_path: Path, default_voice) -> None:  # type: ignore[no-untyped-def]
    text = "Doctor Patel, please call extension 3105."
    out = tmp_path / "out.wav"
    result = edgetts("synth", text, "-o", str(out), "--noise-scale", "0", "--noise-w", "0")
    assert result.returncode == 0, result.stderr
    with wave.open(str(out)) as wav:
        assert (wav.getnchannels(), wav.getsampwidth(), wav.getframerate()) == (1, 2, 22050)
    audio, _ = read_wav(out)
    expected = np.concatenate(
        [c.to_int16() for c in default_voice.synthesize(text, SynthesisConfig(noise_scale=0, noise_w=0))]
    )
    assert audio.size == expected.size
    assert np.max(np.abs(np.round(audio * 32767).astype(int) - expected.astype(int))) <= 2


def test_synth_text_file_numbers_by_line(tmp_path: Path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text("Mind the gap.\n\nShift change in ten minutes.\n")
    result = edgetts("synth", "--text-file", str(lines), "--out-dir", str(tmp_path / "wavs"), "--length-scale", "0.9")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "wavs").iterdir()) == ["0001.wav", "0003.wav"]
    for name in ("0001.wav", "0003.wav"):
        audio, rate = read_wav(tmp_path / "wavs" / name)
        assert rate == 22050 and audio.size > 22050 // 2 and np.max(np.abs(audio)) > 0.5


def test_text_file_error_names_the_line(tmp_path: Path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text("Mind the gap.\n?!?! ...\n")
    result = edgetts("synth", "--text-file", str(lines), "--out-dir", str(tmp_path / "wavs"))
    assert_one_line_error(result, f"{lines}:2: nothing speakable")
    assert [p.name for p in (tmp_path / "wavs").iterdir()] == ["0001.wav"]


def test_phonemes_prints_one_line_per_sentence() -> None:
    result = edgetts("phonemes", "Mind the gap. Please stand clear.", "--no-normalize")
    assert result.returncode == 0
    assert result.stdout.splitlines() == ["mˈaɪnd ðə ɡˈæp.", "plˈiːz stˈænd klˈɪɹ."]
    ids = edgetts("phonemes", "Mind the gap.", "--ids", "--no-normalize")
    rows = [json.loads(line) for line in ids.stdout.splitlines()]
    assert len(rows) == 1 and rows[0][:2] == [1, 0] and rows[0][-1] == 2


def test_voices_lists_the_default() -> None:
    result = edgetts("voices", "--json")
    assert result.returncode == 0
    names = [v["name"] for v in json.loads(result.stdout)]
    assert "en_US-joe-medium" in names


def test_missing_voice_file(tmp_path: Path) -> None:
    assert_one_line_error(
        edgetts("synth", "Hello.", "-o", str(tmp_path / "x.wav"), "--voice", str(tmp_path / "gone.onnx")),
        "voice model not found",
    )
    assert not (tmp_path / "x.wav").exists()


def test_unreadable_voice_json(tmp_path: Path, test_voices: dict[str, Path]) -> None:
    model = tmp_path / "v.onnx"
    model.write_bytes(test_voices["ok"].read_bytes())
    model.with_name("v.onnx.json").write_bytes(b"\xff\xfe not json")
    assert_one_line_error(
        edgetts("synth", "Hello.", "-o", str(tmp_path / "x.wav"), "--voice", str(model)), "cannot read voice config"
    )


def test_nothing_speakable(tmp_path: Path) -> None:
    assert_one_line_error(edgetts("synth", "?!?! ...", "-o", str(tmp_path / "x.wav")), "nothing speakable")
    assert not (tmp_path / "x.wav").exists()


def test_say_plays_the_speech_through_alsa(alsa_capture: Capture, default_voice) -> None:  # type: ignore[no-untyped-def]
    text = "Shift change in ten minutes."
    result = edgetts("say", text, "--noise-scale", "0", "--noise-w", "0", "--threads", "2")
    assert result.returncode == 0, result.stderr
    played = alsa_capture.pcm()
    expected = np.concatenate(
        [c.to_int16() for c in default_voice.synthesize(text, SynthesisConfig(noise_scale=0, noise_w=0))]
    )
    assert played.size >= expected.size
    assert np.array_equal(played[: expected.size], expected)
    assert not played[expected.size :].any()  # at most the device's zero padding after it


def test_say_without_an_audio_device(no_sound_card: dict[str, str]) -> None:
    result = edgetts("say", "Hello.", env=no_sound_card)
    assert_one_line_error(result, "audio output device")
    assert result.stderr.strip().splitlines() == [
        line for line in result.stderr.strip().splitlines() if line.startswith("edgetts:")
    ], "library noise on stderr"


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    result = edgetts("synth", "Hello.", "-o", str(tmp_path / "x.wav"), "--length-scale", "-1")
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_synth_with_an_autoregressive_voice_manifest(tmp_path: Path) -> None:
    from tools.make_ar_test_voice import make_voice

    manifest = make_voice(tmp_path / "ar")
    out = tmp_path / "ar.wav"
    result = edgetts("synth", "Doors closing. Mind the gap.", "-o", str(out), "--voice", str(manifest))
    assert result.returncode == 0, result.stderr
    audio, rate = read_wav(out)
    assert rate > 0 and audio.size > rate // 10 and np.max(np.abs(audio)) > 0.01
    env = {**os.environ, "EDGETTS_VOICE_PATH": str(tmp_path / "ar")}
    listed = json.loads(edgetts("voices", "--json", env=env).stdout)
    assert any(v["family"] == "ar" and v["path"] == str(manifest) for v in listed)
