"""A voice's faster variant (`voice.degrade_to`), spoken while the voice is too slow (issue 14).

`degrade_to` is `int8` (the voice's own static int8 variant in the model cache,
edgetts.voice.piper.int8_variant), another configured voice, or an .onnx file (e.g.
one from `edgetts quantize`).  A file is loaded as a voice of its own with
the settings of the voice it stands in for, at start-up and on reload
(edgetts.daemon.assets.build_assets), so a file that does not load is a
`degraded: voice` reason at load and never a failure when the daemon
switches to it.  It is kept under :func:`variant_key`, a name no configured
voice can have (NAME_RE has no `/`), so its loudness, its cost at load and
its speed samples never mix with a configured voice's.  The int8 variant is
kept the same way but loaded only when it first speaks (:class:`LazyVoice`):
it is there for every voice by default, and a daemon that never degrades
should not hold a second copy of its voice.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from edgetts.config import Config, VoiceModelSettings
from edgetts.engine import AudioChunk, SynthesisConfig, Voice
from edgetts.text.prepare import Prepared
from edgetts.vocabulary import DEGRADE_INT8

_LOGGER = logging.getLogger(__name__)


def variant_key(name: str) -> str:
    """The key of voice ``name``'s .onnx variant among loudness, costs and speed samples."""
    return f"{name}/degrade_to"


def file_variants(config: Config) -> dict[str, VoiceModelSettings]:
    """The .onnx variants to load, by :func:`variant_key`: each with its voice's settings."""
    voices = config.all_voices()
    return {
        variant_key(name): replace(settings, model=settings.degrade_to, degrade_to=None)
        for name, settings in voices.items()
        if settings.degrade_to not in (None, DEGRADE_INT8) and settings.degrade_to not in voices
    }


class LazyVoice:
    """A voice loaded by ``load`` when it first speaks (on the synthesis thread), then kept."""

    def __init__(self, path: Path, sample_rate: int, load: Callable[[], Voice], cost_ratio: float) -> None:
        self.path = path
        self.cost_ratio = cost_ratio
        """Its synthesis time over its voice's, as measured where it was made."""
        self._name = path.stem
        self._rate = sample_rate
        self._load = load
        self._voice: Voice | None = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._name

    @property
    def sample_rate(self) -> int:
        return self._rate

    def synthesize(self, text: str | Prepared, config: SynthesisConfig | None = None) -> Iterator[AudioChunk]:
        with self._lock:
            if self._voice is None:
                _LOGGER.info("loading %s: it speaks from now on while its voice is too slow", self._name)
                self._voice = self._load()
        return self._voice.synthesize(text, config)


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


__all__ = ["LazyVoice", "Variant", "file_variants", "find_variant", "variant_key"]
