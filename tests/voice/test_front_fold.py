"""Issue 40: fast start's prefix front runs folded at its fixed length, with the dynamic front's numbers.

The folded front (edgetts.voice.piper.front_fold) is made once beside the split and checked against the
dynamic front; here it is held to that again on the corpus, its noise bit for bit, and its operators
counted (no timing: tools/bench_front.py measures what it saves).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgetts.engine import SynthesisConfig
from edgetts.text.prepare import TextOptions
from edgetts.voice.catalog import default_voice_path
from edgetts.voice.onnx_session import RuntimeOptions
from edgetts.voice.piper import front_check, front_fold, front_noise, split_cache
from edgetts.voice.piper.check_feeds import model_feeds
from edgetts.voice.piper.front_fold import FOLD_VERSION, TOLERANCE, FoldError, FrontSessions
from edgetts.voice.piper.front_noise import BITS_INPUT, noise_bits_feeds
from edgetts.voice.piper.lead import Windows
from edgetts.voice.piper.seeded_noise import add_seeded_noise, at_sentence, seed_feed
from edgetts.voice.piper.voice import PiperVoice
from edgetts.voice.piper.windows import StreamingOptions

from support.paths import corpus_lines
from tools.bench_front import optimised_ops

LENGTH = 64
LONG = (
    "Attention all passengers waiting on platform four for the delayed evening service to Manchester "
    "Piccadilly calling at Stockport and Macclesfield because of a signalling fault near the station."
)


def _load(cache: Path, fast_start_ids: int = LENGTH) -> PiperVoice:
    return PiperVoice.load(
        default_voice_path(),
        runtime=RuntimeOptions(threads=2),
        text=TextOptions(normalize=False),
        cache_dir=cache,
        streaming=StreamingOptions(fast_start_ids=fast_start_ids),
    )


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fold-cache")


@pytest.fixture(scope="module")
def voice(cache: Path) -> PiperVoice:
    voice = _load(cache)
    assert isinstance(voice.session, FrontSessions) and set(voice.session.folded) == {LENGTH}
    return voice


def _fold_file(cache: Path, length: int = LENGTH) -> Path:
    (found,) = cache.glob(f"*.front{length}.fold{FOLD_VERSION}.onnx")
    return found


def _prefixes(voice: PiperVoice, count: int = 12) -> list[list[int]]:
    ids = [ids for line in corpus_lines() for ids in voice.frontend.sentence_ids(line) if len(ids) > LENGTH]
    assert len(ids) >= count
    return [s[:LENGTH] for s in ids[:count]]


def _probe(model: Path, noise: list[str] | None = None) -> tuple[ort.InferenceSession, list[str], list[str]]:
    """A session of ``model`` that also gives its noise tensors (found in it, or ``noise``); (session,
    outputs, noise)."""
    proto = onnx.load(str(model))
    outputs = [o.name for o in proto.graph.output]
    noise = front_check.noise_outputs(proto) if noise is None else noise
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(front_check.with_outputs(proto, noise), options, providers=["CPUExecutionProvider"])
    return session, outputs, noise


def test_the_folded_front_gives_the_dynamic_front_s_numbers_and_noise(voice: PiperVoice, cache: Path) -> None:
    assert voice.split is not None
    dynamic, outputs, noise = _probe(Path(voice.split.front))
    folded, folded_outputs, _ = _probe(_fold_file(cache), noise)
    assert folded_outputs == outputs and len(noise) == 2  # the durations' noise and the prior's
    config = voice.config
    scales = np.array([config.noise_scale, config.length_scale, config.noise_w], dtype=np.float32)
    for k, ids in enumerate(_prefixes(voice)):
        feeds = model_feeds(ids, scales, None, seed_feed(1000 + k))
        want = dict(zip(outputs + noise, dynamic.run(outputs + noise, feeds)))
        # The folded front takes its durations' noise integers from numpy (front_noise), as FrontSessions gives them.
        bits = noise_bits_feeds((i.name for i in folded.get_inputs()), feeds)
        assert len(bits) == 2  # the durations' two uniforms; the prior's shape depends on the frames
        got = dict(zip(outputs + noise, folded.run(outputs + noise, {**feeds, **bits})))
        for name in noise:
            assert np.array_equal(want[name], got[name]) and float(np.std(want[name])) > 0.5
        assert np.array_equal(want[voice.split.durations], got[voice.split.durations])  # the same frames
        for name in outputs:
            assert want[name].shape == got[name].shape
            assert float(np.max(np.abs(want[name] - got[name]))) <= TOLERANCE
    meta = json.loads(_fold_file(cache).with_suffix(".json").read_text())
    assert meta["ok"] and meta["length"] == LENGTH and meta["max_abs_diff"] <= TOLERANCE


def test_the_folded_front_runs_far_fewer_operators(voice: PiperVoice, cache: Path) -> None:
    assert voice.split is not None
    before, after = optimised_ops(Path(voice.split.front)), optimised_ops(_fold_file(cache))
    assert before > 2000 and after < 0.36 * before  # 2,460 -> 852 for the joe voice
    folded = onnx.load(str(_fold_file(cache)), load_external_data=False)
    kinds = [n.op_type for n in folded.graph.node]
    # Every layer norm is one operator (front_fuse): none of the chains' means is left.
    assert kinds.count("LayerNormalization") == 36 and "ReduceMean" not in kinds
    # The attention's changes of position frame are gathers, the FFN's Pads the convolutions' own (front_moves).
    assert kinds.count("GatherElements") >= 12 + 21 and kinds.count("Pad") < 20
    assert "NonZero" not in kinds  # the spline's masks are dense: every shape static
    assert kinds.count("Shape") <= 2  # what is left depends on the frames (the durations)


def test_fast_start_runs_the_folded_front_and_speaks_the_same(voice: PiperVoice, cache: Path) -> None:
    assert isinstance(voice.session, FrontSessions)
    runs: list[int] = []
    folded = voice.session.folded[LENGTH]

    class Recorder:
        def run(self, outputs, feeds, run_options=None):  # type: ignore[no-untyped-def]
            runs.append(int(feeds["input"].shape[-1]))
            return folded.run(outputs, feeds, run_options)

    ids = voice.frontend.sentence_ids(LONG)[0]
    config = at_sentence(SynthesisConfig(seed=7), 0)
    fast = Windows(4, 8.0, LENGTH)  # fast start on a 64-id prefix, as the plan takes it for this sentence

    def speak() -> np.ndarray:
        return np.concatenate([audio for audio, _last in voice.stream(ids, config, windows=fast)])

    voice.session.folded[LENGTH] = Recorder()
    try:
        audio = speak()
    finally:
        voice.session.folded[LENGTH] = folded
    assert runs == [LENGTH] and len(ids) > 1.5 * LENGTH  # the prefix's run; the whole sentence's ran dynamic
    voice.session.folded.clear()  # the same voice on its dynamic front alone
    try:
        dynamic = speak()
    finally:
        voice.session.folded[LENGTH] = folded
    assert audio.shape == dynamic.shape
    # The folded front's layer norms are fused (front_fuse): their float rounding differs in the
    # last bits, so the audio is the same within the fold's tolerance, no longer bit for bit.
    np.testing.assert_allclose(audio, dynamic, atol=TOLERANCE)


def test_a_stored_fold_is_reused(voice: PiperVoice, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stamp = _fold_file(cache).stat().st_mtime_ns

    def refused(front: bytes, length: int) -> bytes:
        raise AssertionError("folded again")

    monkeypatch.setattr(front_fold, "fold_front", refused)
    again = _load(cache)
    assert isinstance(again.session, FrontSessions) and set(again.session.folded) == {LENGTH}
    assert _fold_file(cache).stat().st_mtime_ns == stamp


def test_a_front_that_cannot_be_folded_runs_dynamic(
    voice: PiperVoice, cache: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[int] = []

    def failing(front: bytes, length: int) -> bytes:
        calls.append(length)
        raise FoldError("planted")

    monkeypatch.setattr(front_fold, "fold_front", failing)
    split_cache._FOLD_LOGGED.clear()
    caplog.set_level(logging.WARNING, logger="edgetts.voice.piper.split_cache")
    for _ in range(2):
        other = _load(cache, fast_start_ids=48)  # another prefix: not folded yet
        assert not isinstance(other.session, FrontSessions)
        assert len(list(other.synthesize(LONG, SynthesisConfig(seed=1)))) >= 2
    assert calls == [48]  # the failure is stored: not tried again at every load
    meta = json.loads(next(cache.glob(f"*.front48.fold{FOLD_VERSION}.json")).read_text())
    assert meta["ok"] is False and meta["reason"] == "planted"
    warned = [r.getMessage() for r in caplog.records if "unfolded" in r.getMessage()]
    assert len(warned) == 1 and "48 ids" in warned[0] and "planted" in warned[0]


def test_a_fold_that_fails_its_check_runs_dynamic(
    voice: PiperVoice, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(front_fold, "TOLERANCE", -1.0)  # no difference is small enough
    other = _load(cache, fast_start_ids=40)
    assert not isinstance(other.session, FrontSessions)
    meta = json.loads(next(cache.glob(f"*.front40.fold{FOLD_VERSION}.json")).read_text())
    assert meta["ok"] is False and "differs from the front's" in meta["reason"]
    assert not list(cache.glob(f"*.front40.fold{FOLD_VERSION}.onnx"))


# -- the fold on small graphs ------------------------------------------------------------
def _masked_graph(seeded: bool) -> onnx.ModelProto:
    """ids -> x (1, 1, n); x * 3 where |x| <= 2 by boolean-mask indexing (NonZero, GatherND, ScatterND),
    x elsewhere; the noise of a seeded RandomNormalLike added (``seeded``)."""
    ids = helper.make_tensor_value_info("input", TensorProto.INT64, ["batch", "ids"])
    lengths = helper.make_tensor_value_info("input_lengths", TensorProto.INT64, ["batch"])
    scales = helper.make_tensor_value_info("scales", TensorProto.FLOAT, [3])
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    consts = [
        numpy_helper.from_array(np.array(v, dtype=t), n)
        for n, v, t in (("axis", [1], np.int64), ("two", 2.0, np.float32), ("three", 3.0, np.float32))
    ]
    nodes = [
        helper.make_node("Cast", ["input"], ["f"], to=TensorProto.FLOAT),
        helper.make_node("Sub", ["f", "two"], ["g"]),
        helper.make_node("Unsqueeze", ["g", "axis"], ["x"]),
        helper.make_node("Abs", ["x"], ["a"]),
        helper.make_node("LessOrEqual", ["a", "two"], ["m"]),
        helper.make_node("NonZero", ["m"], ["nz"]),
        helper.make_node("Transpose", ["nz"], ["idx"], perm=[1, 0]),
        helper.make_node("GatherND", ["x", "idx"], ["inside"]),
        helper.make_node("Mul", ["inside", "three"], ["scaled"]),
        helper.make_node("ScatterND", ["x", "idx", "scaled"], ["y0"]),
    ]
    if seeded:
        nodes += [
            helper.make_node("RandomNormalLike", ["y0"], ["n"]),
            helper.make_node("ReduceSum", ["scales"], ["s"], keepdims=1),
            helper.make_node("Mul", ["n", "s"], ["ns"]),
            helper.make_node("Add", ["y0", "ns"], ["y"]),
        ]
    else:
        nodes.append(helper.make_node("Identity", ["y0"], ["y"]))
    graph = helper.make_graph(nodes, "masked", [ids, lengths, scales], [out], consts)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 8
    if seeded:
        assert add_seeded_noise(model) == 1
    return model


def _session(model: bytes) -> ort.InferenceSession:
    return ort.InferenceSession(model, providers=["CPUExecutionProvider"])


def test_boolean_mask_indexing_is_made_dense_with_the_same_values() -> None:
    model = _masked_graph(seeded=False).SerializeToString()
    folded = front_fold.fold_front(model, 6)
    assert "NonZero" not in [n.op_type for n in onnx.load_from_string(folded).graph.node]
    dynamic, fixed = _session(model), _session(folded)
    for ids in ([0, 1, 2, 3, 4, 5], [9, 9, 2, 0, 7, 1], [2, 2, 2, 2, 2, 2], [9, 8, 7, 6, 9, 8]):
        feeds = {
            "input": np.array([ids], dtype=np.int64),
            "input_lengths": np.array([6], dtype=np.int64),
            "scales": np.zeros(3, np.float32),
        }
        want, got = dynamic.run(None, feeds)[0], fixed.run(None, feeds)[0]
        assert np.array_equal(want, got), (ids, want, got)
    assert want.tolist() == [[[7.0, 6.0, 5.0, 4.0, 7.0, 6.0]]]  # none inside: all kept as they were


def test_the_check_requires_the_noise_bit_for_bit() -> None:
    model = _masked_graph(seeded=True)
    front = model.SerializeToString()
    folded = front_fold.fold_front(front, 5)
    check = [{"input": np.array([[3, 1, 4, 1, 5]], np.int64), "scales": np.array([0.0, 1.0, 0.0], np.float32)}]
    feeds = front_check.fold_feeds(check, 5)
    assert front_check.check_folded(front, folded, feeds, _session) == 0.0
    tampered = onnx.load_from_string(folded)
    # The generator's float64 constants (Box-Muller's, the uniforms' scale) a millionth off: its
    # integers are computed outside the folded graph now (front_noise; the next test holds those).
    for init in tampered.graph.initializer:
        value = numpy_helper.to_array(init)
        if init.name.startswith("edgetts_noise/") and not init.dims and value.dtype == np.float64:
            init.CopyFrom(numpy_helper.from_array(np.asarray(value * (1 + 1e-6), dtype=value.dtype), init.name))
    with pytest.raises(FoldError, match="noise"):
        front_check.check_folded(front, tampered.SerializeToString(), feeds, _session)


def test_the_noise_integers_computed_outside_the_graph_are_held_to_the_graph_s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = _masked_graph(seeded=True)
    front = model.SerializeToString()
    folded = front_fold.fold_front(front, 5)
    cut = [i.name for i in onnx.load_from_string(folded).graph.input if i.name.startswith(BITS_INPUT)]
    assert len(cut) == 2  # the normal's two uniforms, their hashing in numpy now
    check = [{"input": np.array([[3, 1, 4, 1, 5]], np.int64), "scales": np.array([0.0, 1.0, 0.0], np.float32)}]
    feeds = front_check.fold_feeds(check, 5)
    assert front_check.check_folded(front, folded, feeds, _session) == 0.0
    right = front_noise.uniform_bits
    monkeypatch.setattr(front_noise, "uniform_bits", lambda *args: right(*args) ^ 1)  # one bit off
    with pytest.raises(FoldError, match="noise"):
        front_check.check_folded(front, folded, feeds, _session)
