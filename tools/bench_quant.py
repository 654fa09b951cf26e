#!/usr/bin/env python3
"""Quantized variants of the default voice against fp32: the quality gate and the speed ratio.

Seeded noise (issue 19) makes the gate deterministic: every corpus line (tests/data/spoken_corpus.tsv,
the daemon's normaliser on) is spoken with the same seed by fp32 and by each variant, whole
sentences.  Variants keep the durations float (edgetts/voice/piper/quantize_static.py), so the two
renderings are sample-aligned (``misaligned`` counts the pairs that were not: then compared on
their common length).  Per variant, exactly:

- ``wer`` / ``wer_fp32``: pocketsphinx word error rate (tools/asr.py, a fresh decoder per file),
  mean over lines and seeds, of the variant and of fp32 on the same lines and seeds;
- ``logmel_db_median`` / ``logmel_db_max``: log-mel distance to fp32, same line and seed
  (``logmel_distance_db``: dB, RMS over 80 mel bands, mean over frames, floored 80 dB down);
- ``snr_db_median``: fp32 over (variant - fp32) in dB: low for the flow's changes, which move the
  waveform's fine structure as another noise seed does, without changing the sound's spectrum;
- ``rtf_ratio_vs_fp32``: the variant's synthesis time over fp32's, the sum over lines of each
  line's fastest run over the seeds, both in this process at ``--threads`` (noisy on a shared machine);
- ``size_mb``: the model file, 10^6 bytes.

The gate (``passes_gate``): WER at most one point above fp32's and ``logmel_db_median`` at most
1.5 dB.  Why 1.5: two fp32 renderings of a line that differ only in the prior's noise seed (durations
held equal with noise_w 0, so they align), audibly the same voice, are ~2.7 dB apart
(``fp32_seed_logmel_db_median``, measured every run); a variant may change the sound at most about
half as much as the voice's own noise does.  The static variant's sensitivity pass aims at 1 dB on
its own sentences.  ``streams``: the variant loads split for streaming (edgetts/voice/piper/graph_split.py).

    python -m tools.bench_quant [--variant NAME=PATH ...] [--dir DIR] [--lines 1 4 ...] [--seeds 0 1 2]
                                [--threads 1] [--json OUT]

Without ``--variant``: the dynamic (``edgetts quantize``), static (``--static``) and fp16
(``--fp16``) variants are made first (in ``--dir`` if given and reused from there, else in a
temporary directory; the static one takes minutes).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tools.asr import transcribe, word_error_rate
from tools.bench_wer import corpus
from tools.results import default_path, write_result

GATE_WER_POINTS = 0.01
"""A variant's WER may be this much above fp32's (one point)."""
GATE_LOGMEL_DB = 1.5
"""A variant's median log-mel distance to fp32 may be this large (see the module's docstring)."""
VARIANTS = ("dynamic", "static", "fp16")
KEYS = ("wer", "wer_fp32", "logmel_db_median", "logmel_db_max", "snr_db_median", "rtf_ratio_vs_fp32", "size_mb")
"""Per variant, exactly these (an interface other tools read)."""


def make_variants(directory: Path, names: Sequence[str] = VARIANTS) -> dict[str, Path]:
    """The variants of the default voice in ``directory``, made where missing."""
    from edgetts.cli.quantize import quantize_voice
    from edgetts.voice.catalog import default_voice_path
    from edgetts.voice.piper.quantize_static import convert_fp16, quantize_static_voice

    source = default_voice_path()
    made = {}
    for name in names:
        path = directory / f"joe-{name}.onnx"
        if not path.is_file():
            print(f"making the {name} variant", flush=True)
            if name == "dynamic":
                quantize_voice(source, path)
            elif name == "static":
                quantize_static_voice(source, path, progress=lambda line: print(f"  {line}", flush=True))
            else:
                convert_fp16(source, path)
        made[name] = path
    return made


def _load(path: Path, threads: int, streaming: bool = False) -> Any:
    from edgetts.voice.onnx_session import RuntimeOptions
    from edgetts.voice.piper.voice import PiperVoice

    return PiperVoice.load(path, runtime=RuntimeOptions(threads=threads), cache_dir=None, streaming=streaming)


def _speak(voice: Any, text: str, seed: int, noise_w: float | None = None) -> tuple[np.ndarray, float]:
    """Raw (unnormalised) audio of ``text`` at ``seed`` and the seconds it took."""
    from edgetts.engine import SynthesisConfig

    config = SynthesisConfig(seed=seed, noise_w=noise_w, normalize_audio=False)
    started = time.perf_counter()
    audio = np.concatenate([chunk.audio for chunk in voice.synthesize(text, config)])
    return audio, time.perf_counter() - started


def _wer(audio: np.ndarray, rate: int, words: list[str]) -> float:
    peak = float(np.max(np.abs(audio)))
    return word_error_rate(words, transcribe(audio / max(peak, 1e-6), rate))


def _snr_db(reference: np.ndarray, other: np.ndarray) -> float:
    error = float(np.sum((reference.astype(np.float64) - other) ** 2))
    return 10.0 * float(np.log10(float(np.sum(reference.astype(np.float64) ** 2)) / max(error, 1e-20)))


def _seed_distance(voice: Any, lines: list[tuple[str, list[str]]], seed: int) -> float:
    """Median log-mel distance between two fp32 renderings per line, prior noise seeds apart, same durations."""
    from edgetts.voice.piper.logmel import logmel_distance_db

    distances = []
    for text, _ in lines:
        a, _ = _speak(voice, text, seed, noise_w=0.0)
        b, _ = _speak(voice, text, seed + 1000, noise_w=0.0)
        distances.append(logmel_distance_db(a, b, voice.sample_rate))
    return float(statistics.median(distances))


def measure(variants: dict[str, Path], lines: Sequence[int] | None, seeds: list[int], threads: int) -> dict[str, Any]:
    from edgetts.voice.catalog import default_voice_path
    from edgetts.voice.piper.logmel import logmel_distance_db
    from edgetts.voice.piper.quantize_static import variant_metadata

    chosen = corpus(lines)
    fp32 = _load(default_voice_path(), threads)
    voices = {name: _load(path, threads) for name, path in variants.items()}
    rate = fp32.sample_rate
    wers: dict[str, list[float]] = {name: [] for name in ["fp32", *variants]}
    times: dict[str, list[float]] = {name: [] for name in ["fp32", *variants]}
    logmel: dict[str, list[float]] = {name: [] for name in variants}
    snr: dict[str, list[float]] = {name: [] for name in variants}
    misaligned = dict.fromkeys(variants, 0)
    for number, (text, words) in enumerate(chosen, start=1):
        fastest = {name: float("inf") for name in times}
        for seed in seeds:
            reference, seconds = _speak(fp32, text, seed)
            fastest["fp32"] = min(fastest["fp32"], seconds)
            wers["fp32"].append(_wer(reference, rate, words))
            for name, voice in voices.items():
                audio, seconds = _speak(voice, text, seed)
                fastest[name] = min(fastest[name], seconds)
                wers[name].append(_wer(audio, rate, words))
                n = min(audio.size, reference.size)
                misaligned[name] += int(audio.size != reference.size)
                logmel[name].append(logmel_distance_db(reference[:n], audio[:n], rate))
                snr[name].append(_snr_db(reference[:n], audio[:n]))
        for name, seconds in fastest.items():
            times[name].append(seconds)
        print(
            f"line {number}/{len(chosen)}: " + ", ".join(f"{k} {v[-1]:.2f} dB" for k, v in logmel.items()), flush=True
        )
    results = {
        name: {
            "wer": statistics.fmean(wers[name]),
            "wer_fp32": statistics.fmean(wers["fp32"]),
            "logmel_db_median": statistics.median(logmel[name]),
            "logmel_db_max": max(logmel[name]),
            "snr_db_median": statistics.median(snr[name]),
            "rtf_ratio_vs_fp32": sum(times[name]) / sum(times["fp32"]),
            "size_mb": path.stat().st_size / 1e6,
        }
        for name, path in variants.items()
    }
    seed_db = _seed_distance(fp32, chosen, seeds[0])
    return {
        "lines": list(lines) if lines else len(chosen),
        "seeds": seeds,
        "threads": threads,
        "gate": {"wer_points": GATE_WER_POINTS, "logmel_db_median": GATE_LOGMEL_DB},
        "fp32_seed_logmel_db_median": seed_db,
        "fp32_size_mb": default_voice_path().stat().st_size / 1e6,
        "variants": results,
        "passes_gate": {name: passes_gate(values) for name, values in results.items()},
        "misaligned": misaligned,
        "streams": {name: _load(path, threads, streaming=True).split is not None for name, path in variants.items()},
        "kept_float": {name: (variant_metadata(path) or {}).get("kept_float") for name, path in variants.items()},
    }


def passes_gate(values: dict[str, float]) -> bool:
    """WER within a point of fp32's and the median log-mel distance within the threshold."""
    return values["wer"] - values["wer_fp32"] <= GATE_WER_POINTS + 1e-9 and values["logmel_db_median"] <= GATE_LOGMEL_DB


def _variant_arg(text: str) -> tuple[str, Path]:
    name, sep, path = text.partition("=")
    if not sep or not name or not Path(path).is_file():
        raise argparse.ArgumentTypeError(f"expected NAME=PATH of a model file, not {text!r}")
    return name, Path(path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variant", type=_variant_arg, action="append", help="NAME=PATH of a variant to judge")
    parser.add_argument("--dir", type=Path, help="make the variants here, reusing those already there")
    parser.add_argument("--lines", type=int, nargs="+", help="only these lines of the corpus (1-based)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--json", type=Path, default=default_path("bench_quant"), help="write the results here (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-quant-") as tmp:
        if args.variant:
            variants = dict(args.variant)
        else:
            directory = args.dir or Path(tmp)
            directory.mkdir(parents=True, exist_ok=True)
            variants = make_variants(directory)
        result = measure(variants, args.lines, args.seeds, args.threads)
    print(json.dumps({"variants": result["variants"], "passes_gate": result["passes_gate"]}, indent=1))
    print(f"fp32, two prior seeds apart: {result['fp32_seed_logmel_db_median']:.2f} dB (median)")
    write_result("bench_quant", result, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
