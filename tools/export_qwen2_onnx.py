#!/usr/bin/env python3
"""Export a Hugging Face ``Qwen2ForCausalLM`` checkpoint to edgetts' ONNX LM contract.

    python -m tools.export_qwen2_onnx CHECKPOINT_DIR OUT.onnx            # block-cache contract
    python -m tools.export_qwen2_onnx CHECKPOINT_DIR OUT.onnx --naive    # HF-layout concat export

The checkpoint's weights are read with ``safetensors`` (``pytorch_model.bin`` needs
torch) and the graph is written by tools/qwen2_graph.py (whose docstring states both
contracts) with the ``onnx`` helper API, so the export does not depend on torch's ONNX
exporter and is the same on every torch version.  The runtime (``edgetts/voice/ar``)
needs only onnxruntime and numpy.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import onnx

from tools.qwen2_graph import LmShape, build_block_lm, build_naive_lm


def random_qwen2_weights(shape: LmShape, seed: int = 0, scale: float = 0.05) -> dict[str, np.ndarray]:
    """Random weights in the HF naming (for test voices and benchmarks; no torch needed)."""
    rng = np.random.default_rng(seed)
    h, d = shape.hidden_size, shape.head_dim

    def r(*dims: int) -> np.ndarray:
        return (rng.standard_normal(dims, dtype=np.float32) * scale).astype(np.float32)

    w: dict[str, np.ndarray] = {"model.embed_tokens.weight": r(shape.vocab_size, h)}
    for i in range(shape.num_layers):
        p = f"model.layers.{i}."
        w[p + "self_attn.q_proj.weight"] = r(shape.num_heads * d, h)
        w[p + "self_attn.q_proj.bias"] = r(shape.num_heads * d)
        w[p + "self_attn.k_proj.weight"] = r(shape.num_kv_heads * d, h)
        w[p + "self_attn.k_proj.bias"] = r(shape.num_kv_heads * d)
        w[p + "self_attn.v_proj.weight"] = r(shape.num_kv_heads * d, h)
        w[p + "self_attn.v_proj.bias"] = r(shape.num_kv_heads * d)
        w[p + "self_attn.o_proj.weight"] = r(h, shape.num_heads * d)
        w[p + "mlp.gate_proj.weight"] = r(shape.intermediate_size, h)
        w[p + "mlp.up_proj.weight"] = r(shape.intermediate_size, h)
        w[p + "mlp.down_proj.weight"] = r(h, shape.intermediate_size)
        w[p + "input_layernorm.weight"] = (1.0 + r(h)).astype(np.float32)
        w[p + "post_attention_layernorm.weight"] = (1.0 + r(h)).astype(np.float32)
    w["model.norm.weight"] = (1.0 + r(h)).astype(np.float32)
    w["lm_head.weight"] = r(shape.vocab_size, h)
    return w


def load_hf_qwen2(checkpoint: Path) -> tuple[LmShape, dict[str, np.ndarray]]:
    """Read ``config.json`` and the weights of a ``Qwen2ForCausalLM`` directory as float32 numpy."""
    cfg = json.loads((checkpoint / "config.json").read_text())
    archs = cfg.get("architectures") or []
    if cfg.get("model_type") != "qwen2" and "Qwen2ForCausalLM" not in archs:
        raise ValueError(f"{checkpoint}: not a Qwen2 checkpoint (model_type={cfg.get('model_type')!r})")
    if cfg.get("use_sliding_window"):
        raise ValueError(f"{checkpoint}: use_sliding_window=true is not supported (full attention only)")
    shape = LmShape.from_hf_config(cfg)
    weights: dict[str, np.ndarray] = {}
    st_files = sorted(checkpoint.glob("*.safetensors"))
    if st_files:
        from safetensors import safe_open

        for f in st_files:
            with safe_open(str(f), framework="np") as fh:
                for k in fh.keys():  # noqa: SIM118 (safe_open is not a dict)
                    weights[k] = np.asarray(fh.get_tensor(k), dtype=np.float32)
    else:
        import torch  # only for pytorch_model.bin checkpoints

        for f in sorted(checkpoint.glob("pytorch_model*.bin")):
            for k, v in torch.load(f, map_location="cpu", weights_only=True).items():
                weights[k] = v.float().numpy()
    if not weights:
        raise ValueError(f"{checkpoint}: no *.safetensors or pytorch_model*.bin")
    if "lm_head.weight" not in weights or cfg.get("tie_word_embeddings", False):
        weights["lm_head.weight"] = weights["model.embed_tokens.weight"]
    return shape, weights


def save_model(model: onnx.ModelProto, out: Path, *, external_above: int = 1 << 30) -> None:
    """Write ``out``; weights above ``external_above`` bytes go to ``out.data`` beside it
    (protobuf cannot serialise 2 GiB; CosyVoice2's LM is about 2 GB in float32)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    weight_bytes = sum(len(t.raw_data) for t in model.graph.initializer)  # ByteSize() fails > 2 GiB
    if weight_bytes > external_above:
        onnx.save_model(
            model,
            str(out),
            save_as_external_data=True,
            all_tensors_to_one_file=True,
            location=out.name + ".data",
            size_threshold=1024,
        )
    else:
        onnx.save_model(model, str(out))


def export(checkpoint: Path, out: Path, *, naive: bool = False) -> LmShape:
    """Export ``checkpoint`` (a Qwen2ForCausalLM directory) to ``out``; returns its shape."""
    shape, weights = load_hf_qwen2(checkpoint)
    if shape.num_heads % shape.num_kv_heads:
        raise ValueError("num_attention_heads must be a multiple of num_key_value_heads")
    model = (build_naive_lm if naive else build_block_lm)(shape, weights)
    save_model(model, out)
    return shape


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoint", type=Path, help="Hugging Face Qwen2ForCausalLM directory")
    ap.add_argument("out", type=Path, help="ONNX file to write")
    ap.add_argument("--naive", action="store_true", help="HF-layout concat export (for comparison)")
    args = ap.parse_args(argv)
    try:
        shape = export(args.checkpoint, args.out, naive=args.naive)
    except (OSError, ValueError, KeyError) as exc:
        print(f"export_qwen2_onnx: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {args.out} ({'naive' if args.naive else 'block'}): {shape}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
