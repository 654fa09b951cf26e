"""tools/quant_arm.py: the profiler's count of the kernels a Q/DQ model ran (what the aarch64 check reads)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tools.quant_arm import kernel_counts


def _qdq_conv(path: Path, quantized: bool) -> None:
    """x -> Conv (8 -> 16 channels, kernel 3) -> y; ``quantized``: wrapped in QuantizeLinear /
    DequantizeLinear as `edgetts quantize --static` writes it (uint8 activations, int8 weights)."""
    rng = np.random.default_rng(0)
    weight = rng.normal(0, 0.1, (16, 8, 3)).astype(np.float32)
    nodes, inits = [], []
    if quantized:
        scale = np.abs(weight).reshape(16, -1).max(axis=1) / 127.0
        inits += [
            numpy_helper.from_array(np.round(weight / scale[:, None, None]).astype(np.int8), "w_q"),
            numpy_helper.from_array(scale.astype(np.float32), "w_scale"),
            numpy_helper.from_array(np.zeros(16, np.int8), "w_zero"),
            numpy_helper.from_array(np.array(0.02, np.float32), "x_scale"),
            numpy_helper.from_array(np.array(128, np.uint8), "x_zero"),
        ]
        nodes += [
            helper.make_node("DequantizeLinear", ["w_q", "w_scale", "w_zero"], ["w"], axis=0),
            helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zero"], ["x_q"]),
            helper.make_node("DequantizeLinear", ["x_q", "x_scale", "x_zero"], ["x_dq"]),
            helper.make_node("Conv", ["x_dq", "w"], ["c"], pads=[1, 1]),
            helper.make_node("QuantizeLinear", ["c", "x_scale", "x_zero"], ["c_q"]),
            helper.make_node("DequantizeLinear", ["c_q", "x_scale", "x_zero"], ["y"]),
        ]
    else:
        inits.append(numpy_helper.from_array(weight, "w"))
        nodes.append(helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1]))
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 32])],
        inits,
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)]), str(path))


def test_a_qdq_conv_runs_as_onnxruntime_s_int8_kernel_and_a_float_one_does_not(tmp_path: Path) -> None:
    feeds = {"x": np.random.default_rng(1).normal(0, 1, (1, 8, 32)).astype(np.float32)}
    _qdq_conv(tmp_path / "int8.onnx", quantized=True)
    _qdq_conv(tmp_path / "float.onnx", quantized=False)
    int8, floating = kernel_counts(tmp_path / "int8.onnx", feeds, 1), kernel_counts(tmp_path / "float.onnx", feeds, 1)
    assert int8.get("QLinearConv") == 1 and "Conv" not in int8, int8
    assert "QLinearConv" not in floating and floating.get("Conv", 0) + floating.get("FusedConv", 0) == 1, floating
