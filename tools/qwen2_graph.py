"""The Qwen2 decoder as ONNX graphs: edgetts' block-cache LM contract and the naive HF layout.

Written node by node with the ``onnx`` helper API from numpy weights (HF naming), so
the graph does not depend on torch's ONNX exporter; tools/export_qwen2_onnx.py feeds
it a checkpoint, tools/make_ar_test_voice.py random weights.

Block contract ("edgetts-ar-1", see docs/ar-voices.md).  B = 1 is implied and
there is no batch axis; N = new tokens this call, G = query heads per KV head,
kv = KV heads, D = head_dim, bs = block size (chosen by the host, any value):

    inputs   input_ids        [N] int64      ids in the LM vocabulary
             position_ids     [N] int64      RoPE positions of the new tokens
             prefix_length    []  int64      valid tokens in the prefix blocks
             past_length      []  int64      valid tokens in the past blocks
             prefix_key.{i}   [pb, kv, D, bs] float32   shared prefix blocks, keys stored transposed
             prefix_value.{i} [pb, kv, bs, D] float32
             past_key.{i}     [ob, kv, D, bs] float32   this sequence's own blocks
             past_value.{i}   [ob, kv, bs, D] float32
    outputs  logits           [N, V] float32
             key_delta.{i}    [kv, N, D] float32   keys of the new tokens only (after RoPE)
             value_delta.{i}  [kv, N, D] float32

The cache inputs are views of the host's preallocated block pool (zero-copy);
the model never copies or concatenates the past, it computes attention per
segment (prefix blocks, past blocks, new tokens) and joins only the score rows.
pb and ob are >= 1; unused positions are masked by the two lengths.

Naive contract (``--naive``, what optimum-style exports produce, for comparison):

    inputs   input_ids [1, N] int64, position_ids [1, N] int64,
             past_key_values.{i}.key|value [1, kv, P, D]
    outputs  logits [1, N, V], present.{i}.key|value [1, kv, P + N, D]  (Concat in the graph)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
NEG_INF = -1.0e30  # finite: exp(NEG_INF - max) is exactly 0 and never NaN


@dataclass(frozen=True)
class LmShape:
    """Hyper-parameters of a Qwen2 decoder (what ``config.json`` holds)."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0

    @classmethod
    def from_hf_config(cls, cfg: dict) -> LmShape:
        heads = int(cfg["num_attention_heads"])
        hidden = int(cfg["hidden_size"])
        rope = cfg.get("rope_parameters") or {}
        theta = cfg.get("rope_theta", rope.get("rope_theta", 10000.0))
        if rope.get("rope_type", "default") not in ("default", None):
            raise ValueError(f"rope_type {rope.get('rope_type')!r} is not supported (only default RoPE)")
        return cls(
            vocab_size=int(cfg["vocab_size"]),
            hidden_size=hidden,
            intermediate_size=int(cfg["intermediate_size"]),
            num_layers=int(cfg["num_hidden_layers"]),
            num_heads=heads,
            num_kv_heads=int(cfg.get("num_key_value_heads") or heads),
            head_dim=int(cfg.get("head_dim") or hidden // heads),
            rms_norm_eps=float(cfg.get("rms_norm_eps", 1e-6)),
            rope_theta=float(theta),
        )


class _Graph:
    """A tiny builder over onnx.helper: every call adds one node and returns its output name."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._n = 0
        self._consts: dict[tuple, str] = {}

    def op(self, op_type: str, *inputs: str, name: str | None = None, **attrs) -> str:
        self._n += 1
        out = name or f"{op_type.lower()}_{self._n}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], **attrs))
        return out

    def ops(self, op_type: str, inputs: list[str], n_out: int, **attrs) -> list[str]:
        self._n += 1
        outs = [f"{op_type.lower()}_{self._n}_{k}" for k in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, **attrs))
        return outs

    def init(self, name: str, arr: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def const(self, value, dtype=np.int64) -> str:
        arr = np.asarray(value, dtype=dtype)
        key = (arr.dtype.str, arr.shape, arr.tobytes())
        if key not in self._consts:
            self._consts[key] = self.init(f"const_{len(self._consts)}", arr)
        return self._consts[key]


def _common_weights(g: _Graph, shape: LmShape, w: dict[str, np.ndarray]) -> None:
    g.init("embed_tokens", w["model.embed_tokens.weight"].astype(np.float32))
    for i in range(shape.num_layers):
        p = f"model.layers.{i}."
        for proj in ("q", "k", "v"):
            g.init(f"l{i}.W{proj}", w[p + f"self_attn.{proj}_proj.weight"].T.astype(np.float32))
            g.init(f"l{i}.b{proj}", w[p + f"self_attn.{proj}_proj.bias"].astype(np.float32))
        g.init(f"l{i}.Wo", w[p + "self_attn.o_proj.weight"].T.astype(np.float32))
        g.init(f"l{i}.Wgate", w[p + "mlp.gate_proj.weight"].T.astype(np.float32))
        g.init(f"l{i}.Wup", w[p + "mlp.up_proj.weight"].T.astype(np.float32))
        g.init(f"l{i}.Wdown", w[p + "mlp.down_proj.weight"].T.astype(np.float32))
        g.init(f"l{i}.ln1", w[p + "input_layernorm.weight"].astype(np.float32))
        g.init(f"l{i}.ln2", w[p + "post_attention_layernorm.weight"].astype(np.float32))
    g.init("final_norm", w["model.norm.weight"].astype(np.float32))
    g.init("lm_head", w["lm_head.weight"].T.astype(np.float32))
    d = shape.head_dim
    inv_freq = 1.0 / (shape.rope_theta ** (np.arange(0, d, 2, dtype=np.int64).astype(np.float32) / d))
    g.init("inv_freq", inv_freq.astype(np.float32).reshape(1, d // 2))


def _rms_norm(g: _Graph, x: str, weight: str, eps: float) -> str:
    var = g.op("ReduceMean", g.op("Mul", x, x), axes=[-1], keepdims=1)
    inv = g.op("Reciprocal", g.op("Sqrt", g.op("Add", var, g.const(eps, np.float32))))
    return g.op("Mul", g.op("Mul", x, inv), weight)


def _rope_tables(g: _Graph, pos_flat: str) -> tuple[str, str]:
    """cos/sin [N, 1, D] for positions [N] (HF's rotate_half convention)."""
    freqs = g.op("MatMul", g.op("Unsqueeze", g.op("Cast", pos_flat, to=TensorProto.FLOAT), g.const([1])), "inv_freq")
    emb = g.op("Concat", freqs, freqs, axis=-1)
    emb = g.op("Unsqueeze", emb, g.const([1]))
    return g.op("Cos", emb), g.op("Sin", emb)


def _apply_rope(g: _Graph, x: str, cos: str, sin: str) -> str:
    """x [N, heads, D]: x * cos + rotate_half(x) * sin."""
    x1, x2 = g.ops("Split", [x], 2, axis=-1)
    rot = g.op("Concat", g.op("Neg", x2), x1, axis=-1)
    return g.op("Add", g.op("Mul", x, cos), g.op("Mul", rot, sin))


def _mlp_and_residual(g: _Graph, i: int, h: str, shape: LmShape) -> str:
    x = _rms_norm(g, h, f"l{i}.ln2", shape.rms_norm_eps)
    gate = g.op("MatMul", x, f"l{i}.Wgate")
    act = g.op("Mul", gate, g.op("Sigmoid", gate))
    y = g.op("MatMul", g.op("Mul", act, g.op("MatMul", x, f"l{i}.Wup")), f"l{i}.Wdown")
    return g.op("Add", h, y)


def _qkv(g: _Graph, i: int, x: str, shape: LmShape, cos: str, sin: str) -> tuple[str, str, str]:
    """q [N, Hq, D] (scaled), k [N, kv, D], v [N, kv, D]; RoPE applied to q and k."""
    d = shape.head_dim
    q = g.op("Add", g.op("MatMul", x, f"l{i}.Wq"), f"l{i}.bq")
    k = g.op("Add", g.op("MatMul", x, f"l{i}.Wk"), f"l{i}.bk")
    v = g.op("Add", g.op("MatMul", x, f"l{i}.Wv"), f"l{i}.bv")
    q = g.op("Reshape", q, g.const([-1, shape.num_heads, d]))
    k = g.op("Reshape", k, g.const([-1, shape.num_kv_heads, d]))
    v = g.op("Reshape", v, g.const([-1, shape.num_kv_heads, d]))
    q = g.op("Mul", _apply_rope(g, q, cos, sin), g.const(1.0 / math.sqrt(d), np.float32))
    k = _apply_rope(g, k, cos, sin)
    return q, k, v


def _value(name: str, dims: list) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


def _block_io(shape: LmShape) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    kv, d = shape.num_kv_heads, shape.head_dim
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["N"]),
        helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["N"]),
        helper.make_tensor_value_info("prefix_length", TensorProto.INT64, []),
        helper.make_tensor_value_info("past_length", TensorProto.INT64, []),
    ]
    outputs = [_value("logits", ["N", shape.vocab_size])]
    for i in range(shape.num_layers):
        inputs += [
            _value(f"prefix_key.{i}", ["prefix_blocks", kv, d, "block_size"]),
            _value(f"prefix_value.{i}", ["prefix_blocks", kv, "block_size", d]),
            _value(f"past_key.{i}", ["past_blocks", kv, d, "block_size"]),
            _value(f"past_value.{i}", ["past_blocks", kv, "block_size", d]),
        ]
        outputs += [_value(f"key_delta.{i}", [kv, "N", d]), _value(f"value_delta.{i}", [kv, "N", d])]
    return inputs, outputs


