"""A voice's faster variant (`voice.degrade_to`), spoken while the voice is too slow (issue 14).

`degrade_to` names another configured voice, or an .onnx file (e.g. an int8
one from `edgetts quantize`).  A file is loaded as a voice of its own with
the settings of the voice it stands in for, at start-up and on reload
(edgetts.daemon.assets.build_assets), so a file that does not load is a
`degraded: voice` reason at load and never a failure when the daemon
switches to it.  It is kept under :func:`variant_key`, a name no configured
voice can have (NAME_RE has no `/`), so its loudness, its cost at load and
its speed samples never mix with a configured voice's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from edgetts.config import Config, VoiceModelSettings
from edgetts.engine import SynthesisConfig, Voice


def variant_key(name: str) -> str:
    """The key of voice ``name``'s .onnx variant among loudness, costs and speed samples."""
    return f"{name}/degrade_to"


def file_variants(config: Config) -> dict[str, VoiceModelSettings]:
    """The .onnx variants to load, by :func:`variant_key`: each with its voice's settings."""
    voices = config.all_voices()
    return {
        variant_key(name): replace(settings, model=settings.degrade_to, degrade_to=None)
        for name, settings in voices.items()
        if settings.degrade_to is not None and settings.degrade_to not in voices
    }


@dataclass(frozen=True)
class Variant:
    """What speaks for a voice while it is too slow."""

    label: str
    """degrade_to as configured (a voice name or a path): what events and `degraded` show."""
    key: str
    """Its key among costs and speed samples: the voice's name, or :func:`variant_key`."""
    voice: Voice
    config: SynthesisConfig
    """Its synthesis settings (a configured voice's own; a file's: those of the voice it stands in for)."""
    gain: float = 1.0
    """Its loudness gain (edgetts.daemon.assets.Assets.speech_gain of its key)."""


def find_variant(
    config: Config, name: str, voices: dict[str, Voice], files: dict[str, Voice]
) -> tuple[str, str, Voice, VoiceModelSettings] | None:
    """(label, key, voice, settings) of voice ``name``'s loaded variant; None when it has none loaded."""
    settings = config.all_voices().get(name)
    if settings is None or settings.degrade_to is None:
        return None
    target = settings.degrade_to
    other = config.all_voices().get(target)
    if other is not None:
        voice = voices.get(target)
        return None if voice is None else (target, target, voice, other)
    key = variant_key(name)
    voice = files.get(key)
    return None if voice is None else (target, key, voice, settings)


__all__ = ["Variant", "file_variants", "find_variant", "variant_key"]
