"""A folded front's value-moving operators made one gather, its convolutions' padding their own
(edgetts.voice.piper.front_moves): the same values, fewer operators."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from edgetts.voice.piper.front_fold import static_shapes
from edgetts.voice.piper.front_moves import gather_moves, pad_into_conv

HEADS, LENGTH = 2, 6


def _model(
    nodes: list[onnx.NodeProto], inputs: list[tuple[str, list[int]]], consts: dict[str, np.ndarray]
) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "moves",
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape) for name, shape in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(value, name) for name, value in consts.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _run(model: onnx.ModelProto, **feeds: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(["y"], feeds)[0])


def _change_of_frame(consts: dict[str, np.ndarray], shape: list[int]) -> onnx.ModelProto:
    """x ``shape`` -> Pad, Reshape, Pad, Reshape, Slice with ``consts`` (how VITS's export spells both
    of its relative attention's changes of position frame)."""
    nodes = [
        helper.make_node("Pad", ["x", "p1", ""], ["a"], mode="constant"),
        helper.make_node("Reshape", ["a", "s1"], ["b"]),
        helper.make_node("Pad", ["b", "p2", ""], ["c"], mode="constant"),
        helper.make_node("Reshape", ["c", "s2"], ["d"]),
        helper.make_node("Slice", ["d", "starts", "ends", "axes"], ["y"]),
    ]
    return _model(nodes, [("x", shape)], consts)


def _relative_to_absolute() -> onnx.ModelProto:
    """VITS's relative attention logits (1, H, L, 2L-1) -> absolute (1, H, L, L), as exported."""
    n = LENGTH
    consts = {
        "p1": np.array([0, 0, 0, 0, 0, 0, 0, 1], np.int64),
        "s1": np.array([1, HEADS, n * 2 * n], np.int64),
        "p2": np.array([0, 0, 0, 0, 0, n - 1], np.int64),
        "s2": np.array([1, HEADS, n + 1, 2 * n - 1], np.int64),
        "starts": np.array([0, n - 1], np.int64),
        "ends": np.array([n, 1 << 62], np.int64),
        "axes": np.array([2, 3], np.int64),
    }
    return _change_of_frame(consts, [1, HEADS, n, 2 * n - 1])


def _absolute_to_relative() -> onnx.ModelProto:
    """Attention weights (1, H, L, L) -> relative (1, H, L, 2L-1), as exported (zeros where no position)."""
    n = LENGTH
    consts = {
        "p1": np.array([0, 0, 0, 0, 0, 0, 0, n - 1], np.int64),
        "s1": np.array([1, HEADS, n * (2 * n - 1)], np.int64),
        "p2": np.array([0, 0, n, 0, 0, 0], np.int64),
        "s2": np.array([1, HEADS, n, 2 * n], np.int64),
        "starts": np.array([1], np.int64),
        "ends": np.array([1 << 62], np.int64),
        "axes": np.array([3], np.int64),
    }
    return _change_of_frame(consts, [1, HEADS, n, n])


def test_relative_attention_s_changes_of_frame_become_one_gather_with_the_same_values() -> None:
    rng = np.random.default_rng(5)
    for model, shape, kinds in (
        (_relative_to_absolute(), (1, HEADS, LENGTH, 2 * LENGTH - 1), ["GatherElements"]),
        (_absolute_to_relative(), (1, HEADS, LENGTH, LENGTH), ["GatherElements", "Where"]),
    ):
        x = rng.standard_normal(shape).astype(np.float32)
        want = _run(model, x=x)
        assert gather_moves(model, *static_shapes(model)) == 1
        assert [n.op_type for n in model.graph.node] == kinds
        got = _run(model, x=x)
        assert got.shape == want.shape and np.array_equal(got, want)
    assert np.count_nonzero(want == 0) > 0  # the second map has its padding's zeros


def test_a_pad_of_another_value_stays_and_the_rest_is_gathered() -> None:
    model = _relative_to_absolute()
    model.graph.node[0].input[2] = "one"
    model.graph.initializer.append(numpy_helper.from_array(np.array(1.0, np.float32), "one"))
    x = np.random.default_rng(7).standard_normal((1, HEADS, LENGTH, 2 * LENGTH - 1)).astype(np.float32)
    want = _run(model, x=x)
    assert gather_moves(model, *static_shapes(model)) == 1
    assert [n.op_type for n in model.graph.node] == ["Pad", "GatherElements"]
    assert np.array_equal(_run(model, x=x), want)


def test_a_zero_pad_before_a_convolution_becomes_its_own_padding() -> None:
    rng = np.random.default_rng(6)
    consts = {
        "pads": np.array([0, 0, 1, 0, 0, 2], np.int64),
        "w": rng.standard_normal((4, 3, 3)).astype(np.float32),
        "b": rng.standard_normal(4).astype(np.float32),
    }
    nodes = [
        helper.make_node("Pad", ["x", "pads", ""], ["padded"], mode="constant"),
        helper.make_node("Conv", ["padded", "w", "b"], ["y"], pads=[1, 0]),
    ]
    model = _model(nodes, [("x", [1, 3, 7])], consts)
    x = rng.standard_normal((1, 3, 7)).astype(np.float32)
    want = _run(model, x=x)
    assert pad_into_conv(model) == 1
    (conv,) = model.graph.node
    assert conv.op_type == "Conv" and list(helper.get_attribute_value(conv.attribute[-1])) == [2, 2]
    assert np.array_equal(_run(model, x=x), want) and want.shape == (1, 4, 9)
