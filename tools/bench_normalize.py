#!/usr/bin/env python3
"""How long normalisation takes per sentence: median and p95 in microseconds.

    python -m tools.bench_normalize [--rounds 200] [--prepare]

Runs over the announcements corpus (tests/data/announcements.txt) plus a few
number-heavy sentences. Timing lives here, not in the tests (no timed assertions).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from edgetts.text.normalize import normalize
from edgetts.text.prepare import prepare

_EXTRA = [
    "Flight BA 2490 to Lisbon departs at 14:05 from gate 17b, approx. 25 min late.",
    "Tickets cost £12.50, or €14.99 online; call 0161 496 0000 ext. 3105 before 12/03/2025.",
    "St. Pancras to Baker St. via Dr. Patel's office, No. 57, at 2:30pm on March 3rd.",
    "Freezer at -18°C, speed limit 30 mph (50 km/h), battery 12% and 1h30 remaining.",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200, help="passes over the sentences")
    parser.add_argument("--prepare", action="store_true", help="time textproc.prepare() instead")
    args = parser.parse_args()
    corpus = Path(__file__).resolve().parents[1] / "tests" / "data" / "announcements.txt"
    sentences = [s for s in corpus.read_text(encoding="utf-8").splitlines() if s.strip()] + _EXTRA
    func = prepare if args.prepare else normalize
    for sentence in sentences:  # warm-up: imports, regex caches
        func(sentence)
    samples: list[float] = []
    for _ in range(args.rounds):
        for sentence in sentences:
            start = time.perf_counter_ns()
            func(sentence)
            samples.append((time.perf_counter_ns() - start) / 1000.0)
    samples.sort()
    p95 = samples[int(len(samples) * 0.95) - 1]
    print(
        f"{func.__name__}: {len(sentences)} sentences x {args.rounds} rounds: "
        f"median {statistics.median(samples):.1f} µs, p95 {p95:.1f} µs, max {samples[-1]:.1f} µs"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
