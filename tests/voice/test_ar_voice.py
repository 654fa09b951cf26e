"""ArVoice behind the engine's Voice protocol: streaming, reproducibility, segmenting."""

from __future__ import annotations

import numpy as np
import pytest

from edgetts.engine import AudioChunk, SynthesisConfig, Voice
from edgetts.errors import UnspeakableTextError
from edgetts.voice.ar.voice import ArVoice
from edgetts.voice.onnx_session import RuntimeOptions

from tools.make_ar_test_voice import make_voice

ONE_THREAD = RuntimeOptions(threads=1)


@pytest.fixture(scope="module", params=["prompt_prefix", "cosyvoice2"])
def voice(request, tmp_path_factory):
    path = make_voice(tmp_path_factory.mktemp(request.param), layout=request.param)
    v = ArVoice.load(path, runtime=ONE_THREAD)
    yield v
    v.close()


def test_is_a_voice_and_speaks_hello_world(voice):
    assert isinstance(voice, Voice)
    chunks = list(voice.synthesize("hello world", seed=1))
    assert chunks and all(isinstance(c, AudioChunk) for c in chunks)
    audio = np.concatenate([c.audio for c in chunks])
    assert audio.dtype == np.float32 and audio.size > 0 and np.abs(audio).max() <= 1.0
    assert np.abs(audio).max() > 0.01
    assert all(c.sample_rate == 24000 == voice.sample_rate for c in chunks)


def test_streams_several_chunks_per_sentence_equal_to_one_decode(voice):
    text = "The next train to Basel leaves from platform seven."
    chunks = list(voice.synthesize(text, seed=11))
    assert len(chunks) >= 3
    assert {c.sentence_index for c in chunks} == {0}
    assert [c.is_last_in_sentence for c in chunks] == [False] * (len(chunks) - 1) + [True]
    segments = voice.tokens_for(text, seed=11)  # 51 bytes: two segments of <= 40 text tokens
    assert len(segments) == 2
    whole = np.concatenate([voice.decode(t) for t in segments])
    np.testing.assert_allclose(np.concatenate([c.audio for c in chunks]), whole, atol=1e-6, rtol=0)
    assert len(whole) == sum(len(t) for t in segments) * 960


def test_reproducible_with_a_seed(voice):
    a = np.concatenate([c.audio for c in voice.synthesize("Doors closing.", seed=3)])
    b = np.concatenate([c.audio for c in voice.synthesize("Doors closing.", seed=3)])
    c = np.concatenate([c.audio for c in voice.synthesize("Doors closing.", seed=4)])
    np.testing.assert_array_equal(a, b)
    assert a.shape != c.shape or not np.array_equal(a, c)


def test_sentences_are_indexed_and_kv_blocks_return_to_the_pool(voice):
    in_use = voice.pool.blocks_in_use
    assert in_use == voice.pool.layout.blocks_for(voice.prefix.length)  # only the shared prefix
    chunks = list(voice.synthesize("First one. Second one! Third?", seed=2))
    assert sorted({c.sentence_index for c in chunks}) == [0, 1, 2]
    assert sum(c.is_last_in_sentence for c in chunks) == 3
    assert voice.pool.blocks_in_use == in_use
    gen = voice.synthesize("Abandoned half way through this sentence.", seed=2)
    next(gen)
    assert voice.pool.blocks_in_use > in_use
    gen.close()
    assert voice.pool.blocks_in_use == in_use


@pytest.mark.parametrize("text", ["", "   ", " ... !? "])
def test_unspeakable_text_raises_before_yielding(voice, text):
    with pytest.raises(UnspeakableTextError):
        voice.synthesize(text)


def test_volume_applies(voice):
    a = np.concatenate([c.audio for c in voice.synthesize("Volume.", seed=5)])
    b = np.concatenate([c.audio for c in voice.synthesize("Volume.", SynthesisConfig(volume=0.5), seed=5)])
    np.testing.assert_allclose(b, a * 0.5, atol=1e-7)


