"""Rockchip's converter and x86 simulator behind the product's NPU adapter (issue 41).

The --rknn tier (scripts/test.sh --rknn): skipped unless $EDGETTS_RKNN_PYTHON names the python of
the converter's own venv (scripts/rknn-venv.sh).  The voice is converted as `edgetts export-rknn`
converts it, each model kept in the simulator (tools/rknn_sim.py), and the product's streaming path
runs with the simulator as its NPU.  The whole corpus's figures: tools/bench_npu.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgetts.engine import SynthesisConfig
from edgetts.voice.accel.manifest import read_manifest, sha256_of
from edgetts.voice.accel.npu import attach_npu
from edgetts.voice.accel.rknn_export import ExportPlan, export_voice
from edgetts.voice.catalog import default_voice_path
from edgetts.voice.model_cache import default_cache_dir
from edgetts.voice.onnx_session import RuntimeOptions
from edgetts.voice.piper.voice import PiperVoice
from edgetts.voice.piper.windows import StreamingOptions

from support.paths import ROOT
from tools.bench_npu import snr_db
from tools.rknn_sim import Simulator, rknn_python

PYTHON = rknn_python()
pytestmark = pytest.mark.skipif(PYTHON is None, reason="needs the rknn venv: scripts/test.sh --rknn")

SENTENCE = "Platform two for the delayed service to Leeds, calling at Wakefield Westgate."


def _voice() -> PiperVoice:
    return PiperVoice.load(
        default_voice_path(),
        name="default",
        runtime=RuntimeOptions(threads=2),
        cache_dir=default_cache_dir(),
        streaming=StreamingOptions(),
    )


@pytest.fixture(scope="module")
def simulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Simulator]:
    assert PYTHON is not None
    sim = Simulator(PYTHON, tmp_path_factory.mktemp("sim") / "simulator.log")
    yield sim
    sim.close()


@pytest.fixture(scope="module")
def exported(simulator: Simulator, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("voices") / "default.rknn"
    export_voice(_voice(), ExportPlan("rk3588"), out, simulator, workdir=tmp_path_factory.mktemp("work"))
    return out


def test_the_export_writes_every_window_and_the_manifest(exported: Path) -> None:
    manifest = read_manifest(exported)
    assert (manifest.target, manifest.dtype, manifest.hop) == ("rk3588", "fp16", 256)
    assert manifest.toolkit.startswith("rknn-toolkit2 2.5"), manifest.toolkit
    assert manifest.voice_sha256 == sha256_of(default_voice_path())
    assert {p: sorted(m.models) for p, m in manifest.parts.items()} == {
        "flow": [24, 112, 240, 336],
        "tail": [10, 44, 140],
    }
    on_disk = json.loads((exported / "manifest.json").read_text())
    assert on_disk["windows"] == {"flow": [24, 112, 240, 336], "tail": [10, 44, 140]}
    for name, entry in manifest.files.items():
        assert (exported / name).stat().st_size == entry["bytes"] > 1000


def test_the_simulator_speaks_through_the_product_s_streaming_path(simulator: Simulator, exported: Path) -> None:
    voice, cpu = _voice(), _voice()
    npu = attach_npu(voice, [exported.parent], core_mask=7, factory=simulator.runtime, soc="rk3588")
    assert npu.problem is None
    before = simulator.inferences
    config = SynthesisConfig(seed=11)
    heard = np.concatenate([c.audio for c in voice.synthesize(SENTENCE, config)])
    assert npu.problem is None and simulator.inferences - before >= 4  # flow and decoder windows ran there
    ids = cpu.frontend.sentence_ids(SENTENCE)[0]
    # the same windows both ways (the plans follow each voice's measured speed): the voice's own schedule
    on_npu = np.concatenate([p for p, _ in voice.stream(ids, config)])
    on_cpu = np.concatenate([p for p, _ in cpu.stream(ids, config)])
    assert on_npu.size == on_cpu.size and heard.size > 0
    assert snr_db(on_cpu, on_npu) > 20.0, snr_db(on_cpu, on_npu)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EDGETTS_RKNN_PYTHON": str(PYTHON)}
    return subprocess.run(
        [sys.executable, "-m", "edgetts.cli", "export-rknn", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=3600,
        check=False,
    )


def test_the_cli_converts_in_its_venv_and_a_model_for_another_board_is_refused(
    simulator: Simulator, tmp_path: Path
) -> None:
    out = tmp_path / "voices" / "en_US-joe-medium.rknn"
    done = _cli("--target", "rk3566", "--window", "44", "-o", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == str(out / "manifest.json")
    manifest = read_manifest(out)
    assert manifest.target == "rk3566" and sorted(manifest.parts["tail"].models) == [44]
    again = _cli("--target", "rk3566", "-o", str(out))
    assert again.returncode == 1 and "--force" in again.stderr
    voice = _voice()
    npu = attach_npu(voice, [out.parent], factory=simulator.runtime, soc="rk3588")
    assert npu.problem is not None and "converted for rk3566, this board is rk3588" in npu.problem
    assert voice.accelerator is npu and len(list(voice.synthesize("Mind the gap."))) > 0  # the CPU speaks


def test_int8_is_written_only_if_it_passes_the_gate(simulator: Simulator, tmp_path: Path) -> None:
    from edgetts.errors import VoiceError

    out = tmp_path / "int8.rknn"
    plan = ExportPlan("rk3588", windows=(44,), flow_windows=(112,), int8=True)
    said: list[str] = []
    try:
        manifest: Any = export_voice(_voice(), plan, out, simulator, workdir=tmp_path / "work", progress=said.append)
    except VoiceError as err:
        assert "over the 1.5 dB gate: nothing written" in str(err)
        assert not out.exists()
    else:
        assert manifest.dtype == "int8" and (out / "manifest.json").is_file()
    gated = [line for line in said if line.startswith("int8 ")]
    assert gated and all("log-mel distance" in line for line in gated), said
