"""Layer norms spelled out by VITS's export, fused into one operator at fold time (edgetts.voice.piper.front_fuse)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from edgetts.voice.piper.front_fuse import fuse_layer_norms

CHANNELS, FRAMES = 8, 5


def _norm_graph(exponent: float = 2.0, extra_use: bool = False) -> onnx.ModelProto:
    """x (1, C, T) -> transpose, the nine-operator layer norm over C, transpose back, then a Conv (as
    in VITS's encoder).  ``extra_use``: the centred x is also an output (the chain must then stay)."""
    rng = np.random.default_rng(3)
    consts = [
        numpy_helper.from_array(rng.standard_normal(CHANNELS).astype(np.float32), "gamma"),
        numpy_helper.from_array(rng.standard_normal(CHANNELS).astype(np.float32), "beta"),
        numpy_helper.from_array(np.array(exponent, np.float32), "two"),
        numpy_helper.from_array(np.array(1e-5, np.float32), "eps"),
        numpy_helper.from_array(rng.standard_normal((CHANNELS, CHANNELS, 3)).astype(np.float32), "w"),
    ]
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1]),
        helper.make_node("ReduceMean", ["t"], ["mean"], axes=[-1]),
        helper.make_node("Sub", ["t", "mean"], ["centred"]),
        helper.make_node("Pow", ["centred", "two"], ["squared"]),
        helper.make_node("ReduceMean", ["squared"], ["var"], axes=[-1]),
        helper.make_node("Add", ["var", "eps"], ["var_eps"]),
        helper.make_node("Sqrt", ["var_eps"], ["std"]),
        helper.make_node("Div", ["centred", "std"], ["normed"]),
        helper.make_node("Mul", ["normed", "gamma"], ["scaled"]),
        helper.make_node("Add", ["scaled", "beta"], ["shifted"]),
        helper.make_node("Transpose", ["shifted"], ["back"], perm=[0, 2, 1]),
        helper.make_node("Conv", ["back", "w"], ["y"], pads=[1, 1]),
    ]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, CHANNELS, FRAMES])]
    if extra_use:
        outputs.append(helper.make_tensor_value_info("centred", TensorProto.FLOAT, [1, FRAMES, CHANNELS]))
    graph = helper.make_graph(
        nodes, "norm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, CHANNELS, FRAMES])], outputs, consts
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 8
    return model


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(["y"], {"x": x})[0])


def test_a_spelled_out_layer_norm_becomes_one_operator_with_the_same_numbers() -> None:
    model = _norm_graph()
    x = np.random.default_rng(4).standard_normal((1, CHANNELS, FRAMES)).astype(np.float32) * 3 + 1
    want = _run(model, x)
    assert fuse_layer_norms(model) == 1
    kinds = [n.op_type for n in model.graph.node]
    assert kinds == ["Transpose", "LayerNormalization", "Transpose", "Conv"]
    assert model.opset_import[0].version == 17
    onnx.checker.check_model(model)
    got = _run(model, x)
    assert got.shape == want.shape
    assert float(np.max(np.abs(got - want))) < 1e-4
    assert float(np.max(np.abs(want))) > 1.0  # the comparison is not of near-zeros


def test_chains_that_are_not_a_layer_norm_stay() -> None:
    for model in (_norm_graph(exponent=3.0), _norm_graph(extra_use=True)):
        before = [n.op_type for n in model.graph.node]
        assert fuse_layer_norms(model) == 0
        assert [n.op_type for n in model.graph.node] == before
        assert model.opset_import[0].version == 15
