"""Issue 19, "the same samples everywhere": a voice's noise drawn from a seed, so the same voice,
text and settings give the same PCM in every process; unseeded speech stays random."""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from edgetts.engine import SynthesisConfig
from edgetts.text.prepare import TextOptions
from edgetts.voice.catalog import default_voice_path
from edgetts.voice.model_cache import cache_key
from edgetts.voice.onnx_session import RuntimeOptions, create_session
from edgetts.voice.piper.seeded_model import SEEDED_NOISE
from edgetts.voice.piper.seeded_noise import (
    MAX_NODES,
    NOISE_KEYS,
    NOISE_SEED_INPUT,
    SeededNoiseError,
    add_seeded_noise,
    noise_keys,
    seed_feed,
    seed_for,
    sentence_seed,
)
from edgetts.voice.piper.voice import PiperVoice

ROOT = Path(__file__).resolve().parents[2]
TEXT = "Attention please. The next train to arrive at platform two is the service to Edinburgh. Mind the gap."
ZERO = SynthesisConfig(noise_scale=0.0, noise_w=0.0, normalize_audio=False)


@pytest.fixture(scope="module")
def voice() -> PiperVoice:
    """The default voice, whole sentences, as the daemon loads it (seeded graph from the cache)."""
    return PiperVoice.load(
        default_voice_path(),
        runtime=RuntimeOptions(threads=2),
        text=TextOptions(normalize=False),
        cache_dir=Path(os.environ["EDGETTS_CACHE_DIR"]) / "models",
    )


def _pcm(voice: PiperVoice, text: str, config: SynthesisConfig) -> list[np.ndarray]:
    return [c.to_int16() for c in voice.synthesize(text, config)]


# -- the generator on tiny graphs ------------------------------------------------------
def _graph(op: str, opset: int = 15, **attrs: object) -> onnx.ModelProto:
    like = op.endswith("Like")
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, None])] if like else []
    out = helper.make_tensor_value_info("y", int(attrs.get("dtype", 1)), None)  # type: ignore[call-overload]
    node = helper.make_node(op, ["x"] if like else [], ["y"], **attrs)
    model = helper.make_model(
        helper.make_graph([node], "t", inputs, [out]), opset_imports=[helper.make_opsetid("", opset)]
    )
    model.ir_version = 8
    return model


def _draw(model: onnx.ModelProto, seed: int, x: np.ndarray | None = None) -> np.ndarray:
    assert add_seeded_noise(model) == 1
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {NOISE_SEED_INPUT: seed_feed(seed)} | ({} if x is None else {"x": x})
    return np.asarray(session.run(None, feeds)[0])


def _ks_statistic(sample: np.ndarray) -> float:
    """Kolmogorov-Smirnov distance of ``sample`` from the standard normal."""
    z = np.sort(sample.astype(np.float64).ravel())
    cdf = 0.5 * (1.0 + np.frompyfunc(math.erf, 1, 1)(z / math.sqrt(2.0)).astype(np.float64))
    n = z.size
    return float(max(np.max(np.arange(1, n + 1) / n - cdf), np.max(cdf - np.arange(n) / n)))


def test_the_seeded_noise_is_standard_normal_and_independent() -> None:
    x = np.zeros((192, 3000), np.float32)  # 576,000 draws, z_p's shape for a 35 s sentence
    y = _draw(_graph("RandomNormalLike", dtype=1), 20251201, x)
    assert y.shape == x.shape and y.dtype == np.float32
    n = y.size
    assert abs(float(y.mean())) < 5 / math.sqrt(n) and abs(float(y.std()) - 1.0) < 5 / math.sqrt(2 * n)
    assert _ks_statistic(y) < 1.95 / math.sqrt(n)  # the KS test's 0.1 % critical value
    # Neighbours along time, across rows, and other seeds and nodes: uncorrelated.
    other = _draw(_graph("RandomNormalLike", dtype=1), 20251202, x)
    for a, b in ((y[:, 1:], y[:, :-1]), (y[1:], y[:-1]), (y, other)):
        assert abs(float(np.corrcoef(a.ravel(), b.ravel())[0, 1])) < 5 / math.sqrt(a.size)
    # Tails as a normal's: P(|z| > 3) = 0.27 %.
    assert abs(float(np.mean(np.abs(y) > 3.0)) - 0.0027) < 0.0005
    # The draw at a position does not depend on the tensor's length (nor on other positions).
    np.testing.assert_array_equal(_draw(_graph("RandomNormalLike", dtype=1), 20251201, x[:5, :101]), y[:5, :101])


