"""Static int8 and fp16 variants (edgetts/voice/piper/quantize_static.py, `edgetts quantize --static/--fp16`):
QDQ around the chosen Convs, never around ConvTranspose, kept-float nodes and the duration predictor
float, the sensitivity pass rejecting the layer that hisses, and a variant that streams and speaks
close to fp32 with the same seed.  On the real default voice, kept short: two calibration
sentences and three candidate groups (the whole pass takes minutes: tools/bench_quant.py)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, numpy_helper

from edgetts.engine import SynthesisConfig
from edgetts.errors import VoiceError
from edgetts.voice.catalog import default_voice_path
from edgetts.voice.model_cache import family, stale_entries
from edgetts.voice.piper.int8_variant import REPORT_KEY, int8_path, speed_ratio
from edgetts.voice.piper.logmel import logmel_distance_db
from edgetts.voice.piper.quantize_static import (
    CALIBRATION_SENTENCES,
    DEFAULT_BUDGET_DB,
    METADATA_KEY,
    VariantReport,
    choose_groups,
    convert_fp16,
    duration_nodes,
    layer_groups,
    matching_nodes,
    quantize_static_voice,
    variant_metadata,
)
from edgetts.voice.piper.seeded_noise import add_seeded_noise
from edgetts.voice.piper.voice import PiperVoice

KEEP = ["/enc_p/*", "/flow/*", "/dec/resblocks.[1-8]/*"]
"""Left as candidates: conv_pre, resblocks.0 (the 128-channel stage: a fraction of a dB each)
and conv_post, the last conv (alone ~9 dB: its 8-bit output is a hiss)."""
TEXT = "The next train to arrive at platform two is the service to Edinburgh Waverley."
SEEDED = SynthesisConfig(seed=5, normalize_audio=False)


@pytest.fixture(scope="module")
def static(tmp_path_factory: pytest.TempPathFactory) -> VariantReport:
    out = tmp_path_factory.mktemp("static") / "joe-static.onnx"
    return quantize_static_voice(default_voice_path(), out, keep_float=KEEP, sentences=CALIBRATION_SENTENCES[:2])


@pytest.fixture(scope="module")
def fp32() -> PiperVoice:
    return PiperVoice.load(default_voice_path(), cache_dir=None)


def _producers(model: onnx.ModelProto) -> dict[str, onnx.NodeProto]:
    return {out: node for node in model.graph.node for out in node.output}


def _speak(voice: PiperVoice, config: SynthesisConfig = SEEDED) -> np.ndarray:
    return np.concatenate([chunk.audio for chunk in voice.synthesize(TEXT, config)])


@pytest.mark.slow
def test_chosen_convs_are_wrapped_in_qdq_with_symmetric_per_channel_int8_weights(static: VariantReport) -> None:
    model = onnx.load(str(static.output))
    producer = _producers(model)
    weights = {i.name: i for i in model.graph.initializer}
    convs = {n.name: n for n in model.graph.node if n.op_type == "Conv"}
    assert set(static.converted) == {
        "/dec/conv_pre/Conv",
        "/dec/resblocks.0/convs.0/Conv",
        "/dec/resblocks.0/convs.1/Conv",
    }
    for name in static.converted:
        activation, weight = (producer[x] for x in convs[name].input[:2])
        assert activation.op_type == weight.op_type == "DequantizeLinear"
        assert producer[activation.input[0]].op_type == "QuantizeLinear"
        assert producer[activation.input[0]].input[0] in producer  # a real activation, quantized
        values, scales, zeros = (weights[x] for x in weight.input)
        assert values.data_type == TensorProto.INT8 and zeros.data_type == TensorProto.INT8
        assert numpy_helper.to_array(scales).shape == (values.dims[0],)  # one scale per output channel
        assert not numpy_helper.to_array(zeros).any()  # symmetric
        assert [producer[o].op_type for o in convs[name].output if o in producer] == ["Conv"]
        assert any(n.op_type == "QuantizeLinear" and n.input[0] == convs[name].output[0] for n in model.graph.node)
    for node in model.graph.node:
        if node.op_type == "ConvTranspose":
            assert all(producer[x].op_type != "DequantizeLinear" for x in node.input if x in producer), node.name
            assert weights[node.input[1]].data_type == TensorProto.FLOAT
    # onnxruntime fuses each group into a QLinearConv: the variant computes in int8, not in Q/DQ round trips.
    options = ort.SessionOptions()
    options.optimized_model_filepath = str(static.output.with_name("optimised.onnx"))
    ort.InferenceSession(str(static.output), options, providers=["CPUExecutionProvider"])
    optimised = onnx.load(options.optimized_model_filepath)
    assert sum(n.op_type == "QLinearConv" for n in optimised.graph.node) == len(static.converted)


@pytest.mark.slow
def test_kept_float_layers_and_the_duration_predictor_read_float(static: VariantReport) -> None:
    model = onnx.load(str(static.output))
    producer = _producers(model)
    weights = {i.name: i for i in model.graph.initializer}
    kept = matching_nodes(model, KEEP) | {"/dec/conv_post/Conv"}
    front = duration_nodes(onnx.load(str(default_voice_path())))
    assert front and "/dec/conv_pre/Conv" not in front
    for node in model.graph.node:
        if node.name in kept or node.name in front:
            reads = [producer[x].op_type for x in node.input if x in producer]
            assert "DequantizeLinear" not in reads, node.name
        if node.name in kept and node.op_type == "Conv":
            assert weights[node.input[1]].data_type == TensorProto.FLOAT
    # The pass heard the last conv alone far over the budget and kept it float; what it kept is recorded.
    assert static.sensitivity["/dec/conv_post"] > 3 * DEFAULT_BUDGET_DB > static.sensitivity["/dec/resblocks.0"]
    assert "/dec/conv_post/Conv" in static.kept_float and "/dec/conv_post/Conv" not in static.converted
    recorded = variant_metadata(static.output)
    assert recorded is not None and recorded["kept_float"] == list(static.kept_float)
    assert recorded["converted"] == list(static.converted) and recorded["mode"] == "static"
    assert json.loads(open(static.output.with_name("joe-static.onnx.json")).read())["audio"]["sample_rate"] == 22050


@pytest.mark.slow
def test_the_variant_streams_with_seeded_noise_and_speaks_close_to_fp32(
    static: VariantReport, fp32: PiperVoice
) -> None:
    assert add_seeded_noise(onnx.load(str(static.output))) == 2  # both noise draws still found and seeded
    voice = PiperVoice.load(static.output, cache_dir=None, streaming=True)
    assert voice.split is not None and voice.split.flow is not None
    chunks = list(voice.synthesize(TEXT, SEEDED))
    assert len(chunks) > 2  # windows, not one whole sentence
    streamed, reference = np.concatenate([c.audio for c in chunks]), _speak(fp32)
    assert streamed.size == reference.size  # the durations are fp32's
    close = logmel_distance_db(reference, streamed, voice.sample_rate)
    other_seed = logmel_distance_db(reference, _speak(fp32, SynthesisConfig(seed=6, normalize_audio=False)), 22050)
    assert 0.01 < close < 2.0, close  # int8, yet the same voice
    assert close < other_seed


@pytest.mark.slow
def test_fp16_converts_the_convs_and_nothing_else(tmp_path: Path, fp32: PiperVoice) -> None:
    report = convert_fp16(default_voice_path(), tmp_path / "joe-fp16.onnx", keep_float=["/dec/conv_post/*"])
    model = onnx.load(str(report.output))
    weights = {i.name: i for i in model.graph.initializer}
    types = {
        n.op_type: weights[n.input[1]].data_type for n in model.graph.node if n.input[1:] and n.input[1] in weights
    }
    assert types["ConvTranspose"] == TensorProto.FLOAT
    for node in model.graph.node:
        if node.op_type == "Conv":
            half = node.name in report.converted
            assert weights[node.input[1]].data_type == (TensorProto.FLOAT16 if half else TensorProto.FLOAT)
    assert "/dec/conv_post/Conv" in report.kept_float and len(report.converted) > 50
    voice = PiperVoice.load(report.output, cache_dir=None)
    audio, reference = _speak(voice), _speak(fp32)
    assert audio.size == reference.size and 0.0 < logmel_distance_db(reference, audio, 22050) < 0.5


def test_layer_groups_and_patterns() -> None:
    names = ["/dec/conv_pre/Conv", "/dec/resblocks.0/convs.0/Conv", "/dec/resblocks.0/convs.1/Conv", "Conv_7"]
    assert layer_groups(names) == {
        "/dec/conv_pre": ["/dec/conv_pre/Conv"],
        "/dec/resblocks.0": names[1:3],
        "Conv_7": ["Conv_7"],
    }
    graph = onnx.helper.make_graph([onnx.helper.make_node("Relu", ["x"], ["y"], name=n) for n in names], "g", [], [])
    model = onnx.helper.make_model(graph)
    assert matching_nodes(model, ["/dec/resblocks.*", "Conv_7"]) == set(names[1:])
    with pytest.raises(VoiceError, match="'/enc/\\*' .* names no node"):
        matching_nodes(model, ["Conv_7", "/enc/*"])


def test_choose_groups_takes_the_quiet_ones_and_drops_the_loudest_when_the_set_is_over() -> None:
    alone = {"a": 0.3, "b": 0.4, "c": 0.5, "loud": 5.0}
    groups = {g: [f"{g}/Conv"] for g in alone}
    heard: list[list[str]] = []

    def distance(nodes: list[str]) -> float:
        heard.append(nodes)
        if len(nodes) == 1:
            return alone[nodes[0].split("/")[0]]
        return 1.2 if len(nodes) == 3 else 0.6  # the three together measure over the budget

    lines: list[str] = []
    chosen, sensitivity = choose_groups(groups, distance, 1.0, lines.append)
    assert sensitivity == alone
    assert chosen == ["a", "b"]  # c was dropped, loud never taken
    assert heard[-2:] == [["a/Conv", "b/Conv", "c/Conv"], ["a/Conv", "b/Conv"]]
    assert lines[-1] == "2 groups together: 0.60 dB"


def test_logmel_distance_is_zero_for_the_same_audio_and_grows_with_noise() -> None:
    rng = np.random.default_rng(0)
    tone = np.sin(np.arange(22050) * 2 * np.pi * 220 / 22050).astype(np.float32) * 0.5
    assert logmel_distance_db(tone, tone, 22050) == 0.0
    quiet, loud = (tone + rng.normal(0, s, tone.size).astype(np.float32) for s in (1e-4, 1e-2))
    assert 0.0 < logmel_distance_db(tone, quiet, 22050) < logmel_distance_db(tone, loud, 22050)


# -- the command ---------------------------------------------------------------------------
def edgetts(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "edgetts.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=dict(os.environ))


def assert_one_line_error(result: subprocess.CompletedProcess[str], needle: str) -> None:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1 and len(lines) == 1, result.stderr
    assert lines[0].startswith("edgetts: error: ") and needle in lines[0], result.stderr


def test_cli_rejects_a_keep_float_that_names_no_node_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "joe-static.onnx"
    result = edgetts("quantize", "--static", "--keep-float", "/no/such/*", "-o", str(out))
    assert_one_line_error(result, "'/no/such/*' (to keep float) names no node of the graph")
    assert list(tmp_path.iterdir()) == []
    result = edgetts("quantize", "--keep-float", "/dec/*", "-o", str(out))
    assert_one_line_error(result, "--keep-float needs --static or --fp16")
    result = edgetts("quantize", "--fp16", "--activations", "int8", "-o", str(out))
    assert_one_line_error(result, "--activations needs --static")
    result = edgetts("quantize", "--calibration", str(tmp_path / "lines.txt"), "-o", str(out))
    assert_one_line_error(result, "--calibration needs --static")
    (tmp_path / "lines.txt").write_text("# only a comment\n\n")
    result = edgetts("quantize", "--static", "--calibration", str(tmp_path / "lines.txt"), "-o", str(out))
    assert_one_line_error(result, f"the calibration file {tmp_path / 'lines.txt'} has no sentence")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lines.txt"]


@pytest.mark.slow
def test_cli_writes_the_variant_and_its_config(tmp_path: Path) -> None:
    out = tmp_path / "voice" / "joe-static.onnx"
    # Only conv_pre left to choose from, calibrated on two lines of a site's own: one short measurement.
    keep = ["/enc_p/*", "/flow/*", "/dec/resblocks.*", "/dec/conv_post/*"]
    lines = tmp_path / "ours.txt"
    lines.write_text("# our announcements\nMind the gap.\n\nThe shop closes in ten minutes.\n")
    args = ["--static", "--calibration", str(lines), "--keep-float", *keep]
    result = edgetts("quantize", *args, "-o", str(out), timeout=600)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(out)
    assert "edgetts: calibrating on 2 sentences" in result.stderr.splitlines()
    assert "static: 1 Conv converted" in result.stderr
    assert sorted(p.name for p in out.parent.iterdir()) == ["joe-static.onnx", "joe-static.onnx.json"]
    recorded = variant_metadata(out)
    assert recorded is not None and recorded["converted"] == ["/dec/conv_pre/Conv"]
    assert onnx.load(str(out)).metadata_props[0].key == METADATA_KEY
    # The voice's config beside it carries the same report, and how fast the variant ran against
    # fp32 here: what the daemon's `degrade_to: int8` reads before loading it (int8_variant).
    config = json.loads(out.with_name(out.name + ".json").read_text())
    assert config["audio"]["sample_rate"] == 22050 and config[REPORT_KEY]["converted"] == ["/dec/conv_pre/Conv"]
    assert speed_ratio(out) == config[REPORT_KEY]["speed_ratio"] and 0.2 < config[REPORT_KEY]["speed_ratio"] < 5
    again = edgetts("quantize", "--fp16", "-o", str(out))
    assert_one_line_error(again, "exists (--force replaces it)")


def test_cache_writes_where_degrade_to_int8_looks_and_nothing_else(tmp_path: Path) -> None:
    """`edgetts quantize --static --cache`: the variant `voice.degrade_to: int8` finds (made by the
    daemon itself on first need, tests/daemon/test_int8_degrade.py); the options that would make
    another variant are refused, and so is a cache turned off."""
    from edgetts.cli.quantize import _cache_path

    model = default_voice_path()
    args = argparse.Namespace(static=True, keep_float=[], activations=None, calibration=None)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("EDGETTS_CACHE_DIR", str(tmp_path))
        assert _cache_path(model, args) == int8_path(model, tmp_path / "models")
    for flag in ("--keep-float", "--calibration", "--activations"):
        value = {"--keep-float": "/dec/*", "--calibration": str(tmp_path / "x"), "--activations": "int8"}[flag]
        assert_one_line_error(edgetts("quantize", "--static", "--cache", flag, value), "--static alone")
    assert_one_line_error(edgetts("quantize", "--cache"), "--static alone")
    off = subprocess.run(
        [sys.executable, "-m", "edgetts.cli", "quantize", "--static", "--cache"],
        capture_output=True,
        text=True,
        env={**os.environ, "EDGETTS_CACHE_DIR": ""},
        timeout=120,
    )
    assert_one_line_error(off, "the model cache is off")
    both = edgetts("quantize", "--static", "--cache", "-o", str(tmp_path / "v.onnx"))
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
    assert not list(tmp_path.rglob("*.onnx"))


def test_int8_path_names_the_file_and_changes_with_it(tmp_path: Path) -> None:
    model = tmp_path / "v.onnx"
    model.write_bytes(b"1")
    first = int8_path(model, tmp_path / "c")
    assert first == int8_path(model, tmp_path / "c") and first.parent == tmp_path / "c" / "int8"
    model.write_bytes(b"22")  # an edited or upgraded voice: made again
    assert int8_path(model, tmp_path / "c") != first
    assert speed_ratio(first) is None  # no variant (and no config) there
    first.parent.mkdir(parents=True)
    first.with_name(first.name + ".json").write_text(json.dumps({REPORT_KEY: {"speed_ratio": -1}}))
    assert speed_ratio(first) is None  # a ratio that is no ratio is not believed
    # A new optimised form of the voice drops its older ones, never the variant beside them.
    variant = int8_path(model, tmp_path / "c")
    variant.parent.mkdir(parents=True, exist_ok=True)
    variant.write_bytes(b"int8")
    old = tmp_path / "c" / f"{family(model)}0123.onnx"
    old.write_bytes(b"an older optimised form")
    assert stale_entries(tmp_path / "c", model, "current.onnx") == [old]
