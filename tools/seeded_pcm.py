#!/usr/bin/env python3
"""Seeded synthesis on two machines, compared (issue 19: "the same samples everywhere").

    python -m tools.seeded_pcm make OUT.npz [--threads 2]     # on each machine
    python -m tools.seeded_pcm compare A.npz B.npz [--json OUT]

``make`` speaks three announcement sentences with the default voice, whole sentences, noise
seeded from one announcement id (edgetts.voice.piper.seeded_noise.seed_for), as the daemon
plays them (16-bit PCM, each sentence normalised), and stores each sentence's samples.
``compare`` says, per sentence, whether the sample counts are equal (a sentence's length is
the sum of its phonemes' ceil()ed durations: one float flipping across an integer moves it by
a hop, 256 samples) and the largest and RMS difference in LSB where they are.
scripts/test-aarch64.sh runs ``make`` on the host and in the arm64 chroot and ``compare``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

TEXT = (
    "Attention please. The next train to arrive at platform two is the service to Edinburgh. "
    "Please stand clear of the closing doors."
)
ANNOUNCEMENT_ID = "platform-2/seeded-check"


def make(out: Path, threads: int) -> None:
    from edgetts.engine import SynthesisConfig
    from edgetts.text.prepare import TextOptions
    from edgetts.voice.catalog import default_voice_path
    from edgetts.voice.onnx_session import RuntimeOptions
    from edgetts.voice.piper.seeded_noise import seed_for
    from edgetts.voice.piper.voice import PiperVoice

    voice = PiperVoice.load(
        default_voice_path(), runtime=RuntimeOptions(threads=threads), text=TextOptions(normalize=False), cache_dir=None
    )
    config = SynthesisConfig(seed=seed_for(ANNOUNCEMENT_ID))
    chunks = [c.to_int16() for c in voice.synthesize(TEXT, config)]
    np.savez(out, **{f"s{i}": pcm for i, pcm in enumerate(chunks)})


def compare(a_path: Path, b_path: Path) -> dict[str, Any]:
    a, b = np.load(a_path), np.load(b_path)
    sentences = []
    for name in sorted(a.files, key=lambda n: int(n[1:])):
        x, y = a[name].astype(np.int64), b[name].astype(np.int64)
        row: dict[str, Any] = {"samples": [int(x.size), int(y.size)], "equal_length": x.size == y.size}
        if x.size == y.size:
            d = x - y
            row.update(
                identical=bool(not d.any()),
                max_lsb=int(np.abs(d).max()),
                rms_lsb=round(math.sqrt(float(np.mean(d.astype(np.float64) ** 2))), 3),
                differing=int(np.count_nonzero(d)),
            )
        sentences.append(row)
    return {
        "sentences": sentences,
        "all_equal_length": all(s["equal_length"] for s in sentences),
        "max_lsb": max((s.get("max_lsb", 0) for s in sentences), default=0),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    m = sub.add_parser("make")
    m.add_argument("out", type=Path)
    m.add_argument("--threads", type=int, default=2)
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    c.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.verb == "make":
        make(args.out, args.threads)
        return 0
    result = compare(args.a, args.b)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
