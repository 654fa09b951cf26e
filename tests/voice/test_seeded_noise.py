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
    NOISE_SEED_INPUT,
    SeededNoiseError,
    add_seeded_noise,
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
    assert int(seed_feed(-1)[0]) == 2**63 - 1 and seed_feed(None).dtype == np.int64


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
