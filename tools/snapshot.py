"""What the product does, as data: to prove a restructure changed no behaviour.

Writes, as JSON, a digest of the audio of every corpus line spoken whole, streamed and with fast
start (seeded noise; the speed model held at its priors, so streaming plans the same windows on
every run), the message of each of a set of bad config edits, and the outcome of each of a set of
payloads (the parsed announcement and its prepared text, or the rejection's reason). Run it on
two trees and compare:

    python -m tools.snapshot -o after.json
    PYTHONPATH=/path/to/old/tree python tools/snapshot.py -o before.json   # the old tree's edgetts
    python -m tools.snapshot --compare before.json after.json

It runs against older trees too, so it only uses names every layout had (the admission step is
looked up where either layout keeps it).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "announcements.txt"
MODES: dict[str, dict[str, Any]] = {
    "whole": {},
    "streamed": {"streaming": True},
    "fast": {"streaming": True, "fast_start_ids": 64},
}
BAD_CONFIGS = [
    "mqtt:\n  port: x\n",
    "voice:\n  nope: 1\n",
    "queue:\n  max_length: -1\n",
    "foo: 1\n",
    "mqtt: [1]\n",
    "device:\n  id: ''\n",
    "voice:\n  streaming: maybe\n",
    "http:\n  port: 99999\n",
    "wyoming:\n  uri: 3\n",
    "audio:\n  output_delay_ms: -5\n",
    "cpu:\n  inference_cores: [a]\n",
    "::\n",
    "mqtt:\n  host: 1\n  port: 1883\n  qos: 7\n",
]
PAYLOADS = [
    b"Mind the gap.",
    b'{"text":"hi","priority":"high"}',
    b'{"id":"a","text":42}',
    b'{"text":"x","priority":"urgent"}',
    b'{"clip":"nope"}',
    b"\xff\xfe",
    b'{"text":"' + b"a" * 5000 + b'"}',
    b"[1,2]",
    b'{"text":"<speak>hi</speak>","ssml":true}',
    b'{"text":"<speak><bad","ssml":true}',
    b'{"id":"x","text":"y","ttl":-1}',
    b'{"text":"y","play_at":"soon"}',
    b'{"text":"\\u4e2d\\u6587"}',
    b'{"text":"y","voice":"missing"}',
    b'{"text":""}',
    b'{"text":"a","chime":"ding"}',
    b'{"text":"a","repeat":3}',
    b'{"text":"a","volume":2}',
    b"\x00\x01",
    b'{"id":"' + b"i" * 300 + b'","text":"a"}',
]


def audio_digests(corpus: list[str], seed: int) -> dict[str, str]:
    import numpy as np

    from edgetts.engine import SynthesisConfig
    from edgetts.voice.catalog import load_voice

    out = {}
    for mode, options in MODES.items():
        voice = load_voice("default", threads=2, **options)
        if hasattr(voice, "speed"):
            voice.speed.record = lambda *a, **k: None  # type: ignore[method-assign]
        for index, line in enumerate(corpus):
            audio = np.concatenate([c.audio for c in voice.synthesize(line, SynthesisConfig(seed=seed))])
            samples = audio.astype(np.float32)
            out[f"{mode}:{index}"] = f"{hashlib.sha256(samples.tobytes()).hexdigest()[:16]}:{samples.size}"
    return out


def config_errors() -> dict[str, str]:
    from edgetts.config.loader import parse_config

    out = {}
    for text in BAD_CONFIGS:
        try:
            parse_config(text, "edgetts.yaml")
            out[text] = "ok"
        except Exception as exc:  # the message is what is compared
            out[text] = f"{type(exc).__name__}: {exc}"
    return out


def payload_outcomes() -> dict[str, str]:
    from edgetts.config import Config

    try:
        admit = importlib.import_module("edgetts.daemon.admission.admit")
    except ModuleNotFoundError:  # the flat daemon/ of older trees
        admit = importlib.import_module("edgetts.daemon.admission")
    assets = importlib.import_module("edgetts.daemon.assets").Assets(Config())
    out = {}
    for payload in PAYLOADS:
        try:
            ann, prepared = admit.parse(payload, 1000.0, assets, lambda: "ID")
            out[repr(payload[:60])] = f"{vars(ann)!r} | {prepared!r}"
        except Exception as exc:  # the reason is what is compared
            out[repr(payload[:60])] = f"{type(exc).__name__}: {exc}"
    return out


def compare(before: dict[str, Any], after: dict[str, Any]) -> int:
    differ = 0
    for part in ("audio", "config", "payloads"):
        changed = sorted(k for k in before[part] if before[part][k] != after[part].get(k))
        print(f"{part}: {len(before[part])} compared, {len(changed)} differ{': ' if changed else ''}{changed[:10]}")
        differ += len(changed) + len(set(after[part]) ^ set(before[part]))
    return 1 if differ else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", type=Path, help="write the snapshot here")
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args(argv)
    if args.compare:
        before, after = (json.loads(p.read_text(encoding="utf-8")) for p in args.compare)
        return compare(before, after)
    if args.out is None:
        ap.error("-o/--out or --compare is needed")
    corpus = [line.strip() for line in args.corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    snapshot = {"audio": audio_digests(corpus, args.seed), "config": config_errors(), "payloads": payload_outcomes()}
    args.out.write_text(json.dumps(snapshot, indent=1, sort_keys=True, default=repr) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