@dataclass(frozen=True)
class _BlockShared:
    """What every layer's attention in the block graph shares (names of graph values)."""

    cos: str
    sin: str
    pre_mask: str
    pre_blocks: str
    own_mask: str
    own_blocks: str
    new_mask: str  # [GN, N]
    split_sizes: str
    shape_q: str


def _segment_mask(g: _Graph, cache0: str, length: str) -> tuple[str, str, str]:
    """(additive mask over a segment's positions, its block count, its capacity) from layer 0's keys."""
    shp = g.op("Shape", cache0)  # [blocks, kv, D, bs]
    blocks = g.op("Gather", shp, g.const([0]), axis=0)
    cap = g.op("Mul", blocks, g.op("Gather", shp, g.const([3]), axis=0))  # [1]
    pos = g.op("Range", g.const(0), g.op("Squeeze", cap, g.const([0])), g.const(1))
    valid = g.op("Less", pos, length)
    mask = g.op("Where", valid, g.const(0.0, np.float32), g.const(NEG_INF, np.float32))
    return mask, blocks, cap


def _block_shared(g: _Graph, shape: LmShape) -> _BlockShared:
    """Shapes and masks, computed once for all layers."""
    kv, d = shape.num_kv_heads, shape.head_dim
    n_new = g.op("Shape", "input_ids")  # [1] = N
    gn = g.op("Mul", n_new, g.const([shape.num_heads // kv]))  # [1] = G*N
    cos, sin = _rope_tables(g, "position_ids")
    pre_mask, pre_blocks, pre_cap = _segment_mask(g, "prefix_key.0", "prefix_length")
    own_mask, own_blocks, own_cap = _segment_mask(g, "past_key.0", "past_length")
    # causal mask among the new tokens: score row r = head_in_group * N + n sees new column m <= n
    rows = g.op(
        "Mod",
        g.op("Range", g.const(0), g.op("Squeeze", gn, g.const([0])), g.const(1)),
        g.op("Squeeze", n_new, g.const([0])),
    )
    cols = g.op("Range", g.const(0), g.op("Squeeze", n_new, g.const([0])), g.const(1))
    allowed = g.op("LessOrEqual", g.op("Unsqueeze", cols, g.const([0])), g.op("Unsqueeze", rows, g.const([1])))
    new_mask = g.op("Where", allowed, g.const(0.0, np.float32), g.const(NEG_INF, np.float32))
    split_sizes = g.op("Concat", pre_cap, own_cap, n_new, axis=0)
    shape_q = g.op("Concat", g.const([kv]), gn, g.const([d]), axis=0)
    return _BlockShared(cos, sin, pre_mask, pre_blocks, own_mask, own_blocks, new_mask, split_sizes, shape_q)


def _segment_scores(g: _Graph, qg: str, kb: str, mask: str) -> str:
    s = g.op("MatMul", qg, kb)  # [blocks, kv, GN, bs]; K blocks are stored transposed
    s = g.op("Reshape", g.op("Transpose", s, perm=[1, 2, 0, 3]), g.const([0, 0, -1]))
    return g.op("Add", s, mask)  # [kv, GN, blocks*bs]


def _segment_output(g: _Graph, p: str, blocks: str, vb: str) -> str:
    p4 = g.op("Reshape", p, g.op("Concat", g.const([0, 0]), blocks, g.const([-1]), axis=0))
    o = g.op("MatMul", g.op("Transpose", p4, perm=[2, 0, 1, 3]), vb)  # [blocks, kv, GN, D]
    return g.op("ReduceSum", o, g.const([0]), keepdims=0)


def _block_attention(g: _Graph, i: int, qkv: tuple[str, str, str], m: _BlockShared, shape: LmShape) -> str:
    """Layer ``i``'s attention over prefix blocks, past blocks and the new tokens: [N, Hq * D]."""
    q, k, v = qkv
    # query heads j*G .. j*G+G-1 share KV head j (HF repeat_kv order): [kv, G*N, D]
    qg = g.op("Reshape", g.op("Transpose", q, perm=[1, 0, 2]), m.shape_q)
    kd = g.op("Transpose", k, perm=[1, 0, 2], name=f"key_delta.{i}")  # [kv, N, D]
    vd = g.op("Transpose", v, perm=[1, 0, 2], name=f"value_delta.{i}")
    s_pre = _segment_scores(g, qg, f"prefix_key.{i}", m.pre_mask)
    s_own = _segment_scores(g, qg, f"past_key.{i}", m.own_mask)
    s_new = g.op("Add", g.op("MatMul", qg, g.op("Transpose", kd, perm=[0, 2, 1])), m.new_mask)
    probs = g.op("Softmax", g.op("Concat", s_pre, s_own, s_new, axis=-1), axis=-1)
    p_pre, p_own, p_new = g.ops("Split", [probs, m.split_sizes], 3, axis=-1)
    o_pre = _segment_output(g, p_pre, m.pre_blocks, f"prefix_value.{i}")
    o_own = _segment_output(g, p_own, m.own_blocks, f"past_value.{i}")
    att = g.op("Add", g.op("Add", o_pre, o_own), g.op("MatMul", p_new, vd))  # [kv, GN, D]
    att = g.op("Reshape", att, g.const([shape.num_heads, -1, shape.head_dim]))  # [Hq, N, D]
    return g.op("Reshape", g.op("Transpose", att, perm=[1, 0, 2]), g.const([-1, shape.num_heads * shape.head_dim]))


def _lm_model(g: _Graph, name: str, io: tuple[list, list], shape: LmShape, kind: str) -> onnx.ModelProto:
    graph = helper.make_graph(g.nodes, name, io[0], io[1], g.inits)
    opsets = [helper.make_opsetid("", OPSET)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="edgetts-export-qwen2")
    model.ir_version = 8
    meta = {
        "edgetts.lm_contract": "edgetts-ar-1/block" if kind == "block" else "hf-naive",
        "num_layers": shape.num_layers,
        "num_kv_heads": shape.num_kv_heads,
        "head_dim": shape.head_dim,
        "vocab_size": shape.vocab_size,
    }
    for k, v in meta.items():
        model.metadata_props.append(onnx.StringStringEntryProto(key=k, value=str(v)))
    return model


def build_block_lm(shape: LmShape, w: dict[str, np.ndarray]) -> onnx.ModelProto:
    """The block-cache contract described in the module docstring."""
    g = _Graph()
    _common_weights(g, shape, w)
    io = _block_io(shape)
    shared = _block_shared(g, shape)
    h = g.op("Gather", "embed_tokens", "input_ids", axis=0)  # [N, H]
    for i in range(shape.num_layers):
        x = _rms_norm(g, h, f"l{i}.ln1", shape.rms_norm_eps)
        att = _block_attention(g, i, _qkv(g, i, x, shape, shared.cos, shared.sin), shared, shape)
        h = g.op("Add", h, g.op("MatMul", att, f"l{i}.Wo"))
        h = _mlp_and_residual(g, i, h, shape)
    h = _rms_norm(g, h, "final_norm", shape.rms_norm_eps)
    g.op("MatMul", h, "lm_head", name="logits")
    return _lm_model(g, "edgetts_ar_lm_block", io, shape, "block")


def _naive_io(shape: LmShape) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    kv, d = shape.num_kv_heads, shape.head_dim
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "N"]),
        helper.make_tensor_value_info("position_ids", TensorProto.INT64, [1, "N"]),
    ]
    outputs = [_value("logits", [1, "N", shape.vocab_size])]
    for i in range(shape.num_layers):
        inputs += [_value(f"past_key_values.{i}.{t}", [1, kv, "P", d]) for t in ("key", "value")]
        outputs += [_value(f"present.{i}.{t}", [1, kv, "T", d]) for t in ("key", "value")]
    return inputs, outputs


