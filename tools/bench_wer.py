#!/usr/bin/env python3
"""Intelligibility of the default (streaming with fast start) against whole sentences.

pocketsphinx word error rate over the spoken corpus (tests/data/spoken_corpus.tsv:
the announcement lines and their hand-written spoken forms), as the daemon speaks
them (normaliser on), for each noise seed: each text is spoken with that seed
(`SynthesisConfig.seed`), the same for every mode, so the modes differ only in how they decode.  Each
file is decoded by a fresh pocketsphinx decoder (its live cepstral-mean
normalisation otherwise carries over from one utterance to the next and moves a
figure by ~1.5 points with the order of decoding).

    python -m tools.bench_wer [--seeds 0 1 ... 9] [--threads 2] [--lines 1 4 ...] [--json OUT]

A figure moves by a point or two with anything that changes the audio at all (another noise seed,
the same audio 2 dB quieter), so the modes are compared pair by pair: the same line and seed
spoken by `default` and by `whole`, the mean of the differences and its standard error
(`default_minus_whole`, `default_minus_whole_se`), and how many pairs each way.

Modes: `default` (the daemon's default voice settings), `whole` (voice.streaming
false), `fast_forced` (fast start on every first sentence over 96 ids, whatever
the plan would pick: the worst case of its intelligibility), `raw` (whole sentences with the
normaliser off: what piper-tts would be given).  Plans follow this machine's measured speed, as in
the daemon.

tests/voice/test_intelligibility.py checks a few of the hardest lines with the same code
(:func:`corpus`, :func:`line_wers`), noise off; this runs the whole corpus (``--lines``: a part).
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tools.asr import transcribe, word_error_rate
from tools.results import default_path, write_result

ROOT = Path(__file__).resolve().parents[1]

MODES = ("default", "whole", "fast_forced", "raw")


def corpus(lines: Sequence[int] | None = None) -> list[tuple[str, list[str]]]:
    """The spoken corpus as (text, its spoken words), or only its ``lines`` (1-based, the file's)."""
    rows = (ROOT / "tests" / "data" / "spoken_corpus.tsv").read_text(encoding="utf-8").splitlines()
    every = [(text, spoken.split()) for text, spoken in (row.split("\t") for row in rows if row.strip())]
    return every if lines is None else [every[n - 1] for n in lines]


def line_wers(speak: Callable[[str], np.ndarray], rate: int, lines: list[tuple[str, list[str]]]) -> list[float]:
    """The word error rate of each of ``lines`` as pocketsphinx hears ``speak(text)`` (at ``rate``)."""
    return [word_error_rate(reference, transcribe(speak(text), rate)) for text, reference in lines]


def _voices(threads: int) -> dict[str, Any]:
    from dataclasses import replace

    from edgetts.config import Config
    from edgetts.daemon.assets import load_configured_voice

    config = Config()
    default = replace(config.voice, threads=threads)
    whole = replace(default, streaming=False)
    return {
        "default": load_configured_voice(default, config.text_options()),
        "whole": load_configured_voice(whole, config.text_options()),
        "raw": load_configured_voice(whole, replace(config.text_options(), normalize=False)),
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


def measure(seeds: list[int], threads: int, lines: Sequence[int] | None = None) -> dict[str, Any]:
    voices = _voices(threads)
    chosen = corpus(lines)
    per_seed: dict[str, list[float]] = {mode: [] for mode in MODES}
    per_line: dict[str, list[list[float]]] = {mode: [[] for _ in chosen] for mode in MODES}
    for seed in seeds:
        for mode in MODES:
            voice = voices[mode if mode in ("whole", "raw") else "default"]
            scores = line_wers(lambda text: _speak(voice, text, mode, seed), voice.sample_rate, chosen)  # noqa: B023
            for line, score in enumerate(scores):
                per_line[mode][line].append(score)
            per_seed[mode].append(statistics.fmean(scores))
        print(f"seed {seed}: " + ", ".join(f"{m} {per_seed[m][-1]:.3f}" for m in MODES), flush=True)
    out: dict[str, Any] = {"seeds": seeds, "lines": list(lines) if lines else len(chosen), "threads": threads}
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
    parser.add_argument("--lines", type=int, nargs="+", help="only these lines of the corpus (1-based)")
    parser.add_argument(
        "--json", type=Path, default=default_path("bench_wer"), help="write the results here (default: %(default)s)"
    )
    args = parser.parse_args()
    result = measure(args.seeds, args.threads, args.lines)
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
