#!/usr/bin/env python3
"""Generate a tiny ``edgetts-ar-1`` voice (random LM + toy decoder + manifest) for tests.

    python -m tools.make_ar_test_voice OUT_DIR [--block-size 8] [--layout prompt_prefix]

The LM is a randomly initialised Qwen2 (2 layers, hidden 64, 4 heads, 2 KV heads,
vocab 291: 256 byte tokens, sos, task_id, 32 speech tokens, one stop token),
written with tools/qwen2_graph.py.  The decoder is deterministic:
embedding -> 1-D conv (kernel 3, so one token of context each side) -> tanh ->
linear upsample to 960 samples per token -> tanh (24 kHz at 25 tokens/s).
Needs numpy and onnx only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tools.export_qwen2_onnx import random_qwen2_weights, save_model
from tools.qwen2_graph import LmShape, build_block_lm

SPEECH_VOCAB = 32
SOS, TASK_ID, SPEECH_OFFSET = 256, 257, 258
STOP = SPEECH_OFFSET + SPEECH_VOCAB  # 290
VOCAB = STOP + 1
SAMPLE_RATE = 24000
SAMPLES_PER_TOKEN = 960
TINY_SHAPE = LmShape(
    vocab_size=VOCAB,
    hidden_size=64,
    intermediate_size=128,
    num_layers=2,
    num_heads=4,
    num_kv_heads=2,
    head_dim=16,
)
"""The one tiny Qwen2: this voice's LM, and (with its own vocabulary) the export test's HF
checkpoint and tools/bench_ar.py's smoke run."""
DECODER = {
    "path": "decoder.onnx",
    "samples_per_token": SAMPLES_PER_TOKEN,
    "left_context_tokens": 1,
    "lookahead_tokens": 1,
}
TOKENS = {
    "sos": SOS,
    "task_id": TASK_ID,
    "speech_offset": SPEECH_OFFSET,
    "speech_vocab_size": SPEECH_VOCAB,
    "stop": [STOP],
}
SAMPLING = {"top_k": 25, "top_p": 0.8, "win_size": 10, "tau_r": 0.1}
KV_SHAPE = {
    "num_layers": TINY_SHAPE.num_layers,
    "num_kv_heads": TINY_SHAPE.num_kv_heads,
    "head_dim": TINY_SHAPE.head_dim,
}


def build_decoder(seed: int = 1, channels: int = 8) -> onnx.ModelProto:
    """speech_tokens [T] int64 -> audio [T * 960] float32, receptive field +-1 token."""
    rng = np.random.default_rng(seed)
    emb = rng.standard_normal((SPEECH_VOCAB, channels)).astype(np.float32)
    conv_w = (rng.standard_normal((channels, channels, 3)) * 0.5).astype(np.float32)
    up = (rng.standard_normal((channels, SAMPLES_PER_TOKEN)) * 0.5).astype(np.float32)
    nodes = [
        helper.make_node("Gather", ["emb", "speech_tokens"], ["e"], axis=0),  # [T, C]
        helper.make_node("Transpose", ["e"], ["et"], perm=[1, 0]),
        helper.make_node("Unsqueeze", ["et", "ax0"], ["x"]),  # [1, C, T]
        helper.make_node("Conv", ["x", "conv_w"], ["c"], pads=[1, 1], kernel_shape=[3]),
        helper.make_node("Tanh", ["c"], ["ct"]),
        helper.make_node("Squeeze", ["ct", "ax0"], ["cs"]),
        helper.make_node("Transpose", ["cs"], ["h"], perm=[1, 0]),  # [T, C]
        helper.make_node("MatMul", ["h", "up"], ["u"]),  # [T, 960]
        helper.make_node("Tanh", ["u"], ["ut"]),
        helper.make_node("Mul", ["ut", "gain"], ["ug"]),
        helper.make_node("Reshape", ["ug", "flat"], ["audio"]),
    ]
    inits = [
        numpy_helper.from_array(a, n)
        for n, a in [
            ("emb", emb),
            ("conv_w", conv_w),
            ("up", up),
            ("ax0", np.array([0], np.int64)),
            ("gain", np.array(0.5, np.float32)),
            ("flat", np.array([-1], np.int64)),
        ]
    ]
    graph = helper.make_graph(
        nodes,
        "edgetts_ar_toy_decoder",
        [helper.make_tensor_value_info("speech_tokens", TensorProto.INT64, ["T"])],
        [helper.make_tensor_value_info("audio", TensorProto.FLOAT, ["S"])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def make_voice(
    out_dir: str | Path,
    *,
    block_size: int = 8,
    layout: str = "prompt_prefix",
    seed: int = 0,
    prompt_text: str = "this is the speaker prompt",
    prompt_speech_len: int = 20,
    max_sequence_tokens: int = 512,
    chunk_tokens: int = 8,
    min_len_ratio: float = 1.0,
    max_len_ratio: float = 4.0,
    max_tokens_per_segment: int = 40,
    crossfade_samples: int = 0,
) -> Path:
    """Write lm.onnx, decoder.onnx and voice.json into ``out_dir``; returns the manifest path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    weights = random_qwen2_weights(TINY_SHAPE, seed=seed, scale=0.2)
    save_model(build_block_lm(TINY_SHAPE, weights), out / "lm.onnx")
    onnx.save_model(build_decoder(seed + 1), str(out / "decoder.onnx"))
    rng = np.random.default_rng(seed + 2)
    manifest = {
        "format": "edgetts-ar-1",
        "name": "tiny-ar",
        "sample_rate": SAMPLE_RATE,
        "layout": layout,
        "lm": {"path": "lm.onnx", "vocab_size": VOCAB},
        "decoder": {**DECODER, "chunk_tokens": chunk_tokens, "crossfade_samples": crossfade_samples},
        "tokenizer": {"type": "bytes", "offset": 0},
        "tokens": TOKENS,
        "prompt": {
            "text_ids": list(prompt_text.encode("utf-8")),
            "speech_tokens": rng.integers(0, SPEECH_VOCAB, prompt_speech_len).tolist(),
        },
        "sampling": {**SAMPLING, "min_len_ratio": min_len_ratio, "max_len_ratio": max_len_ratio},
        "kv": {**KV_SHAPE, "block_size": block_size, "max_sequence_tokens": max_sequence_tokens},
        "text": {"max_tokens_per_segment": max_tokens_per_segment},
    }
    path = out / "voice.json"
    path.write_text(json.dumps(manifest, indent=1))
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--block-size", type=int, default=8)
    ap.add_argument("--layout", choices=("cosyvoice2", "prompt_prefix"), default="prompt_prefix")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print(make_voice(args.out_dir, block_size=args.block_size, layout=args.layout, seed=args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
