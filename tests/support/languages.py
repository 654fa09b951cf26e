"""Tiny voices of other languages and piper-tts 1.8.0's reading of their texts (issue 16)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from support.paths import DATA

LANGUAGES = ("de", "fr", "es", "cmn")
"""The espeak-ng voices of the tiny test voices: German, French, Spanish, Mandarin."""


def language_lines(language: str) -> list[str]:
    """The announcement sentences of ``language`` kept in tests/data/languages (comments dropped)."""
    text = (DATA / "languages" / f"{language}.txt").read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def espeak_data_dir() -> Path:
    """The espeak-ng data edgetts loads (edgetts.voice.piper.phonemize): piper-tts is given the same,
    so both read with one dictionary and only the front ends are compared (like for like): the data
    shipped in the package (``phonemize.espeak_data_path()``, issue 16 part 1).
    """
    from edgetts.voice.piper.phonemize import espeak_data_path

    return espeak_data_path() / "espeak-ng-data"


_ORACLE = r"""
import json, sys
from piper import PiperVoice
job = json.loads(sys.stdin.read())
out = {}
for model, texts in job["voices"].items():
    voice = PiperVoice.load(model, espeak_data_dir=job["data"])
    out[model] = [[voice.phonemes_to_ids(p) for p in voice.phonemize(t) if p] for t in texts]
print(json.dumps(out))
"""


def piper_ids(texts: dict[Path, list[str]]) -> dict[Path, list[list[list[int]]]]:
    """piper-tts's sentence ids of each text in each voice (model path -> texts), in a process of its
    own: piper's espeak-ng is initialised once per process, and the other tests give it its own data."""
    job = {"data": str(espeak_data_dir()), "voices": {str(model): lines for model, lines in texts.items()}}
    done = subprocess.run(
        [sys.executable, "-c", _ORACLE], input=json.dumps(job), capture_output=True, text=True, check=True, timeout=300
    )
    result = json.loads(done.stdout)
    return {Path(model): ids for model, ids in result.items()}
