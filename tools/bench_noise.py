#!/usr/bin/env python3
"""What seeded noise (issue 19) costs per sentence: the voice's graph as shipped against the
same graph with its random nodes replaced (edgetts.voice.piper.seeded_noise).

    python -m tools.bench_noise [--corpus F] [--runs N] [--threads 1] [--json OUT]

For every sentence of the corpus, the whole model runs with the voice's own noise, as shipped
and seeded, alternating (so machine noise hits both alike); the front of the streaming split
(text encoder, durations and both noise draws: where the transform lands) runs seeded.  The
generator alone is timed too, on a graph that holds only it, at each sentence's shapes
([1, 2, ids] and [1, 192, frames]): the difference of two whole-model medians is smaller than
their noise on a shared machine, the generator's own time is not.  Medians over runs; totals
over the corpus; ``added_pct_*`` = the generator's time / the runs' time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from tools.results import default_path, write_result

ROOT = Path(__file__).resolve().parents[1]

DEFAULT_CORPUS = ROOT / "tests" / "data" / "announcements.txt"


def _generator_session(threads: int) -> Any:
    """Both noise draws of a Piper graph alone: inputs shaped like the tensors they replace."""
    import onnx
    from onnx import TensorProto, helper

    from edgetts.voice.onnx_session import RuntimeOptions, create_session
    from edgetts.voice.piper.seeded_noise import add_seeded_noise

    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, c, None]) for n, c in (("w", 2), ("z", 192))]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, c, None]) for n, c in (("nw", 2), ("nz", 192))]
    nodes = [helper.make_node("RandomNormalLike", [i], [o], dtype=1) for i, o in (("w", "nw"), ("z", "nz"))]
    model = helper.make_model(helper.make_graph(nodes, "noise", ins, outs), opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 8
    add_seeded_noise(model)
    onnx.checker.check_model(model)
    return create_session(model.SerializeToString(), RuntimeOptions(threads=threads))


def _timed(session: Any, outputs: list[str] | None, feeds: dict[str, np.ndarray]) -> float:
    started = time.perf_counter()
    session.run(outputs, feeds)
    return time.perf_counter() - started


def _sentence(parts: dict[str, Any], ids: list[int], runs: int) -> dict[str, float]:
    """Median seconds of each run on one sentence."""
    from edgetts.engine import SynthesisConfig
    from edgetts.voice.piper.seeded_noise import seed_feed

    seeded, split = parts["seeded"], parts["split"]
    feeds = seeded._feeds(ids, SynthesisConfig(seed=1))
    plain = {k: v for k, v in feeds.items() if k != "noise_seed"}
    names = list(split.split.front_outputs)
    frames = split.front(ids, SynthesisConfig(seed=1), names)[names[0]].shape[-1]
    shapes = {"w": np.zeros((1, 2, len(ids)), np.float32), "z": np.zeros((1, 192, frames), np.float32)}
    times: dict[str, list[float]] = {k: [] for k in KEYS}
    for _ in range(runs):
        times["whole_shipped_s"].append(_timed(parts["shipped"], None, plain))
        times["whole_seeded_s"].append(_timed(seeded.session, None, feeds))
        times["front_seeded_s"].append(_timed(split.session, names, feeds))
        times["generator_s"].append(_timed(parts["generator"], None, {**shapes, "noise_seed": seed_feed(None)}))
    return {k: statistics.median(v) for k, v in times.items()}


KEYS = ("whole_shipped_s", "whole_seeded_s", "front_seeded_s", "generator_s")


def measure(corpus: Path, runs: int, threads: int) -> dict[str, Any]:
    from edgetts.text.prepare import TextOptions
    from edgetts.voice.catalog import default_voice_path
    from edgetts.voice.onnx_session import RuntimeOptions, create_session
    from edgetts.voice.piper.voice import PiperVoice

    runtime = RuntimeOptions(threads=threads)
    totals = dict.fromkeys(KEYS, 0.0)
    sentences = 0
    with tempfile.TemporaryDirectory() as cache:
        parts = {
            "seeded": PiperVoice.load(
                default_voice_path(), runtime=runtime, text=TextOptions(normalize=False), cache_dir=Path(cache)
            ),
            "split": PiperVoice.load(
                default_voice_path(),
                runtime=runtime,
                text=TextOptions(normalize=False),
                cache_dir=Path(cache),
                streaming=True,
            ),
            "shipped": create_session(default_voice_path(), runtime),
            "generator": _generator_session(threads),
        }
        for line in filter(str.strip, corpus.read_text(encoding="utf-8").splitlines()):
            for ids in parts["seeded"].frontend.sentence_ids(line):
                for key, value in _sentence(parts, ids, runs).items():
                    totals[key] += value
                sentences += 1
    return {
        "threads": threads,
        "runs": runs,
        "sentences": sentences,
        **{k: round(v, 4) for k, v in totals.items()},
        "added_pct_whole": round(100 * totals["generator_s"] / totals["whole_shipped_s"], 2),
        "added_pct_front": round(100 * totals["generator_s"] / totals["front_seeded_s"], 2),
        "whole_seeded_vs_shipped": round(totals["whole_seeded_s"] / totals["whole_shipped_s"], 4),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--json", type=Path, default=default_path("bench_noise"), help="write the results here (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    result = measure(args.corpus, args.runs, args.threads)
    text = json.dumps(result, indent=2)
    print(text)
    write_result("bench_noise", result, args.json, argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
