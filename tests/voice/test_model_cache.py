"""The optimised-model cache: same audio, faster loads, and a bad entry heals itself."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from edgetts.engine import SynthesisConfig
from edgetts.text.prepare import TextOptions
from edgetts.voice.catalog import default_voice_path
from edgetts.voice.model_cache import cache_key, default_cache_dir
from edgetts.voice.onnx_session import RuntimeOptions
from edgetts.voice.piper.seeded_model import SEEDED_NOISE
from edgetts.voice.piper.voice import PiperVoice

TEXT = "Order number 57 is ready for collection at counter 3."
ZERO = SynthesisConfig(noise_scale=0.0, noise_w=0.0)


def _audio(voice: PiperVoice) -> np.ndarray:
    return np.concatenate([c.audio for c in voice.synthesize(TEXT, ZERO)])


def _load(cache_dir: Path | None) -> PiperVoice:
    return PiperVoice.load(
        default_voice_path(),
        runtime=RuntimeOptions(threads=1),
        text=TextOptions(normalize=False),
        cache_dir=cache_dir,
    )


def test_cached_model_speaks_exactly_like_the_original(tmp_path: Path) -> None:
    reference = _audio(_load(None))
    first = _load(tmp_path)  # optimises and stores
    entries = list(tmp_path.glob("*.onnx"))
    assert len(entries) == 1 and entries[0].stat().st_size > 10_000_000
    # The voice's graph runs with seeded noise (issue 19): its optimised form is cached as that variant.
    assert entries[0].name == cache_key(default_voice_path(), ort.__version__, "all", SEEDED_NOISE.tag)
    second = _load(tmp_path)  # loads the stored graph
    np.testing.assert_array_equal(_audio(first), reference)
    np.testing.assert_allclose(_audio(second), reference, atol=1e-5)
    assert not list(tmp_path.glob(".*.part"))


def test_corrupt_cache_entry_is_rebuilt(tmp_path: Path) -> None:
    _load(tmp_path)
    entry = next(tmp_path.glob("*.onnx"))
    entry.write_bytes(b"not a model")
    voice = _load(tmp_path)
    assert entry.stat().st_size > 10_000_000
    assert len(_audio(voice)) > 22050


def test_unwritable_cache_is_skipped(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    assert len(_audio(_load(blocked / "models"))) > 22050


def test_cache_dir_resolution(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("EDGETTS_CACHE_DIR", str(tmp_path))
    assert default_cache_dir() == tmp_path / "models"
    monkeypatch.setenv("EDGETTS_CACHE_DIR", "")
    assert default_cache_dir() is None
    monkeypatch.delenv("EDGETTS_CACHE_DIR")
    monkeypatch.setenv("CACHE_DIRECTORY", "/var/cache/edgetts")
    assert default_cache_dir() == Path("/var/cache/edgetts/models")
    monkeypatch.delenv("CACHE_DIRECTORY")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "edgetts" / "models"


def test_an_older_entry_of_the_same_model_is_removed(tmp_path: Path) -> None:
    _load(tmp_path)
    current = next(tmp_path.glob("*.onnx"))
    older = current.with_name(current.name[: -len("0123456789abcdef.onnx")] + "0123456789abcdef.onnx")
    current.rename(older)  # as if written by another onnxruntime version
    other_model = tmp_path / "another-voice-00000000-0123456789abcdef.onnx"
    other_model.write_bytes(b"x")
    _load(tmp_path)
    assert sorted(p.name for p in tmp_path.glob("*.onnx")) == sorted([current.name, other_model.name])


def test_key_changes_with_the_model(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(b"1")
    before = cache_key(model, "1.0", "all")
    os.utime(model, ns=(1, 1))
    assert cache_key(model, "1.0", "all") != before
    assert cache_key(model, "1.0", "basic") != cache_key(model, "1.0", "all")