@dataclass(frozen=True)
class _NaiveShared:
    """What every layer's attention in the naive graph shares (names of graph values)."""

    ids: str
    cos: str
    sin: str
    mask: str  # [N, T]
    rep_shape: str
    flat_shape: str


def _naive_shared(g: _Graph, shape: LmShape) -> _NaiveShared:
    kv, d = shape.num_kv_heads, shape.head_dim
    ids = g.op("Squeeze", "input_ids", g.const([0]))
    cos, sin = _rope_tables(g, g.op("Squeeze", "position_ids", g.const([0])))
    n_new = g.op("Shape", ids)
    past = g.op("Gather", g.op("Shape", "past_key_values.0.key"), g.const([2]), axis=0)
    total = g.op("Add", past, n_new)
    # causal: new row n (absolute P + n) sees column c <= P + n
    rows = g.op(
        "Add",
        g.op("Range", g.const(0), g.op("Squeeze", n_new, g.const([0])), g.const(1)),
        g.op("Squeeze", past, g.const([0])),
    )
    cols = g.op("Range", g.const(0), g.op("Squeeze", total, g.const([0])), g.const(1))
    allowed = g.op("LessOrEqual", g.op("Unsqueeze", cols, g.const([0])), g.op("Unsqueeze", rows, g.const([1])))
    mask = g.op("Where", allowed, g.const(0.0, np.float32), g.const(NEG_INF, np.float32))
    rep_shape = g.op("Concat", g.const([1, kv, shape.num_heads // kv]), total, g.const([d]), axis=0)
    flat_shape = g.op("Concat", g.const([1, shape.num_heads]), total, g.const([d]), axis=0)
    return _NaiveShared(ids, cos, sin, mask, rep_shape, flat_shape)


def _naive_attention(g: _Graph, i: int, qkv: tuple[str, str, str], m: _NaiveShared, shape: LmShape) -> str:
    """Layer ``i``'s attention, past and new keys concatenated in the graph: [N, Hq * D]."""
    q, k, v = qkv
    q4 = g.op("Unsqueeze", g.op("Transpose", q, perm=[1, 0, 2]), g.const([0]))  # [1, Hq, N, D]
    k4 = g.op("Unsqueeze", g.op("Transpose", k, perm=[1, 0, 2]), g.const([0]))
    v4 = g.op("Unsqueeze", g.op("Transpose", v, perm=[1, 0, 2]), g.const([0]))
    pk = g.op("Concat", f"past_key_values.{i}.key", k4, axis=2, name=f"present.{i}.key")
    pv = g.op("Concat", f"past_key_values.{i}.value", v4, axis=2, name=f"present.{i}.value")

    def repeat_kv(t: str) -> str:
        e = g.op("Expand", g.op("Unsqueeze", t, g.const([2])), m.rep_shape)
        return g.op("Reshape", e, m.flat_shape)

    s = g.op("Add", g.op("MatMul", q4, g.op("Transpose", repeat_kv(pk), perm=[0, 1, 3, 2])), m.mask)
    o = g.op("MatMul", g.op("Softmax", s, axis=-1), repeat_kv(pv))  # [1, Hq, N, D]
    return g.op(
        "Reshape",
        g.op("Transpose", g.op("Squeeze", o, g.const([0])), perm=[1, 0, 2]),
        g.const([-1, shape.num_heads * shape.head_dim]),
    )


def build_naive_lm(shape: LmShape, w: dict[str, np.ndarray]) -> onnx.ModelProto:
    """HF/optimum layout: past in, Concat in the graph, present out, repeat_kv for GQA."""
    g = _Graph()
    _common_weights(g, shape, w)
    io = _naive_io(shape)
    shared = _naive_shared(g, shape)
    h = g.op("Gather", "embed_tokens", shared.ids, axis=0)
    for i in range(shape.num_layers):
        x = _rms_norm(g, h, f"l{i}.ln1", shape.rms_norm_eps)
        o = _naive_attention(g, i, _qkv(g, i, x, shape, shared.cos, shared.sin), shared, shape)
        h = g.op("Add", h, g.op("MatMul", o, f"l{i}.Wo"))
        h = _mlp_and_residual(g, i, h, shape)
    h = _rms_norm(g, h, "final_norm", shape.rms_norm_eps)
    g.op("Unsqueeze", g.op("MatMul", h, "lm_head"), g.const([0]), name="logits")
    return _lm_model(g, "edgetts_ar_lm_naive", io, shape, "naive")
