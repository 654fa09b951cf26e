#!/usr/bin/env python3
"""What one model run costs per input id: how `voice.max_sentence_ids` (issue 13) was chosen.

Each size runs in a fresh child process (VmHWM is then that run's own peak, not the
history of earlier sizes): the default voice speaks the first N ids of one long
sentence without punctuation, once, at noise 0; reported are the run's time, its
speech, the peak RSS over the loaded voice, and RSS after the voice let go of the
text (arena shrinkage and malloc_trim).

    python -m tools.bench_pieces [--ids 200 400 800 1600] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CHILD = """
import json, sys, time
from edgetts.engine import SynthesisConfig
from edgetts.voice.catalog import load_voice

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024

n, threads = int(sys.argv[1]), int(sys.argv[2])
voice = load_voice("default", threads=threads, max_sentence_ids=4096)
words = " ".join(["the", "service", "to", "Edinburgh", "calls", "at", "every", "station"] * 200)
ids = voice.frontend.phoneme_ids(voice.frontend.plan(words)[0].phonemes)[:n]
config = SynthesisConfig(noise_scale=0, noise_w=0)
voice.infer(ids[:40], config)
base = status("VmRSS")
start = time.perf_counter()
audio = voice.infer(ids, config)
seconds = time.perf_counter() - start
list(voice.synthesize("Done.", config))  # a text's end: the heap goes back
print(json.dumps({"ids": len(ids), "run_s": seconds, "speech_s": audio.size / voice.sample_rate,
                  "base_mb": base, "peak_mb": status("VmHWM"), "after_mb": status("VmRSS")}))
"""


def measure(n: int, threads: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(n), str(threads)], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", type=int, nargs="+", default=[200, 400, 800, 1600])
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    print("ids  run_s  speech_s  ms/id  peak-base MB  MB/id  after MB")
    for n in args.ids:
        r = measure(n, args.threads)
        grown = r["peak_mb"] - r["base_mb"]
        print(
            f"{r['ids']:4.0f}  {r['run_s']:5.2f}  {r['speech_s']:8.1f}  {1000 * r['run_s'] / r['ids']:5.2f}"
            f"  {grown:12.0f}  {grown / r['ids']:5.2f}  {r['after_mb']:8.0f}"
        )


if __name__ == "__main__":
    main()
