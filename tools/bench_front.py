#!/usr/bin/env python3
"""The split voice's front at fast start's prefix length: dynamic against folded (edgetts.voice.piper.front_fold).

    python -m tools.bench_front [--corpus F] [--length 64] [--runs N] [--threads 1] [--json [OUT]]

The default voice is loaded as the daemon streams it (fast start on ``--length`` ids, its split and
folded front made in the model cache, ``EDGETTS_CACHE_DIR`` or ~/.cache/edgetts).  Then, on the first
``--length`` ids of the corpus's sentences that are longer (what fast start runs first):

- ``ops_before`` / ``ops_after``: nodes the session runs, i.e. of the graph onnxruntime's optimiser makes
  at the level edgetts uses ("all"), of the dynamic front and of the folded one; for context the nodes
  of the ``.onnx`` files and of the dynamic front with only its input's dims made static
  (``onnxruntime.tools`` style: what onnxruntime folds by itself at a fixed length);
- ``front_ms_before`` / ``front_ms_after``: medians over ``--runs`` runs of each, alternating (machine
  noise hits both alike), at ``--threads`` intra-op threads (1 by default: a board's core);
- ``max_abs_diff``: the largest difference of their outputs over those sentences at three seeds with the
  voice's noise (front_check.check_folded, which also requires the noise to be identical).
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
SEEDS = (1, 2, 3)


def optimised_ops(model: Path | bytes, level: str = "all") -> int:
    """Nodes of ``model`` as onnxruntime runs it: of the graph its optimiser makes at ``level``."""
    import onnx
    import onnxruntime as ort

    from edgetts.voice.onnx_session import RuntimeOptions, session_options

    with tempfile.TemporaryDirectory() as out:
        options = session_options(RuntimeOptions(threads=1, optimization=level))
        options.optimized_model_filepath = str(Path(out) / "optimised.onnx")
        ort.InferenceSession(
            str(model) if isinstance(model, Path) else model, options, providers=["CPUExecutionProvider"]
        )
        return len(onnx.load(options.optimized_model_filepath, load_external_data=False).graph.node)


def static_dims_ops(front: Path, length: int) -> int:
    """Optimised nodes of ``front`` with only its inputs' dims fixed (batch 1, ``length`` ids)."""
    import onnx
    from onnxruntime.tools.onnx_model_utils import make_dim_param_fixed

    model = onnx.load(str(front))
    batch, ids = (d.dim_param for d in model.graph.input[0].type.tensor_type.shape.dim)
    make_dim_param_fixed(model.graph, batch, 1)
    make_dim_param_fixed(model.graph, ids, length)
    return optimised_ops(model.SerializeToString())


def _load(length: int, threads: int) -> Any:
    from edgetts.text.prepare import TextOptions
    from edgetts.voice.catalog import default_voice_path
    from edgetts.voice.model_cache import default_cache_dir
    from edgetts.voice.onnx_session import RuntimeOptions
    from edgetts.voice.piper.front_fold import FrontSessions
    from edgetts.voice.piper.voice import PiperVoice
    from edgetts.voice.piper.windows import StreamingOptions

    voice = PiperVoice.load(
        default_voice_path(),
        runtime=RuntimeOptions(threads=threads),
        text=TextOptions(normalize=False),
        cache_dir=default_cache_dir(),
        streaming=StreamingOptions(fast_start_ids=length),
    )
    if not isinstance(voice.session, FrontSessions) or length not in voice.session.folded:
        raise SystemExit(f"the front was not folded at {length} ids (see the log)")
    return voice


def _prefixes(voice: Any, corpus: Path, length: int) -> list[list[int]]:
    lines = [line.strip() for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [ids[:length] for line in lines for ids in voice.frontend.sentence_ids(line) if len(ids) > length]


def _feeds(voice: Any, ids: list[int], seed: int) -> dict[str, np.ndarray]:
    from edgetts.voice.piper.check_feeds import model_feeds
    from edgetts.voice.piper.seeded_noise import seed_feed

    config = voice.config
    scales = np.array([config.noise_scale, config.length_scale, config.noise_w], dtype=np.float32)
    speaker = config.default_speaker_id if config.num_speakers > 1 else None
    return model_feeds(ids, scales, speaker, seed_feed(seed))


def _times(sessions: list[Any], feeds: list[dict[str, np.ndarray]], runs: int) -> list[float]:
    """Median ms of each session over ``runs`` runs, alternating, each run on the next sentence."""
    for session in sessions:
        session.run(None, feeds[0])  # first runs: the arena grows, kernels load
    times: list[list[float]] = [[] for _ in sessions]
    for run in range(runs):
        for k, session in enumerate(sessions):
            started = time.perf_counter()
            session.run(None, feeds[run % len(feeds)])
            times[k].append(1000 * (time.perf_counter() - started))
    return [round(statistics.median(t), 3) for t in times]


def measure(corpus: Path, length: int, runs: int, threads: int) -> dict[str, Any]:
    import onnx

    from edgetts.voice.onnx_session import RuntimeOptions, create_session
    from edgetts.voice.piper import front_check, front_fold

    voice = _load(length, threads)
    front = Path(voice.split.front)
    # Both through FrontSessions: a folded front takes its noise's integers from numpy (front_noise).
    dynamic = front_fold.FrontSessions(voice.session.dynamic, {})
    folded = front_fold.FrontSessions(voice.session.dynamic, {length: voice.session.folded[length]})
    prefixes = _prefixes(voice, corpus, length)
    feeds = [_feeds(voice, ids, seed) for ids in prefixes for seed in SEEDS]
    folded_bytes = front_fold.fold_front(front.read_bytes(), length)
    make_session = lambda source: create_session(source, RuntimeOptions(threads=threads))  # noqa: E731
    diff = front_check.check_folded(front.read_bytes(), folded_bytes, feeds, make_session)
    before, after = _times([dynamic, folded], [_feeds(voice, ids, 1) for ids in prefixes], runs)
    return {
        "ops_before": optimised_ops(front),
        "ops_after": optimised_ops(folded_bytes),
        "front_ms_before": before,
        "front_ms_after": after,
        "max_abs_diff": diff,
        "noise_identical": True,  # check_folded raises otherwise
        "tolerance": front_fold.TOLERANCE,
        "length": length,
        "threads": threads,
        "runs": runs,
        "sentences": len(prefixes),
        "seeds": list(SEEDS),
        "ops_file_before": len(onnx.load(str(front), load_external_data=False).graph.node),
        "ops_file_after": len(onnx.load_from_string(folded_bytes).graph.node),
        "ops_static_dims_only": static_dims_ops(front, length),
        "optimisation": "all",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--length", type=int, default=64, help="fast start's prefix, ids (default: %(default)s)")
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--threads", type=int, default=1)
    where = default_path("bench_front")
    parser.add_argument(
        "--json", type=Path, nargs="?", const=where, default=where, help="write the results here (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    result = measure(args.corpus, args.length, args.runs, args.threads)
    print(json.dumps(result, indent=2))
    write_result("bench_front", result, args.json, argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
