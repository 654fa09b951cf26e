"""tools/export_qwen2_onnx.py on a tiny random Hugging Face Qwen2 checkpoint."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnxruntime as ort
import pytest

from edgetts.voice.ar.kv_cache import BlockPool, KvLayout
from edgetts.voice.ar.lm import BlockLm
from edgetts.voice.onnx_session import RuntimeOptions

from support.paths import ROOT
from tools.make_ar_test_voice import TINY_SHAPE


def _torch():  # type: ignore[no-untyped-def]
    """torch, imported only by the tests that run it: at the module's top, its ~3 s import would
    be paid by every collection of the suite (each xdist worker's, the realtime pass's)."""
    return pytest.importorskip("torch", reason="torch is needed to build the reference Qwen2 checkpoint")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    torch = _torch()
    transformers = pytest.importorskip("transformers", reason="transformers builds the reference Qwen2")
    cfg = transformers.Qwen2Config(
        vocab_size=300,
        hidden_size=TINY_SHAPE.hidden_size,
        intermediate_size=TINY_SHAPE.intermediate_size,
        num_hidden_layers=TINY_SHAPE.num_layers,
        num_attention_heads=TINY_SHAPE.num_heads,
        num_key_value_heads=TINY_SHAPE.num_kv_heads,
        max_position_embeddings=1024,
        rope_theta=10000.0,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    model = transformers.Qwen2ForCausalLM(cfg).eval()
    d = tmp_path_factory.mktemp("qwen2")
    model.save_pretrained(d)
    return d, model


def run_cli(*args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "tools.export_qwen2_onnx", *args],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    )


def test_block_export_matches_transformers_with_cache(checkpoint, tmp_path):
    d, model = checkpoint
    torch = _torch()
    run_cli(str(d), str(tmp_path / "lm.onnx"))
    ids = np.random.default_rng(0).integers(0, 300, 30)
    with torch.no_grad():
        ref = model(torch.tensor(ids[None])).logits[0].numpy()
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(tmp_path / "lm.onnx"), so, providers=["CPUExecutionProvider"])
    lm = BlockLm(sess, KvLayout(2, 2, 16, 4), 300, tmp_path / "lm.onnx")
    pool = BlockPool(lm.layout, 16)
    p = pool.new_sequence()
    lm.forward(p, ids[:9])
    prefix = p.freeze()
    with pool.new_sequence(prefix=prefix) as seq:
        got = [lm.forward(seq, ids[9:14])] + [lm.forward(seq, ids[i : i + 1]) for i in range(14, 30)]
    np.testing.assert_allclose(np.concatenate(got), ref[9:], atol=1e-4, rtol=0)


def test_naive_export_matches_transformers_and_concats(checkpoint, tmp_path):
    d, model = checkpoint
    torch = _torch()
    run_cli(str(d), str(tmp_path / "naive.onnx"), "--naive")
    sess = ort.InferenceSession(str(tmp_path / "naive.onnx"), providers=["CPUExecutionProvider"])
    names = {i.name for i in sess.get_inputs()}
    assert {"past_key_values.0.key", "past_key_values.1.value"} <= names
    assert {"present.0.key", "present.1.value"} <= {o.name for o in sess.get_outputs()}
    ids = np.random.default_rng(1).integers(0, 300, 12)
    with torch.no_grad():
        out = model(torch.tensor(ids[None]), use_cache=True)
    past = {f"past_key_values.{i}.{t}": np.zeros((1, 2, 0, 16), np.float32) for i in range(2) for t in ("key", "value")}
    res = sess.run(None, {"input_ids": ids[None], "position_ids": np.arange(12)[None], **past})
    np.testing.assert_allclose(res[0][0], out.logits[0].numpy(), atol=1e-4, rtol=0)
    hf_k0 = out.past_key_values.layers[0].keys if hasattr(out.past_key_values, "layers") else out.past_key_values[0][0]
    np.testing.assert_allclose(res[1], hf_k0.numpy(), atol=1e-5, rtol=0)
    assert res[1].shape == (1, 2, 12, 16)


def test_rejects_a_non_qwen2_directory(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "llama"}')
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "tools.export_qwen2_onnx",
            str(tmp_path),
            str(tmp_path / "x.onnx"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 1 and "not a Qwen2 checkpoint" in r.stderr


def test_large_models_get_external_weights_that_load(tmp_path):
    from tools.export_qwen2_onnx import build_block_lm, random_qwen2_weights, save_model

    save_model(
        build_block_lm(TINY_SHAPE, random_qwen2_weights(TINY_SHAPE)),
        tmp_path / "lm.onnx",
        external_above=0,
    )
    assert (tmp_path / "lm.onnx.data").stat().st_size > (tmp_path / "lm.onnx").stat().st_size
    lm = BlockLm.load(tmp_path / "lm.onnx", KvLayout(2, 2, 16, 4), TINY_SHAPE.vocab_size, RuntimeOptions(threads=1))
    with BlockPool(lm.layout, 4).new_sequence() as seq:
        assert lm.forward(seq, np.arange(5)).shape == (5, TINY_SHAPE.vocab_size)