def test_mean_scale_dtype_and_the_other_random_ops() -> None:
    x = np.zeros((4, 50000), np.float32)
    y = _draw(_graph("RandomNormalLike", dtype=11, mean=2.0, scale=3.0), 7, x)
    assert y.dtype == np.float64 and abs(y.mean() - 2.0) < 0.03 and abs(y.std() - 3.0) < 0.03
    like = _draw(_graph("RandomNormalLike"), 7, x)  # no dtype: the input's
    assert like.dtype == np.float32
    u = _draw(_graph("RandomUniformLike", low=-1.0, high=1.0), 7, x)
    assert u.min() > -1.0 and u.max() < 1.0 and abs(u.mean()) < 0.01 and abs(u.var() - 1 / 3) < 0.01
    fixed = _draw(_graph("RandomNormal", shape=[3, 70000]), 7)
    assert fixed.shape == (3, 70000) and abs(fixed.mean()) < 0.01 and abs(fixed.std() - 1.0) < 0.01
    uniform = _draw(_graph("RandomUniform", shape=[200000]), 7)
    assert uniform.shape == (200000,) and 0.0 < uniform.min() and uniform.max() < 1.0


def test_what_the_transform_cannot_seed_is_refused_clearly() -> None:
    with pytest.raises(SeededNoiseError, match="Bernoulli"):
        add_seeded_noise(_graph("Bernoulli"))
    with pytest.raises(SeededNoiseError, match="opset 13"):
        add_seeded_noise(_graph("RandomNormalLike", opset=13))
    plain = _graph("EyeLike")
    before = plain.SerializeToString()
    assert add_seeded_noise(plain) == 0 and plain.SerializeToString() == before
    many = _graph("RandomNormalLike")
    many.graph.node.extend(helper.make_node("RandomNormalLike", ["x"], [f"y{k}"]) for k in range(MAX_NODES))
    with pytest.raises(SeededNoiseError, match=f"{MAX_NODES + 1} random nodes"):
        add_seeded_noise(many)
    # A bare seed (the feed before the keys moved out of the graph) is refused, not read out of range.
    model = _graph("RandomNormalLike")
    add_seeded_noise(model)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    with pytest.raises(Exception, match="invalid dimensions"):
        session.run(None, {"x": np.zeros((2, 3), np.float32), NOISE_SEED_INPUT: np.array([7], np.int64)})


# -- the keys: computed once per run outside the graph, the same numbers ---------------
# Golden values of the generator as it was when the graph derived the keys from the seed itself
# (seeded_noise.VERSION 1), recorded before they moved out: not one sample may move.
_ANNOUNCEMENT_19 = 0x5B5134010107D139  # seed_for("announcement-19")
_OLD_KEYS = {  # seed: keys 0-7 (the two nodes of a Piper voice) and 31 (the last)
    0: [274405112, 2102022942, 1124915471, 2012770931, 105444290, 392863224, 949101641, 1052545259, 1228341567],
    2**21 - 1: [432167698, 1999312201, 541653158, 215235508, 464433615, 1755614870, 1622344473, 31151265, 420552570],
    2**42: [2141550477, 1462003750, 1820544948, 1065509756, 1301219477, 1416263038, 2031862616, 1409610230, 269926464],
    2**63 - 1: [365482226, 60070432, 1147725401, 1893688107, 1024759685, 1125475652, 572446578, 314970528, 334727915],
    _ANNOUNCEMENT_19: [
        1112317008,
        1572739390,
        1964859250,
        1563727087,
        1689247990,
        1631368198,
        467470616,
        916296572,
        1077652224,
    ],
}
# RandomNormalLike (node 0) on x (1, 2, 3), RandomUniform [2, 3] (node 1), RandomUniformLike on x
# (node 2), all float64: the normals, then the uniforms' integers h (a uniform is (2h + 1) / 2P).
_OLD_DRAWS = {
    2**63 - 1: (
        [
            0.5746694734316694,
            0.3050019301064039,
            0.5180190861228054,
            -0.6171460879956913,
            -0.30913413219933167,
            1.2803629655921214,
        ],
        [[704913661, 521292450, 1550456898], [1803655901, 501614533, 1633894197]],
        [[[354284718, 1735156572, 1036484469], [54509652, 899432657, 1425691149]]],
    ),
    _ANNOUNCEMENT_19: (
        [
            1.0067021521415092,
            -0.017731311542160722,
            1.6065945170627849,
            1.5243978358736456,
            -0.21182150749725828,
            1.7016054987509825,
        ],
        [[2026613119, 1705725535, 1548494276], [768587717, 967552347, 447524124]],
        [[[1505771438, 265423047, 1267372184], [1767016618, 728364848, 991467155]]],
    ),
}
_P = 2147483579


