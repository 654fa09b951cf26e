"""Issue 19: seeded phrases in the phrase cache: a seeded lookup finds only audio of that seed,
an unseeded one only unseeded audio; unseeded keys are those of before seeds existed."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path

import numpy as np

from edgetts.daemon.playout.phrase_cache import FORMAT_VERSION, PhraseCache, cache_key
from edgetts.engine import SynthesisConfig
from edgetts.voice.piper.seeded_noise import seed_for

TEXT = "the train to edinburgh leaves from platform two."


def _key(settings: SynthesisConfig) -> str:
    return cache_key("default", "h1", TEXT, settings)


def test_seeded_and_unseeded_phrases_never_share_an_entry(tmp_path: Path) -> None:
    cache = PhraseCache(tmp_path, max_bytes=10_000_000)
    seeded = SynthesisConfig(noise_scale=0.667, seed=seed_for("ann-1"))
    unseeded = SynthesisConfig(noise_scale=0.667)
    audio = {"seeded": [np.full(4000, 0.25, np.float32)], "unseeded": [np.full(4000, -0.5, np.float32)]}
    assert cache.put(_key(seeded), 22050, audio["seeded"])
    assert cache.get(_key(unseeded)) is None  # unseeded speech never plays one board's seeded draw...
    assert cache.put(_key(unseeded), 22050, audio["unseeded"])
    hit = cache.get(_key(seeded))
    assert hit is not None and np.array_equal(hit.sentences[0], audio["seeded"][0])  # ...nor the reverse
    hit = cache.get(_key(unseeded))
    assert hit is not None and np.array_equal(hit.sentences[0], audio["unseeded"][0])
    # Another seed (another announcement id) is another phrase; the same seed the same one.
    assert cache.get(_key(SynthesisConfig(noise_scale=0.667, seed=seed_for("ann-2")))) is None
    assert _key(SynthesisConfig(noise_scale=0.667, seed=seed_for("ann-1"))) == _key(seeded)


def test_unseeded_keys_are_those_of_before_seeds(tmp_path: Path) -> None:
    settings = SynthesisConfig(length_scale=1.1)
    before = {k: v for k, v in asdict(settings).items() if k != "seed"}  # the fields as they were
    blob = json.dumps(
        {"v": FORMAT_VERSION, "voice": "default", "hash": "h1", "text": TEXT, "settings": before, "extra": ""},
        sort_keys=True,
        ensure_ascii=False,
    )
    assert _key(settings) == hashlib.sha256(blob.encode()).hexdigest()
    assert _key(SynthesisConfig(length_scale=1.1, seed=0)) != _key(settings)
