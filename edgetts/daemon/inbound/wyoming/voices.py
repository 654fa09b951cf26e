"""What a Wyoming client sees of the configured voices, and the voice a request picks.

`info` lists every voice that is loaded, by its configured name (the name announcements
use), with its language and, for a multi-speaker Piper voice, its speakers.  A
`synthesize` names a voice (and a speaker), or a language, or nothing: the default voice;
a voice is named by its configured name or by the installed voice's (`de_DE-thorsten-medium`).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from wyoming.info import Attribution, Info, Satellite, TtsProgram, TtsVoice, TtsVoiceSpeaker
from wyoming.tts import SynthesizeVoice

from edgetts import __version__
from edgetts.daemon.assets import Assets
from edgetts.daemon.playout.phrase_cache import voice_synthesis_config
from edgetts.engine import SynthesisConfig, Voice
from edgetts.errors import EdgeTTSError

_LOGGER = logging.getLogger(__name__)

_ATTRIBUTION = Attribution(name="edgetts", url="https://github.com/rhasspy/piper")


class NoSuchVoice(EdgeTTSError):
    """A request names a voice, speaker or language this server does not have."""


@dataclass(frozen=True)
class Picked:
    """The voice a request speaks with."""

    name: str
    """Configured name."""

    voice: Voice
    config: SynthesisConfig


def languages(voice: Voice) -> list[str]:
    """The voice's language codes (Piper's `language.code`, e.g. `en_US`, else its espeak-ng voice)."""
    config = getattr(voice, "config", None)
    path = getattr(voice, "model_path", None)
    if isinstance(path, Path):
        try:
            code = json.loads(path.with_name(path.name + ".json").read_text(encoding="utf-8"))["language"]["code"]
            if isinstance(code, str) and code:
                return [code]
        except (OSError, ValueError, KeyError, TypeError):
            pass
    espeak = getattr(config, "espeak_voice", None)
    return [espeak] if isinstance(espeak, str) and espeak else ["en"]


def speakers(voice: Voice) -> dict[str, int]:
    """Speaker name -> id of a multi-speaker voice (empty for one speaker)."""
    config = getattr(voice, "config", None)
    mapping: Any = getattr(config, "speaker_id_map", None) or {}
    if not mapping and getattr(config, "num_speakers", 1) > 1:
        mapping = {str(i): i for i in range(int(config.num_speakers))}  # type: ignore[union-attr]
    return {str(k): int(v) for k, v in mapping.items()}


def info(assets: Assets, satellite: Satellite | None = None) -> Info:
    """The `info` answer: one TTS program with every loaded voice, streaming supported; and on a
    satellite listener the ``satellite`` that Home Assistant makes an assist_satellite of."""
    voices = []
    for name, voice in assets.voices.items():
        spk = speakers(voice)
        voices.append(
            TtsVoice(
                name=name,
                attribution=_ATTRIBUTION,
                installed=True,
                version=None,
                description=f"{voice.name} ({voice.sample_rate} Hz)",
                languages=languages(voice),
                speakers=[TtsVoiceSpeaker(name=s) for s in spk] or None,
            )
        )
    program = TtsProgram(
        name="edgetts",
        attribution=_ATTRIBUTION,
        installed=True,
        version=__version__,
        description="edgetts: offline neural announcer (Piper voices on the CPU)",
        voices=voices,
        supports_synthesize_streaming=True,
    )
    return Info(tts=[program], satellite=satellite)


def satellite(name: str, area: str | None = None) -> Satellite:
    """What a satellite listener says it is: a speaker that takes announcements.  No microphone and
    no wake word, so Home Assistant never starts a voice pipeline from it; it only announces."""
    return Satellite(
        name=name,
        attribution=_ATTRIBUTION,
        installed=True,
        version=__version__,
        description="edgetts: plays what Home Assistant announces through its queue",
        area=area,
        has_vad=False,
        supports_trigger=False,
    )


def pick(assets: Assets, wanted: SynthesizeVoice | None) -> Picked:
    """The voice ``wanted`` names (by name, then language), else the default; NoSuchVoice if absent."""
    configured = assets.config.all_voices()
    name = assets.config.voice.name
    if wanted is not None and wanted.name:
        name = assets.voice_named(wanted.name) or wanted.name  # a configured or an installed voice's name
    elif wanted is not None and wanted.language:
        name = _by_language(assets, wanted.language)
    voice = assets.voices.get(name)
    if voice is None:
        why = assets.voice_errors.get(name, "not configured")
        raise NoSuchVoice(f"voice {name!r} is not available: {why}")
    config = voice_synthesis_config(configured[name])
    if wanted is not None and wanted.speaker:
        spk = speakers(voice)
        if wanted.speaker not in spk:
            raise NoSuchVoice(f"voice {name!r} has no speaker {wanted.speaker!r}")
        config = replace(config, speaker_id=spk[wanted.speaker])
    return Picked(name, voice, config)


def _by_language(assets: Assets, language: str) -> str:
    want = language.replace("-", "_").lower()
    for name, voice in assets.voices.items():
        codes = [c.replace("-", "_").lower() for c in languages(voice)]
        if want in codes or any(c.split("_")[0] == want for c in codes):
            return name
    raise NoSuchVoice(f"no voice for language {language!r}")


__all__ = ["NoSuchVoice", "Picked", "info", "languages", "pick", "speakers"]
