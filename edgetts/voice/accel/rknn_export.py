"""The product side of `edgetts export-rknn`: a voice's flow and decoder at fixed window sizes, as RKNN.

The voice is split as for streaming (:mod:`edgetts.voice.piper.graph_split`); its flow and decoder
(``tail``) ONNX parts, with every input's frame axis fixed at each window size, are converted by
rknn-toolkit2 in a virtualenv of its own (:mod:`.rknn_job`, run by path: the toolkit never imports
into edgetts).  fp16 by default; int8 only when asked, and only if each model passes the gate the
CPU int8 variants are held to (log-mel distance to fp32 at most :data:`INT8_GATE_DB`, judged here on
the simulator's output for windows of sentences it was not calibrated on).  The files and
``manifest.json`` (:mod:`.manifest`) are written last, whole or not at all.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import statistics
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from edgetts.engine import SynthesisConfig
from edgetts.errors import VoiceError
from edgetts.voice.accel import rknn_job
from edgetts.voice.accel.manifest import PARTS, Manifest, PartModels, describe, sha256_of, write_manifest

_LOGGER = logging.getLogger(__name__)

WINDOWS = (10, 44, 140)
"""Decoder runs (frames, context included) converted by default: the voice's own schedule (4, 32, 128,
... frames with 6 of context each side: 10, 42-44, 140); a run between two sizes is padded to the next,
and the plan's other first windows (8-128 frames) all fit in 140 (docs/streaming.md)."""

FLOW_WINDOWS = (24, 112, 240, 336)
"""Flow runs converted: the first window's short run (22 frames for a 4-frame window), the second
window's (108), the spans of FLOW_CHUNK + 2 x FLOW_REACH = 240 frames, and a sentence's last span, which
takes a remainder of under half a chunk (at most 335)."""

INT8_GATE_DB = 1.5
"""Largest median log-mel distance to fp32 an int8 model may add: tools/bench_quant.py's gate for the
CPU int8 variants (about half of what another noise seed changes)."""

RKNN_VENV = Path("/var/cache/edgetts/rknn-venv")
"""Where scripts/rknn-venv.sh builds the converter's virtualenv ($EDGETTS_RKNN_PYTHON overrides)."""

CALIBRATION = 6
"""Sentences of CALIBRATION_SENTENCES an int8 model is calibrated on; the next 3 judge it."""

Progress = Callable[[str], None]


def rknn_python() -> Path:
    """The converter venv's python: $EDGETTS_RKNN_PYTHON, else scripts/rknn-venv.sh's default place."""
    return Path(os.environ.get("EDGETTS_RKNN_PYTHON") or RKNN_VENV / "bin" / "python")


class Converter(Protocol):
    """Runs a conversion job (:func:`rknn_job.convert`'s input) and returns its report."""

    def convert(self, job: dict[str, Any]) -> dict[str, Any]: ...


