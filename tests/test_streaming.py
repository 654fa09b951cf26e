"""Issue 4: the streaming decoder speaks exactly what whole-sentence decoding speaks, sooner."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
from conftest import corpus_lines

from edgetts.engine import SynthesisConfig
from edgetts.onnx_session import RuntimeOptions
from edgetts.piper_voice import PiperVoice, StreamingOptions
from edgetts.textproc import TextOptions
from edgetts.vits_stream import plan_windows
from edgetts.voices import default_voice_path

RAW = SynthesisConfig(noise_scale=0.0, noise_w=0.0, normalize_audio=False)


def _load(cache_dir: Path | None, **kwargs) -> PiperVoice:  # type: ignore[no-untyped-def]
    return PiperVoice.load(
        default_voice_path(), runtime=RuntimeOptions(threads=2), text=TextOptions(normalize=False),
        cache_dir=cache_dir, streaming=True, **kwargs,
    )


@pytest.fixture(scope="module")
def split_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("split-cache")


@pytest.fixture(scope="module")
def streaming_voice(split_cache: Path) -> PiperVoice:
    voice = _load(split_cache)
    assert voice.split is not None and voice.streaming is not None
    return voice


def _sdr_db(reference: np.ndarray, estimate: np.ndarray) -> float:
    error = np.sum((reference.astype(np.float64) - estimate) ** 2)
    return float("inf") if error == 0 else float(10 * np.log10(np.sum(reference.astype(np.float64) ** 2) / error))


@pytest.mark.parametrize("line", corpus_lines())
def test_streamed_equals_whole_and_seams_do_not_click(streaming_voice: PiperVoice, line: str) -> None:
    streamed = list(streaming_voice.synthesize(line, RAW))
    whole = list(streaming_voice.synthesize(line, RAW, stream=False))
    assert [c.sentence_index for c in streamed if c.is_last_in_sentence] == [c.sentence_index for c in whole]
    for sentence in whole:
        parts = [c for c in streamed if c.sentence_index == sentence.sentence_index]
        assert [c.is_last_in_sentence for c in parts] == [False] * (len(parts) - 1) + [True]
        assert all(c.phoneme_ids == sentence.phoneme_ids for c in parts)
        audio = np.concatenate([c.audio for c in parts])
        assert audio.shape == sentence.audio.shape
        assert _sdr_db(sentence.audio, audio) >= 30.0
        # No click: the largest sample-to-sample jump across each seam is no larger
        # than the largest jump anywhere in the whole-sentence signal.
        own = float(np.max(np.abs(np.diff(sentence.audio))))
        for seam in np.cumsum([c.audio.size for c in parts])[:-1]:
            jump = float(np.max(np.abs(np.diff(audio[seam - 2 : seam + 2]))))
            assert jump <= own


def test_first_chunk_is_small_and_later_ones_grow(streaming_voice: PiperVoice) -> None:
    text = "Attention all staff: a fire drill will take place today at two in the afternoon."
    chunks = list(streaming_voice.synthesize(text, RAW))
    assert streaming_voice.split is not None and streaming_voice.split.hop == 256
    options = StreamingOptions()
    # 4 frames of 256 samples, minus the half crossfade held back for the seam: 896 samples, 41 ms.
    assert chunks[0].audio.size == options.first_frames * 256 - options.crossfade // 2
    assert chunks[0].audio.size <= 0.05 * streaming_voice.sample_rate
    sizes = [c.audio.size for c in chunks]
    assert len(sizes) >= 3 and sizes[1] > sizes[0] and max(sizes) <= options.max_frames * 256 + 256


def test_windows_cover_the_sentence_and_are_bounded() -> None:
    for frames in (1, 3, 4, 5, 21, 137, 340, 1769):
        windows = plan_windows(frames, 4, 8.0, 128)
        assert windows[0][0] == 0 and windows[-1][1] == frames
        assert all(a[1] == b[0] for a, b in zip(windows, windows[1:]))
        assert windows[0][1] == min(frames, 4)
        assert all(0 < end - start <= 128 for start, end in windows)


def test_streamed_gain_is_fixed_per_voice(streaming_voice: PiperVoice) -> None:
    text = "Someone is at the front door."
    raw = np.concatenate([c.audio for c in streaming_voice.synthesize(text, RAW)])
    normal = SynthesisConfig(noise_scale=0.0, noise_w=0.0, volume=0.5)
    loud = np.concatenate([c.audio for c in streaming_voice.synthesize(text, normal)])
    assert streaming_voice.split is not None
    gain = streaming_voice.split.gain
    assert 1.0 < gain < 4.0  # the joe voice peaks at about 0.6 raw
    np.testing.assert_allclose(loud, np.clip(raw * gain * 0.5, -1, 1), atol=1e-6)
    # whole-sentence chunks keep piper's per-sentence peak normalisation
    whole = next(iter(streaming_voice.synthesize(text, normal, stream=False))).audio
    assert float(np.max(np.abs(whole))) == pytest.approx(0.5, abs=1e-6)


def test_unsplittable_voice_falls_back_to_whole_sentences(
    test_voices: dict[str, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="edgetts.piper_voice")
    for _ in range(2):
        voice = PiperVoice.load(test_voices["ok"], runtime=RuntimeOptions(threads=1), cache_dir=tmp_path,
                                streaming=True, text=TextOptions(normalize=False))
        assert voice.split is None and voice.streaming is None
        chunks = list(voice.synthesize("Good morning. Mind the gap.", SynthesisConfig(normalize_audio=False)))
        assert [(c.sentence_index, c.is_last_in_sentence) for c in chunks] == [(0, True), (1, True)]
    reasons = [r.getMessage() for r in caplog.records if "streaming off" in r.getMessage()]
    assert len(reasons) == 1 and "no convolutional decoder" in reasons[0]  # why, and only once
    assert not list(tmp_path.glob("*.split-*"))


def test_split_cache_is_reused_and_rebuilt_when_corrupt(streaming_voice: PiperVoice, split_cache: Path) -> None:
    assert streaming_voice.split is not None
    front = Path(streaming_voice.split.front)
    assert front.parent == split_cache and front.name.endswith(".front.onnx")
    stamp = front.stat().st_mtime_ns
    reference = np.concatenate([c.audio for c in streaming_voice.synthesize("Mind the gap.", RAW)])
    again = _load(split_cache)  # loads the stored split: nothing rewritten
    assert front.stat().st_mtime_ns == stamp
    np.testing.assert_allclose(np.concatenate([c.audio for c in again.synthesize("Mind the gap.", RAW)]),
                               reference, atol=1e-5)
    front.write_bytes(b"not a model")  # a torn write, a full disk
    healed = _load(split_cache)
    assert healed.split is not None and front.stat().st_size > 1_000_000
    np.testing.assert_allclose(np.concatenate([c.audio for c in healed.synthesize("Mind the gap.", RAW)]),
                               reference, atol=1e-5)
    meta = next(split_cache.glob("*.split-*.json"))
    meta.write_text("{")
    assert _load(split_cache).split is not None
    assert meta.read_text().startswith("{\"frame_inputs\"")


def test_without_a_cache_the_split_is_made_in_memory() -> None:
    voice = _load(None)
    assert voice.split is not None and isinstance(voice.split.front, bytes)
    assert len(list(voice.synthesize("Mind the gap.", RAW))) >= 2
