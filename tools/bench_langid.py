#!/usr/bin/env python3
"""Which language identifier `voice.model: auto` uses (issue 43): accuracy and cost on short announcements.

    python -m tools.bench_langid [--data tests/data/langid_heldout.tsv] [--rounds 3] [--json [OUT]]

Each candidate runs in a process of its own (so its import time and the memory it adds are its
own), restricted to the held-out set's languages where it can be (what edgetts does with the
languages of `voice.languages`); one that cannot is scored on its best guess among them (its
ranked guesses filtered).  Per candidate: ``accuracy`` and ``accuracy_by_language`` on the held-out
texts (tests/data/langid_heldout.tsv: short announcement-like lines written for this, with numbers,
names and times), ``ms_per_text_median`` / ``ms_per_text_p95`` (per text the median of ``--rounds``
runs), ``import_ms`` (import and model load), ``rss_added_mb``, and ``portable``: whether PyPI has
wheels or pure Python for x86_64 and aarch64 on Python 3.11 with the model inside (checked by hand
with ``pip download --platform``; recorded here).  The identifier edgetts ships
(:data:`edgetts.text.language_id.IDENTIFIER`, measured through edgetts's own wrapper) has its figures
at the top level; ``best`` names the portable candidate with the highest accuracy (faster first
when equal).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tools.results import default_path, write_result

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT / "tests" / "data" / "langid_heldout.tsv"

Classify = Callable[[str], str | None]

#: Whether each candidate installs on both architectures from PyPI with its model inside (pip download
#: --only-binary=:all: --platform manylinux2014_aarch64 --python-version 3.11, and the x86_64 install).
PORTABLE = {
    "py3langid": (True, "pure Python wheel, model in the package (numpy)"),
    "langid": (True, "pure Python sdist, model in the package (numpy)"),
    "langdetect": (True, "pure Python sdist, profiles in the package"),
    "lingua": (True, "lingua-language-detector: cp311 wheels for x86_64 and aarch64, models in the package"),
    "cld3": (True, "cld3-py (module gcld3): cp311 wheels for x86_64 and aarch64"),
    "pycld2": (False, "no aarch64 wheel on PyPI: a board would need a C++ toolchain"),
}


def read_heldout(path: Path) -> list[tuple[str, str]]:
    """(language, text) pairs of the held-out file; `#` lines and blank lines skipped."""
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            lang, text = line.split("\t", 1)
            pairs.append((lang.strip(), text.strip()))
    return pairs


def _edgetts(languages: list[str]) -> Classify:
    from edgetts.text.language_id import LanguageIdentifier

    ident = LanguageIdentifier(languages, min_confidence=0.0)
    return lambda text: ident.identify(text).language


def _langid(languages: list[str]) -> Classify:
    from langid.langid import LanguageIdentifier, model

    ident = LanguageIdentifier.from_modelstring(model, norm_probs=True)
    ident.set_languages(languages)
    return lambda text: ident.classify(text)[0]


def _langdetect(languages: list[str]) -> Classify:
    from langdetect import DetectorFactory, detect_langs
    from langdetect.lang_detect_exception import LangDetectException

    DetectorFactory.seed = 0  # its sampling is random otherwise

    def classify(text: str) -> str | None:
        try:
            ranked = detect_langs(text)
        except LangDetectException:
            return None
        return next((g.lang for g in ranked if g.lang in languages), None)

    return classify


def _lingua(languages: list[str]) -> Classify:
    from lingua import IsoCode639_1, Language, LanguageDetectorBuilder

    wanted = [Language.from_iso_code_639_1(getattr(IsoCode639_1, code.upper())) for code in languages]
    detector = LanguageDetectorBuilder.from_languages(*wanted).with_preloaded_language_models().build()

    def classify(text: str) -> str | None:
        found = detector.detect_language_of(text)
        return None if found is None else found.iso_code_639_1.name.lower()

    return classify


def _cld3(languages: list[str]) -> Classify:
    import gcld3

    detector = gcld3.NNetLanguageIdentifier(0, 1000)

    def classify(text: str) -> str | None:
        ranked = detector.FindTopNMostFreqLangs(text, 5)
        return next((r.language for r in ranked if r.language in languages), None)

    return classify


def _pycld2(languages: list[str]) -> Classify:
    import pycld2

    def classify(text: str) -> str | None:
        _, _, details = pycld2.detect(text, bestEffort=True)
        return next((code for _, code, _, _ in details if code in languages), None)

    return classify


CANDIDATES: dict[str, tuple[str, Callable[[list[str]], Classify], bool]] = {
    # name: (distribution, factory, restricts to the configured languages itself)
    "py3langid": ("py3langid", _edgetts, True),
    "langid": ("langid", _langid, True),
    "langdetect": ("langdetect", _langdetect, False),
    "lingua": ("lingua-language-detector", _lingua, True),
    "cld3": ("cld3-py", _cld3, False),
    "pycld2": ("pycld2", _pycld2, False),
}


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return 0.0


def measure_one(name: str, pairs: list[tuple[str, str]], rounds: int) -> dict[str, Any]:
    """One candidate's figures, in this process (run it in a fresh one: import time and RSS)."""
    languages = sorted({lang for lang, _ in pairs})
    distribution, factory, restricts = CANDIDATES[name]
    import numpy  # noqa: F401  (the daemon has it loaded already: not the candidate's memory)

    rss0, t0 = _rss_mb(), time.perf_counter()
    classify = factory(languages)
    classify("warm up: the model is loaded now")
    import_ms = (time.perf_counter() - t0) * 1000.0
    rss_added = _rss_mb() - rss0
    per_text, right, by_lang = [], 0, {lang: [0, 0] for lang in languages}
    for lang, text in pairs:
        runs = []
        for _ in range(rounds):
            t = time.perf_counter()
            guess = classify(text)
            runs.append((time.perf_counter() - t) * 1000.0)
        per_text.append(statistics.median(runs))
        by_lang[lang][1] += 1
        if guess == lang:
            right += 1
            by_lang[lang][0] += 1
    per_text.sort()
    return {
        "distribution": distribution,
        "restricted": restricts,
        "accuracy": round(right / len(pairs), 4),
        "accuracy_by_language": {k: round(ok / n, 4) for k, (ok, n) in by_lang.items()},
        "ms_per_text_median": round(statistics.median(per_text), 4),
        "ms_per_text_p95": round(per_text[min(len(per_text) - 1, int(0.95 * len(per_text)))], 4),
        "import_ms": round(import_ms, 1),
        "rss_added_mb": round(rss_added, 1),
    }