@dataclass(frozen=True)
class OneShot:
    """The converter as one process of the rknn venv's python per export."""

    python: Path

    def check(self) -> None:
        """VoiceError, one line naming scripts/rknn-venv.sh, when the venv is not there."""
        if not self.python.is_file():
            raise VoiceError(
                f"no rknn-toolkit2 venv at {self.python}: build it with scripts/rknn-venv.sh "
                "(or point EDGETTS_RKNN_PYTHON at its python)"
            )

    def convert(self, job: dict[str, Any]) -> dict[str, Any]:
        self.check()
        with tempfile.TemporaryDirectory(prefix="edgetts-rknn-job-") as tmp:
            job_file, report_file = Path(tmp) / "job.json", Path(tmp) / "report.json"
            job_file.write_text(json.dumps(job), encoding="utf-8")
            done = subprocess.run(
                [str(self.python), str(rknn_job.SCRIPT), "convert", str(job_file), str(report_file)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                check=False,
            )
            try:
                report: dict[str, Any] = json.loads(report_file.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                tail = done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]
                raise VoiceError(f"the RKNN converter failed: {tail[0]}") from None
        if "error" in report:
            raise VoiceError(f"the RKNN converter failed: {report['error']}")
        return report


@dataclass(frozen=True)
class ExportPlan:
    """What to convert: the voice, the SoC, the decoder's and the flow's window sizes, fp16 or int8."""

    target: str
    windows: tuple[int, ...] = WINDOWS
    flow_windows: tuple[int, ...] = FLOW_WINDOWS
    int8: bool = False


def export_voice(
    voice: Any,
    plan: ExportPlan,
    out_dir: Path,
    converter: Converter,
    *,
    workdir: Path | None = None,
    progress: Progress = _LOGGER.info,
) -> Manifest:
    """Convert ``voice`` (a streamed :class:`~edgetts.voice.piper.voice.PiperVoice`) as ``plan`` says into
    ``out_dir``; ``workdir`` keeps the fixed-shape ONNX parts and the job (tools/rknn_sim.py reads them)."""
    if voice.split is None or voice.split.flow is None:
        raise VoiceError(f"voice {voice.name} cannot be split into front, flow and decoder: the NPU needs that")
    with tempfile.TemporaryDirectory(prefix="edgetts-rknn-") as tmp:
        work = workdir or Path(tmp)
        stage = Path(tmp) / "out"
        stage.mkdir(parents=True)
        work.mkdir(parents=True, exist_ok=True)
        job = _job(voice, plan, work, stage)
        (work / "job.json").write_text(json.dumps(job, indent=1), encoding="utf-8")
        progress(f"converting {len(job['models'])} models for {plan.target} ({job['dtype']}): minutes")
        report = converter.convert(job)
        if plan.int8:
            _gate(voice, job, progress)
        parts = {
            part: PartModels(
                tuple(job["inputs"][part]),
                {int(m["frames"]): Path(m["output"]).name for m in job["models"] if m["part"] == part},
            )
            for part in PARTS
        }
        out_dir.mkdir(parents=True, exist_ok=True)
        files = {}
        for model in job["models"]:
            staged = Path(model["output"])
            files[staged.name] = describe(staged)
            shutil.move(str(staged), out_dir / staged.name)
        manifest = Manifest(
            voice.name,
            sha256_of(voice.model_path),
            plan.target,
            job["dtype"],
            str(report.get("toolkit", "rknn-toolkit2")),
            voice.split.hop,
            parts,
            files,
        )
        write_manifest(out_dir, manifest)
    return manifest


def _job(voice: Any, plan: ExportPlan, work: Path, stage: Path) -> dict[str, Any]:
    """The conversion job: each part's ONNX (written into ``work``) at each window size."""
    import onnx

    sources = {"flow": voice.split.flow, "tail": voice.split.tail}
    inputs: dict[str, list[str]] = {}
    channels = _channels(voice)
    sentences = _int8_sentences(voice) if plan.int8 else []
    models = []
    for part, sizes in (("flow", plan.flow_windows), ("tail", plan.windows)):
        onnx_path = work / f"{part}.onnx"
        source = sources[part]
        if isinstance(source, bytes):
            onnx_path.write_bytes(source)
        else:
            shutil.copyfile(source, onnx_path)
        graph = onnx.load(str(onnx_path), load_external_data=False).graph
        known = {init.name for init in graph.initializer}
        inputs[part] = [i.name for i in graph.input if i.name not in known]
        for frames in sorted(set(sizes)):
            model: dict[str, Any] = {
                "part": part,
                "frames": frames,
                "onnx": str(onnx_path),
                "inputs": inputs[part],
                "shapes": [[1, channels[name], frames] for name in inputs[part]],
                "output": str(stage / f"{part}-{frames}.rknn"),
            }
            if plan.int8:
                model.update(_int8_data(sentences, part, frames, inputs[part], work))
            models.append(model)
    return {"target": plan.target, "dtype": "int8" if plan.int8 else "fp16", "inputs": inputs, "models": models}


def _sentences(voice: Any, texts: Sequence[str]) -> list[list[int]]:
    return [ids for text in texts for ids in voice.frontend.sentence_ids(text)]


def _flow_and_tail_feeds(voice: Any, ids: list[int]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """A sentence's flow inputs (the front's outputs) and decoder inputs, whole, at noise 0."""
    config = SynthesisConfig(noise_scale=0.0, noise_w=0.0, seed=0)
    front = voice.front(ids, config, list(voice.split.front_outputs))
    flow = {name: front[name] for name in voice.split.flow_inputs}
    latent = voice.latent(ids, config)
    return flow, latent.window(0, latent.frames)


def _channels(voice: Any) -> dict[str, int]:
    """Each flow and decoder input's channels, from one run of a sentence."""
    flow, tail = _flow_and_tail_feeds(voice, _sentences(voice, ["Mind the gap."])[0])
    return {name: int(value.shape[1]) for name, value in {**flow, **tail}.items()}


def _windows(feeds: dict[str, np.ndarray], frames: int) -> list[dict[str, np.ndarray]]:
    """Windows of ``frames`` frames of a sentence's feeds (one, zero-padded, if it is shorter)."""
    total = max(v.shape[-1] for v in feeds.values())
    starts = range(0, max(1, total - frames + 1), max(1, frames // 2)) if total >= frames else [0]
    out = []
    for lo in starts:
        window = {}
        for name, value in feeds.items():
            piece = value[..., lo : lo + frames]
            pad = frames - piece.shape[-1]
            window[name] = np.pad(piece, [(0, 0)] * (piece.ndim - 1) + [(0, pad)]).astype(np.float32)
        out.append(window)
    return out


def _int8_sentences(voice: Any) -> list[tuple[dict[str, np.ndarray], dict[str, np.ndarray]]]:
    """The flow and decoder inputs of the sentences int8 models are calibrated on (the first
    CALIBRATION) and judged on (the next 3)."""
    from edgetts.voice.piper.quantize_static import CALIBRATION_SENTENCES

    return [_flow_and_tail_feeds(voice, ids) for ids in _sentences(voice, CALIBRATION_SENTENCES[: CALIBRATION + 3])]


def _int8_data(
    sentences: list[tuple[dict[str, np.ndarray], dict[str, np.ndarray]]],
    part: str,
    frames: int,
    names: list[str],
    work: Path,
) -> dict[str, str]:
    """An int8 model's calibration dataset (the toolkit's text file of .npy paths) and check inputs."""
    folder = work / f"int8-{part}-{frames}"
    folder.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []
    checks: dict[str, np.ndarray] = {}
    for index, (flow, tail) in enumerate(sentences):
        for w, window in enumerate(_windows(flow if part == "flow" else tail, frames)):
            if index < CALIBRATION:
                paths = [folder / f"{index}-{w}-{n}.npy" for n in range(len(names))]
                for path, name in zip(paths, names):
                    np.save(path, window[name])
                lines.append(" ".join(str(p) for p in paths))
            else:
                count = len(checks) // len(names)
                checks.update({f"{n}_{count}": window[name] for n, name in enumerate(names)})
    (folder / "dataset.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    np.savez(folder / "check.npz", **checks)  # type: ignore[arg-type]
    return {
        "dataset": str(folder / "dataset.txt"),
        "check": str(folder / "check.npz"),
        "check_out": str(folder / "check-out.npz"),
    }


def _gate(voice: Any, job: dict[str, Any], progress: Progress) -> None:
    """Refuse int8 models whose decoded windows move further than INT8_GATE_DB from fp32's."""
    from edgetts.voice.piper.logmel import logmel_distance_db

    tail_input = voice.split.frame_inputs[0]
    run_flow = voice.flow_runner()
    for model in job["models"]:
        names = model["inputs"]
        with np.load(model["check"]) as given, np.load(model["check_out"]) as got:
            distances = []
            for w in sorted(got.files, key=int):
                feeds = {name: given[f"{n}_{w}"] for n, name in enumerate(names)}
                if model["part"] == "flow":
                    cpu = voice.decode({tail_input: run_flow(feeds)})
                    npu = voice.decode({tail_input: got[w]})
                else:
                    cpu, npu = voice.decode(feeds), got[w].reshape(-1)
                distances.append(logmel_distance_db(cpu, npu[: cpu.size], voice.sample_rate))
        median = statistics.median(distances)
        progress(f"int8 {model['part']} at {model['frames']} frames: log-mel distance {median:.2f} dB")
        if median > INT8_GATE_DB:
            raise VoiceError(
                f"int8 {model['part']} at {model['frames']} frames is {median:.2f} dB (log-mel) from fp32, over "
                f"the {INT8_GATE_DB} dB gate: nothing written (fp16, the default, is the NPU's float)"
            )
