#!/usr/bin/env python3
"""Intelligibility of the default (streaming with fast start) against whole sentences.

pocketsphinx word error rate over the spoken corpus (tests/data/spoken_corpus.tsv:
the announcement lines and their hand-written spoken forms), as the daemon speaks
them (normaliser on), for each noise seed: each text is spoken with that seed
(`SynthesisConfig.seed`), the same for every mode, so the modes differ only in how they decode.  Each
file is decoded by a fresh pocketsphinx decoder (its live cepstral-mean
normalisation otherwise carries over from one utterance to the next and moves a
figure by ~1.5 points with the order of decoding).

    python -m tools.bench_wer [--seeds 0 1 ... 9] [--threads 2] [--json OUT]

A figure moves by a point or two with anything that changes the audio at all (another noise seed,
the same audio 2 dB quieter), so the modes are compared pair by pair: the same line and seed
spoken by `default` and by `whole`, the mean of the differences and its standard error
(`default_minus_whole`, `default_minus_whole_se`), and how many pairs each way.

Modes: `default` (the daemon's default voice settings), `whole` (voice.streaming
false), `fast_forced` (fast start on every first sentence over 96 ids, whatever
the plan would pick: the worst case of its intelligibility).  Plans follow this
machine's measured speed, as in the daemon.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

import numpy as np

from tools.asr import transcribe, word_error_rate
from tools.results import default_path, write_result

ROOT = Path(__file__).resolve().parents[1]

MODES = ("default", "whole", "fast_forced")


def _corpus() -> list[tuple[str, list[str]]]:
    rows = (ROOT / "tests" / "data" / "spoken_corpus.tsv").read_text(encoding="utf-8").splitlines()
    return [(text, spoken.split()) for text, spoken in (row.split("\t") for row in rows if row.strip())]


def _voices(threads: int) -> dict[str, Any]:
    from dataclasses import replace

    from edgetts.config import Config
    from edgetts.daemon.assets import load_configured_voice

    config = Config()
    default = replace(config.voice, threads=threads)
    return {
        "default": load_configured_voice(default, config.text_options()),
        "whole": load_configured_voice(replace(default, streaming=False), config.text_options()),
    }


def _speak(voice: Any, text: str, mode: str, seed: int) -> np.ndarray:
    from edgetts.engine import SynthesisConfig

    # The voice's own noise seed (issue 19: drawn in the graph from (seed, sentence)), so every
    # mode hears the same noise; onnxruntime's global seed no longer reaches it.
    config = SynthesisConfig(seed=seed)
    if mode == "fast_forced":
        from edgetts.voice.piper.lead import Windows
        from edgetts.voice.piper.seeded_noise import at_sentence

        options = voice.streaming
        plan = voice.frontend.plan(text)
        parts = []
        first = True
        for index, item in enumerate(plan):
            if not hasattr(item, "phonemes"):
                parts.append(np.zeros(round(item.seconds * voice.sample_rate), np.float32))
                continue
            ids = voice.frontend.phoneme_ids(item.phonemes)
            windows = Windows(options.first_frames, options.growth, options.fast_start_ids if first else 0)
            # The noise the voice gives this sentence (synthesize does the same): paired with the others.
            heard = at_sentence(config, index)
            parts += [voice._finish(p, heard, streamed=True) for p, _ in voice.stream(ids, heard, windows=windows)]
            first = False
        return np.concatenate(parts)
    return np.concatenate([c.audio for c in voice.synthesize(text, config)])


def measure(seeds: list[int], threads: int) -> dict[str, Any]:
    voices = _voices(threads)
    corpus = _corpus()
    per_seed: dict[str, list[float]] = {mode: [] for mode in MODES}
    per_line: dict[str, list[list[float]]] = {mode: [[] for _ in corpus] for mode in MODES}
    for seed in seeds:
        for line, (text, reference) in enumerate(corpus):
            for mode in MODES:
                voice = voices["whole" if mode == "whole" else "default"]
                audio = _speak(voice, text, mode, seed)
                per_line[mode][line].append(word_error_rate(reference, transcribe(audio, voice.sample_rate)))
        for mode in MODES:
            per_seed[mode].append(statistics.fmean(scores[-1] for scores in per_line[mode]))
        print(f"seed {seed}: " + ", ".join(f"{m} {per_seed[m][-1]:.3f}" for m in MODES), flush=True)
    out: dict[str, Any] = {"seeds": seeds, "lines": len(corpus), "threads": threads}
    for mode in MODES:
        out[mode] = {
            "wer_mean": statistics.fmean(per_seed[mode]),
            "wer_per_seed": per_seed[mode],
            "wer_min": min(per_seed[mode]),
            "wer_max": max(per_seed[mode]),
            "wer_per_line": [statistics.fmean(scores) for scores in per_line[mode]],
        }
    out.update(_paired(per_line["default"], per_line["whole"]))
    return out


def _paired(default: list[list[float]], whole: list[list[float]]) -> dict[str, Any]:
    """default - whole over every (line, seed) pair: both heard the same noise, so what differs is how
    they decode; the standard error says how far the mean could move with other seeds."""
    diffs = [d - w for line_d, line_w in zip(default, whole) for d, w in zip(line_d, line_w)]
    spread = statistics.stdev(diffs) if len(diffs) > 1 else 0.0
    return {
        "default_minus_whole": statistics.fmean(diffs),
        "default_minus_whole_se": spread / len(diffs) ** 0.5,
        "pairs": len(diffs),
        "pairs_default_worse": sum(1 for d in diffs if d > 1e-9),
        "pairs_default_better": sum(1 for d in diffs if d < -1e-9),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # Ten seeds: with three, the paired difference's standard error was about a point.
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(10)))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--json", type=Path, default=default_path("bench_wer"), help="write the results here (default: %(default)s)"
    )
    args = parser.parse_args()
    result = measure(args.seeds, args.threads)
    print(json.dumps({m: round(result[m]["wer_mean"], 3) for m in MODES}))
    print(
        f"default - whole: {result['default_minus_whole']:+.4f} (standard error "
        f"{result['default_minus_whole_se']:.4f}); of {result['pairs']} pairs default worse in "
        f"{result['pairs_default_worse']}, better in {result['pairs_default_better']}"
    )
    write_result("bench_wer", result, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