def run_candidate(name: str, data: Path, rounds: int) -> dict[str, Any]:
    """``name`` measured in a child process; ``available: false`` with the reason when it is not installed."""
    cmd = [sys.executable, "-m", "tools.bench_langid", "--one", name, "--data", str(data), "--rounds", str(rounds)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    portable, why = PORTABLE[name]
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["failed"])[-1]
        return {"available": False, "reason": last, "portable": portable, "portable_reason": why}
    return {"available": True, **json.loads(done.stdout), "portable": portable, "portable_reason": why}


def best_of(candidates: dict[str, dict[str, Any]]) -> str | None:
    """The portable candidate with the highest accuracy; the faster one when two are equal."""
    fit = [(n, c) for n, c in candidates.items() if c.get("available") and c["portable"]]
    if not fit:
        return None
    return min(fit, key=lambda nc: (-nc[1]["accuracy"], nc[1]["ms_per_text_median"]))[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", nargs="*", choices=list(CANDIDATES), help="measure these candidates only")
    parser.add_argument("--one", choices=list(CANDIDATES), help=argparse.SUPPRESS)  # the child process
    parser.add_argument("--json", nargs="?", const=default_path("bench_langid"), type=Path, default=None)
    args = parser.parse_args(argv)
    pairs = read_heldout(args.data)
    if args.one:
        print(json.dumps(measure_one(args.one, pairs, args.rounds)))
        return 0
    from edgetts.text.language_id import IDENTIFIER

    candidates = {name: run_candidate(name, args.data, args.rounds) for name in args.only or CANDIDATES}
    for name, c in candidates.items():
        if c["available"]:
            print(
                f"{name:11s} accuracy {c['accuracy']:.3f}  median {c['ms_per_text_median']:.3f} ms  "
                f"p95 {c['ms_per_text_p95']:.3f} ms  import {c['import_ms']:.0f} ms  +{c['rss_added_mb']:.0f} MB",
                file=sys.stderr,
            )
        else:
            print(f"{name:11s} not measured: {c['reason']}", file=sys.stderr)
    chosen = candidates.get(IDENTIFIER, {})
    result = {
        "identifier": IDENTIFIER,
        "languages": sorted({lang for lang, _ in pairs}),
        "texts": len(pairs),
        **{k: chosen.get(k) for k in ("accuracy", "accuracy_by_language", "ms_per_text_median", "ms_per_text_p95")},
        "import_ms": chosen.get("import_ms"),
        "rss_added_mb": chosen.get("rss_added_mb"),
        "best": best_of(candidates),
        "candidates": candidates,
    }
    if args.json is not None:
        write_result("bench_langid", result, args.json)
    else:
        print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
