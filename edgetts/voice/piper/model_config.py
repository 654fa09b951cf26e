"""What a Piper voice's ``.onnx.json`` says: sample rate, phonemizer, id map, defaults."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgetts.errors import VoiceError

BOS = "^"
EOS = "$"
PAD = "_"


@dataclass(frozen=True)
class PiperVoiceConfig:
    """What a voice's ``.onnx.json`` says, validated."""

    sample_rate: int
    """Hertz."""

    espeak_voice: str
    """espeak-ng voice name, e.g. ``en-us``."""

    phoneme_id_map: Mapping[str, tuple[int, ...]]
    """Phoneme -> model input ids."""

    num_speakers: int = 1
    speaker_id_map: Mapping[str, int] = field(default_factory=dict)
    noise_scale: float = 0.667
    length_scale: float = 1.0
    noise_w: float = 0.8
    phoneme_type: str = "espeak"
    vowel_clusters: frozenset[tuple[str, ...]] = frozenset()
    """Phoneme sequences merged into one symbol before id lookup (e.g. ``a ɪ`` -> ``aɪ``)."""
    default_speaker_id: int = 0
    language: str = ""
    """The ``.onnx.json``'s ``language.family`` (or ``code``), e.g. ``de``; what a voice without an
    espeak-ng voice (``phoneme_type: text``) reads.  "" when it does not say."""

    @property
    def space_id(self) -> int:
        """The word separator's id (-1: the voice has none): where fast start may end its kept ids."""
        return self.phoneme_id_map.get(" ", (-1,))[0]

    @staticmethod
    def from_dict(data: Mapping[str, Any], source: str = "voice config") -> PiperVoiceConfig:
        """Validate a parsed ``.onnx.json``; errors name the file and the field."""

        def need(path: str) -> Any:
            node: Any = data
            for key in path.split("."):
                if not isinstance(node, Mapping) or key not in node:
                    raise VoiceError(f"{source}: missing field {path!r}")
                node = node[key]
            return node

        try:
            sample_rate = int(need("audio.sample_rate"))
            raw_map = need("phoneme_id_map")
            if not isinstance(raw_map, Mapping) or not raw_map:
                raise VoiceError(f"{source}: 'phoneme_id_map' must be a non-empty object")
            id_map = {str(k): tuple(int(i) for i in v) for k, v in raw_map.items()}
            for symbol in (BOS, EOS, PAD):
                if symbol not in id_map:
                    raise VoiceError(f"{source}: phoneme_id_map lacks {symbol!r}")
            phoneme_type = str(data.get("phoneme_type", "espeak"))
            espeak_voice = str(need("espeak.voice")) if phoneme_type == "espeak" else ""
            inference = data.get("inference", {}) or {}
            clusters = data.get("vowel_clusters", {}) or {}
            config = PiperVoiceConfig(
                sample_rate=sample_rate,
                espeak_voice=espeak_voice,
                phoneme_id_map=id_map,
                num_speakers=int(data.get("num_speakers", 1)),
                speaker_id_map={str(k): int(v) for k, v in (data.get("speaker_id_map") or {}).items()},
                noise_scale=float(inference.get("noise_scale", 0.667)),
                length_scale=float(inference.get("length_scale", 1.0)),
                noise_w=float(inference.get("noise_w", 0.8)),
                phoneme_type=phoneme_type,
                vowel_clusters=frozenset(tuple(c) for c in clusters.values())
                if isinstance(clusters, Mapping)
                else frozenset(tuple(c) for c in clusters),
                default_speaker_id=int(data.get("default_speaker_id", 0)),
                language=_language(data.get("language")),
            )
        except (TypeError, ValueError) as err:
            raise VoiceError(f"{source}: {err}") from err
        if config.sample_rate <= 0:
            raise VoiceError(f"{source}: audio.sample_rate must be positive")
        if config.phoneme_type not in ("espeak", "text"):
            raise VoiceError(
                f"{source}: phoneme_type {config.phoneme_type!r} is not supported "
                "(edgetts speaks espeak and text voices)"
            )
        return config

    @staticmethod
    def from_file(path: Path) -> PiperVoiceConfig:
        """Read and validate a ``.onnx.json`` file."""
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError as err:
            raise VoiceError(f"voice config not found: {path}") from err
        except (OSError, UnicodeDecodeError) as err:
            raise VoiceError(f"cannot read voice config {path}: {err}") from err
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise VoiceError(f"voice config {path} is not valid JSON: {err.msg} at line {err.lineno}") from err
        if not isinstance(data, Mapping):
            raise VoiceError(f"voice config {path} must hold a JSON object")
        return PiperVoiceConfig.from_dict(data, source=str(path))


def _language(node: Any) -> str:
    """``language.family`` or ``language.code`` of a ``.onnx.json`` (piper's voices give both)."""
    if isinstance(node, Mapping):
        return str(node.get("family") or node.get("code") or "")
    return str(node) if isinstance(node, str) else ""