def test_long_text_is_segmented_to_fit_the_kv_limit(tmp_path):
    path = make_voice(tmp_path, max_sequence_tokens=64, max_len_ratio=3.0, chunk_tokens=4)
    v = ArVoice.load(path, runtime=ONE_THREAD)
    assert v.max_segment_tokens == 15  # 1 task_id + 15 text + 45 speech tokens <= 64
    text = "a rather long announcement without any full stop that goes on and on and on"
    segments = v.segments(text)
    assert len(segments) == 1 and len(segments[0]) > 3
    assert all(len(s) <= 15 for s in segments[0])
    chunks = list(v.synthesize(text, seed=0))
    assert {c.sentence_index for c in chunks} == {0}
    assert chunks[-1].is_last_in_sentence and sum(c.is_last_in_sentence for c in chunks) == 1
    assert v.pool.blocks_in_use == v.pool.layout.blocks_for(v.prefix.length)


def test_generation_stops_at_max_len_when_stop_is_masked_throughout(tmp_path):
    # min_len == max_len: the stop token is never allowed, so exactly max_len tokens come out
    v = ArVoice.load(make_voice(tmp_path, min_len_ratio=3.0, max_len_ratio=3.0), runtime=ONE_THREAD)
    segments = v.tokens_for("hi there", seed=0)  # 8 byte tokens -> max_len 24
    assert [len(s) for s in segments] == [24]
    chunks = list(v.synthesize("hi there", seed=0))
    assert sum(len(c.audio) for c in chunks) == 24 * 960


def test_crossfade_touches_only_the_fade_in_of_each_later_chunk(tmp_path):
    from edgetts.voice.ar.voice import crossfade

    v = ArVoice.load(make_voice(tmp_path, crossfade_samples=480), runtime=ONE_THREAD)
    text = "Crossfaded chunks, please."
    chunks = list(v.synthesize(text, seed=6))
    assert len(chunks) >= 3
    (tokens,) = v.tokens_for(text, seed=6)
    whole = v.decode(tokens)
    streamed = np.concatenate([c.audio for c in chunks])
    assert streamed.shape == whole.shape
    faded = np.zeros(len(whole), dtype=bool)
    start = 0
    for i, c in enumerate(chunks):
        if i > 0:
            faded[start : start + 480] = True
        start += len(c.audio)
    np.testing.assert_allclose(streamed[~faded], whole[~faded], atol=1e-6, rtol=0)
    assert not np.allclose(streamed[faded], whole[faded], atol=1e-6)  # the tail guess was mixed in
    np.testing.assert_allclose(
        crossfade(np.ones(4, np.float32), np.zeros(6, np.float32)),
        [0.8, 0.6, 0.4, 0.2, 0, 0],
        atol=1e-6,
    )


def test_interleaved_announcements_share_the_pool_while_blocks_last(voice):
    base = voice.pool.blocks_in_use
    solo = [c.audio for c in voice.synthesize("Another one.", seed=1)]
    first = voice.synthesize("One announcement at a time.", seed=1)
    next(first)
    second = [c.audio for c in voice.synthesize("Another one.", seed=1)]  # while first is mid-way
    assert all(np.array_equal(a, b) for a, b in zip(solo, second, strict=True))
    assert voice.pool.blocks_in_use > base
    first.close()
    assert voice.pool.blocks_in_use == base


def test_a_prepared_text_is_read_from_its_source(voice):
    """The AR model reads written text with its own tokenizer: a Prepared text speaks as its source."""
    from edgetts.text.prepare import TextOptions, prepare_text

    text = "Platform 4 at 9:42."
    prepared = prepare_text(text, TextOptions())
    assert prepared.key != text  # the Piper front end's reading differs from what the AR voice reads
    a = np.concatenate([c.audio for c in voice.synthesize(prepared, seed=2)])
    b = np.concatenate([c.audio for c in voice.synthesize(text, seed=2)])
    np.testing.assert_array_equal(a, b)
    with pytest.raises(UnspeakableTextError):
        voice.synthesize(prepare_text("   ", TextOptions()))