def test_the_keys_are_those_the_graph_derived_itself() -> None:
    assert seed_for("announcement-19") == _ANNOUNCEMENT_19
    for seed, keys in _OLD_KEYS.items():
        feed = seed_feed(seed)
        assert feed.dtype == np.int64 and feed.shape == (NOISE_KEYS,)
        assert [*feed[:8].tolist(), int(feed[31])] == keys, hex(seed)
        assert feed.tolist() == noise_keys(seed).tolist() and 0 <= feed.min() and feed.max() < _P
    assert seed_feed(2**63 + 5).tolist() == noise_keys(5).tolist() != noise_keys(6).tolist()
    assert noise_keys(2**21).tolist() != noise_keys(1).tolist()  # the 21-bit parts are absorbed, not summed


def test_the_draws_are_those_of_the_in_graph_derivation() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, None, None])
    nodes = [
        helper.make_node("RandomNormalLike", ["x"], ["a"], dtype=11),
        helper.make_node("RandomUniform", [], ["b"], shape=[2, 3], dtype=11),
        helper.make_node("RandomUniformLike", ["x"], ["c"], dtype=11),
    ]
    outs = [helper.make_tensor_value_info(n, TensorProto.DOUBLE, None) for n in "abc"]
    model = helper.make_model(helper.make_graph(nodes, "t", [x], outs), opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 8
    assert add_seeded_noise(model) == 3
    # The feed is only sliced into its keys (four per normal, two per uniform): no hashing of the seed left.
    assert [n.op_type for n in model.graph.node if NOISE_SEED_INPUT in n.input] == ["Slice"] * 8
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for seed, (normal, uniform, like) in _OLD_DRAWS.items():
        a, b, c = session.run(None, {"x": np.zeros((1, 2, 3), np.float32), NOISE_SEED_INPUT: seed_feed(seed)})
        # Integer hash and one IEEE division: exact on every machine.
        for value, want in ((b, uniform), (c, like)):
            h = np.rint((value * (2 * _P) - 1) / 2).astype(np.int64)
            assert h.tolist() == want and np.array_equal((2 * h + 1) / (2.0 * _P), value)
        # Box-Muller's log, cos and sin: the same bits here; another CPU's libm may round one ulp apart.
        np.testing.assert_array_max_ulp(a.ravel(), np.array(normal), maxulp=1)


def test_graphs_without_noise_take_no_seed(test_voices: dict[str, Path]) -> None:
    tiny = PiperVoice.load(test_voices["ok"])
    assert NOISE_SEED_INPUT not in {i.name for i in tiny.session.get_inputs()}
    seeded = [c.audio for c in tiny.synthesize("hello there.", SynthesisConfig(seed=5))]
    assert [a.tolist() for a in seeded] == [c.audio.tolist() for c in tiny.synthesize("hello there.")]


# -- the default voice -----------------------------------------------------------------
def test_zero_noise_is_bit_identical_to_the_shipped_graph(voice: PiperVoice) -> None:
    """The suite's references (piper-tts at noise 0) rely on it."""
    assert NOISE_SEED_INPUT in {i.name for i in voice.session.get_inputs()}
    shipped = create_session(default_voice_path(), RuntimeOptions(threads=2))
    for ids in voice.frontend.sentence_ids(TEXT):
        feeds = voice._feeds(ids, ZERO)
        plain = {k: v for k, v in feeds.items() if k != NOISE_SEED_INPUT}
        np.testing.assert_array_equal(voice.infer(ids, ZERO), shipped.run(None, plain)[0].reshape(-1))


def test_same_seed_same_samples_other_seed_other_samples(voice: PiperVoice) -> None:
    first = _pcm(voice, TEXT, SynthesisConfig(seed=11))
    again = _pcm(voice, TEXT, SynthesisConfig(seed=11))
    other = _pcm(voice, TEXT, SynthesisConfig(seed=12))
    assert [a.tobytes() for a in first] == [a.tobytes() for a in again]
    assert all(a.tobytes() != b.tobytes() for a, b in zip(first, other))


def test_unseeded_speech_stays_random(voice: PiperVoice) -> None:
    one, two = _pcm(voice, TEXT, SynthesisConfig()), _pcm(voice, TEXT, SynthesisConfig())
    assert all(a.tobytes() != b.tobytes() for a, b in zip(one, two))


def test_a_sentences_noise_depends_on_its_index_not_on_what_came_before(voice: PiperVoice) -> None:
    seeded = SynthesisConfig(seed=99)
    after_one = _pcm(voice, "Good morning. Mind the gap.", seeded)
    after_other = _pcm(voice, "Please stand clear of the doors. Mind the gap.", seeded)
    assert after_one[1].tobytes() == after_other[1].tobytes()
    # A text resumed at its second sentence (a preempted announcement) speaks it as before.
    resumed = [c.to_int16() for c in voice.synthesize_from("Good morning. Mind the gap.", seeded, 1)]
    assert resumed[-1].tobytes() == after_one[1].tobytes()
    # The same words at another index draw other noise.
    twice = _pcm(voice, "Mind the gap. Mind the gap.", seeded)
    assert twice[0].tobytes() != twice[1].tobytes()


def test_seeds_are_stable_63_bit_numbers() -> None:
    assert seed_for("platform-2/0815") == seed_for("platform-2/0815")
    assert seed_for("platform-2/0815") != seed_for("platform-2/0816")
    assert seed_for("") == 0x71D862214C7E0E0A  # sha256("")[:8] >> 1: fixed forever, every board agrees
    assert all(0 <= s < 2**63 for s in (seed_for("x" * 1000), sentence_seed(2**63 - 1, 10**6)))
    assert sentence_seed(1, 0) != sentence_seed(1, 1) != sentence_seed(2, 1)
    # The feed is the seed's keys (taken modulo 2^63): -1 is 2^63 - 1's.
    assert seed_feed(-1).tolist() == noise_keys(2**63 - 1).tolist() and seed_feed(None).dtype == np.int64


def test_the_seeded_graph_has_its_own_cache_entry(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(b"1")
    assert cache_key(model, "1.0", "all", SEEDED_NOISE.tag) != cache_key(model, "1.0", "all")


_CHILD = """
import hashlib, json, sys
from edgetts.engine import SynthesisConfig
from edgetts.text.prepare import TextOptions
from edgetts.voice.catalog import default_voice_path
from edgetts.voice.onnx_session import RuntimeOptions
from edgetts.voice.piper.seeded_noise import at_sentence, seed_for
from edgetts.voice.piper.speed import Cost, SpeedModel
from edgetts.voice.piper.voice import PiperVoice
from edgetts.voice.piper.windows import StreamingOptions

text, out = sys.argv[1], {}
config = SynthesisConfig(seed=seed_for("announcement-19"))
digest = lambda chunks: [hashlib.sha256(c.to_int16().tobytes()).hexdigest() for c in chunks]
whole = PiperVoice.load(default_voice_path(), runtime=RuntimeOptions(threads=2), text=TextOptions(normalize=False))
out["whole"] = digest(whole.synthesize(text, config))
streamed = PiperVoice.load(default_voice_path(), runtime=RuntimeOptions(threads=2), text=TextOptions(normalize=False),
                           streaming=StreamingOptions(fast_start_ids=24))
# The window plan follows the measured speed (issue 14): pinned, as one board's would be.
streamed.speed = SpeedModel(assumed={"front": Cost(0.005, 0.00025), "flow": Cost(0.003, 0.00014),
                                     "tail": Cost(0.0, 0.0008)})
out["streamed"] = digest(streamed.synthesize(text, config))
out["split_whole"] = digest(streamed.synthesize(text, config, stream=False))
# Fast start (the front run on the first ids, then on all of them), on the long sentence.
ids = streamed.frontend.sentence_ids(text)[1]
raw = b"".join(piece.tobytes() for piece, _ in streamed.stream(ids, at_sentence(config, 1), fast_start=True))
out["fast_start"] = hashlib.sha256(raw).hexdigest()
print(json.dumps(out))
"""


def test_same_seed_same_pcm_in_two_processes(voice: PiperVoice) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", _CHILD, TEXT], env=env, capture_output=True, text=True, check=True, timeout=600
            ).stdout
        )
        for _ in range(2)
    ]
    assert runs[0] == runs[1]
    assert len(runs[0]["whole"]) == 3 and len(set(runs[0]["whole"])) == 3
    # A streaming voice's whole sentences run the split parts: still the whole model's samples.
    assert runs[0]["split_whole"] == runs[0]["whole"]
    # And they are the samples this process made (the same thread count: another count may move
    # a sample by one LSB, docs/voices.md, "Seeded noise").
    here = [
        hashlib.sha256(a.tobytes()).hexdigest()
        for a in _pcm(voice, TEXT, SynthesisConfig(seed=seed_for("announcement-19")))
    ]
    assert runs[0]["whole"] == here
