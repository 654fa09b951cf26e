#!/usr/bin/env python3
"""The NPU's accuracy, measured in Rockchip's x86 simulator (issue 41): what it computes, not how fast.

The default voice is converted as `edgetts export-rknn` converts it (fp16, or ``--int8``), by the
toolkit in its own venv (scripts/rknn-venv.sh; ``--rknn-python`` or $EDGETTS_RKNN_PYTHON), and each
model is kept in the simulator (tools/rknn_sim.py).  Then every corpus line (tests/data/spoken_corpus.tsv,
the daemon's normaliser on) is spoken twice with the same noise seed, through the product's own
streaming path: by the voice with the simulator as its NPU (edgetts.voice.accel.npu), and by the same
voice on the CPU.

- ``snr_db_median`` / ``snr_db_min``: every NPU run of those announcements (flow spans and decoder
  windows, as the plan cut them, padded to the converted sizes) against onnxruntime's output for the
  same inputs: signal over difference, dB (per part in ``snr_db_by_part``).  Targets: 30 / 20.
- ``wer_npu_sim`` / ``wer_cpu``: pocketsphinx word error rate (tools/asr.py via tools/bench_wer.py), mean
  over lines and seeds, of the announcements spoken each way.  Target: the NPU's within one point of
  the CPU's.  Any change to the audio at all moves a line's WER now and then (docs/benchmarking.md,
  "Intelligibility"), so the pairs (same line, same seed) are reported too: ``wer_npu_minus_cpu`` and
  its standard error ``wer_npu_minus_cpu_se``, and how many pairs went each way.

Speed on a board is not measured here: the simulator says nothing about it (docs/npu.md keeps the
published figures apart).

    python -m tools.bench_npu [--target rk3588] [--int8] [--lines 1 4 ...] [--seeds 0 1 ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tools.bench_wer import corpus, line_wers
from tools.results import default_path, write_result
from tools.rknn_sim import SimRuntime, Simulator, rknn_python

TARGET_SNR_MEDIAN = 30.0
TARGET_SNR_MIN = 20.0
TARGET_WER_POINTS = 0.01


class Compared:
    """A runtime object that compares each inference with onnxruntime's output for the same (padded)
    inputs as it goes: only the SNR is kept (a corpus's windows would be hundreds of MB)."""

    def __init__(self, inner: SimRuntime, reference: dict[str, Any], snrs: dict[str, list[float]]) -> None:
        self._inner, self._reference, self._snrs, self._part = inner, reference, snrs, ""

    def load_rknn(self, path: str) -> int:
        self._part = Path(path).name.split("-")[0]  # flow-N.rknn, tail-N.rknn
        return self._inner.load_rknn(path)

    def init_runtime(self, core_mask: int = 0) -> int:
        return self._inner.init_runtime(core_mask=core_mask)

    def inference(self, inputs: list[np.ndarray], **kw: Any) -> list[np.ndarray] | None:
        out = self._inner.inference(inputs, **kw)
        if out:
            session = self._reference[self._part]
            names = [i.name for i in session.get_inputs()]
            self._snrs[self._part].append(snr_db(session.run(None, dict(zip(names, inputs)))[0], out[0]))
        return out

    def release(self) -> None:
        self._inner.release()


def snr_db(reference: np.ndarray, other: np.ndarray) -> float:
    reference = reference.astype(np.float64).reshape(-1)
    error = float(np.sum((reference - other.astype(np.float64).reshape(-1)) ** 2))
    return 10.0 * float(np.log10(max(float(np.sum(reference**2)), 1e-20) / max(error, 1e-20)))


def _voice(threads: int) -> Any:
    from edgetts.voice.catalog import load_voice

    return load_voice("default", threads=threads, streaming=True, fast_start_ids=64)


def _reference(voice: Any) -> dict[str, Any]:
    """onnxruntime sessions of the voice's flow and decoder: what each NPU run is compared with."""
    from edgetts.voice.onnx_session import RuntimeOptions, create_session

    return {part: create_session(getattr(voice.split, part), RuntimeOptions(threads=1)) for part in ("flow", "tail")}


def measure(
    python: Path, target: str, int8: bool, lines: Sequence[int] | None, seeds: Sequence[int], threads: int
) -> dict[str, Any]:
    from edgetts.engine import SynthesisConfig
    from edgetts.voice.accel.npu import attach_npu
    from edgetts.voice.accel.rknn_export import ExportPlan, export_voice

    chosen = corpus(lines)
    with tempfile.TemporaryDirectory(prefix="bench-npu-") as tmp:
        simulator = Simulator(python, Path(tmp) / "simulator.log")
        try:
            cpu = _voice(threads)
            export = Path(tmp) / "voices" / f"{cpu.name}.rknn"
            plan = ExportPlan(target, int8=int8)
            manifest = export_voice(cpu, plan, export, simulator, workdir=Path(tmp) / "work", progress=print)
            by_part: dict[str, list[float]] = {"flow": [], "tail": []}
            reference = _reference(cpu)
            npu_voice = _voice(threads)
            npu = attach_npu(
                npu_voice,
                [export.parent],
                factory=lambda: Compared(simulator.runtime(), reference, by_part),
                soc=target,
            )
            if npu.problem is not None:
                raise SystemExit(f"bench_npu: the simulator's NPU was refused: {npu.problem}")

            def speak(voice: Any, seed: int) -> Any:
                config = SynthesisConfig(seed=seed)
                return lambda text: np.concatenate([c.audio for c in voice.synthesize(text, config)])

            wer_npu: list[float] = []
            wer_cpu: list[float] = []
            for seed in seeds:
                wer_npu += line_wers(speak(npu_voice, seed), npu_voice.sample_rate, chosen)
                wer_cpu += line_wers(speak(cpu, seed), cpu.sample_rate, chosen)
                print(f"seed {seed}: WER npu {statistics.fmean(wer_npu):.3f}, cpu {statistics.fmean(wer_cpu):.3f}")
            if npu.problem is not None:
                raise SystemExit(f"bench_npu: an inference failed in the simulator: {npu.problem}")
        finally:
            simulator.close()
    every = by_part["flow"] + by_part["tail"]
    pairs = [n - c for n, c in zip(wer_npu, wer_cpu)]
    result = {
        "target": target,
        "windows": manifest.to_json()["windows"],
        "snr_db_median": statistics.median(every),
        "snr_db_min": min(every),
        "wer_npu_sim": statistics.fmean(wer_npu),
        "wer_cpu": statistics.fmean(wer_cpu),
        "snr_db_by_part": {
            part: {"median": statistics.median(v), "min": min(v), "runs": len(v)} for part, v in by_part.items() if v
        },
        "dtype": manifest.dtype,
        "toolkit": manifest.toolkit,
        "wer_npu_minus_cpu": statistics.fmean(pairs),
        "wer_npu_minus_cpu_se": (statistics.stdev(pairs) / len(pairs) ** 0.5) if len(pairs) > 1 else 0.0,
        "pairs": len(pairs),
        "pairs_npu_worse": sum(1 for d in pairs if d > 1e-9),
        "pairs_npu_better": sum(1 for d in pairs if d < -1e-9),
        "lines": list(lines) if lines else len(chosen),
        "seeds": list(seeds),
    }
    result["passes"] = (
        result["snr_db_median"] >= TARGET_SNR_MEDIAN
        and result["snr_db_min"] >= TARGET_SNR_MIN
        and result["wer_npu_sim"] - result["wer_cpu"] <= TARGET_WER_POINTS + 1e-9
    )
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rknn-python", type=Path, default=None, help="the rknn venv's python (scripts/rknn-venv.sh)")
    parser.add_argument("--target", default="rk3588", choices=("rk3588", "rk3576", "rk3566"))
    parser.add_argument("--int8", action="store_true", help="convert int8 (refused by the export's gate if worse)")
    parser.add_argument("--lines", type=int, nargs="+", default=None, help="corpus lines (1-based; default all)")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(10)), help="noise seeds (default 0-9)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path, default=default_path("bench_npu"))
    args = parser.parse_args(argv)
    python = args.rknn_python or rknn_python()
    if python is None:
        print("bench_npu: no rknn venv: build it with scripts/rknn-venv.sh and pass --rknn-python", file=sys.stderr)
        return 2
    result = measure(python, args.target, args.int8, args.lines, args.seeds, args.threads)
    write_result("bench_npu", result, args.json)
    keys = ("target", "windows", "snr_db_median", "snr_db_min", "wer_npu_sim", "wer_cpu", "passes")
    print({k: result[k] for k in keys})
    return 0


if __name__ == "__main__":
    sys.exit(main())
