"""Where an announcement's audio comes from: the one choice, made when it starts.

:func:`choose_source` is the one place that decides it: a clip, a phrase-cache
hit, the synthesis thread, or the fallback clip when its voice is unavailable.
Audio that exists already is fed to the player from the loop at once
(:func:`feed_audio`), without waiting for the synthesis thread.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from edgetts.audio.job import PlaybackJob
from edgetts.config import VoiceModelSettings
from edgetts.daemon.admission.messages import Announcement
from edgetts.daemon.admission.scheduler import Entry
from edgetts.daemon.assets import Assets
from edgetts.daemon.languages import MixedPrepared, MixedVoice, Part
from edgetts.daemon.pacing.degrade import Degrade
from edgetts.daemon.playout import sync
from edgetts.daemon.playout.clips import Clip
from edgetts.daemon.playout.fallback import choose
from edgetts.daemon.playout.phrase_cache import voice_synthesis_config
from edgetts.engine import SynthesisConfig, Voice
from edgetts.errors import UnspeakableTextError
from edgetts.text.prepare import Prepared
from edgetts.text.ssml import SSMLError

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True)
class Recorded:
    """Audio that exists already: a clip, a phrase-cache hit, or the fallback clip of an unavailable voice."""

    sentences: list[np.ndarray]
    rate: int
    start: tuple[int, int]
    """(repeat, sentence) to start from."""
    gain: float = 1.0
    """Level gain of every sentence (a clip's or a voice's loudness gain), applied by the converter."""
    cached: bool = False
    """A phrase-cache hit (`"cached": true` on `started`)."""
    unavailable: str | None = None
    """Why the announcement's voice is unavailable (``fallback`` plays instead), else None."""
    fallback: Clip | None = None


@dataclass(frozen=True)
class Synthesis:
    """Speech the synthesis thread makes, with the fallback clip to play if it fails or is late."""

    voice: Voice
    text: Prepared
    config: SynthesisConfig
    gain: float
    cache_key: str | None
    fallback: Clip | None
    name: str = ""
    """The configured voice asked for (``voice`` may be its degrade_to variant)."""
    speed_key: str | None = None
    variant: tuple[str, str] | None = None
    """(degrade_to, why) when the variant speaks instead of the voice (issue 14)."""
    whole: bool = False
    """Whole sentences, never streamed (a synchronized announcement: edgetts.daemon.playout.sync)."""


@dataclass(frozen=True)
class Unplayable:
    """Nothing can play (the announcement fails with ``reason``)."""

    reason: str


Source = Recorded | Synthesis | Unplayable


def choose_source(entry: Entry, assets: Assets, degrade: Degrade | None = None) -> Source:
    """Where ``entry``'s audio comes from, with the assets in force now (and ``degrade``'s choice of voice)."""
    ann = entry.announcement
    start = (entry.repeats_done, entry.resume_sentence)
    if entry.audio is not None:  # given by a service (edgetts.daemon.inbound.ready_audio): its text is only a label
        return Recorded([entry.audio.audio], entry.audio.rate, start)
    if ann.clip is not None:
        clip = assets.clips.get(ann.clip)
        if clip is None:  # gone with a reload while it was queued
            return Unplayable(f"clip {ann.clip!r} is no longer available")
        return Recorded([clip.audio], clip.rate, start, clip.gain)
    assert ann.text is not None
    name = ann.voice or assets.config.voice.name
    settings = assets.config.all_voices().get(name)
    if settings is None:  # removed by a reload while it was queued
        return Unplayable(f"voice {name!r} is no longer configured")
    fallback = fallback_clip(ann, assets)
    voice = assets.voices.get(name)
    if voice is None:
        why = assets.voice_errors.get(name, f"voice {name!r} is not loaded")
        if fallback is None:
            return Unplayable(f"voice unavailable: {why}")
        return Recorded(
            [fallback.audio], fallback.rate, (start[0], 0), fallback.gain, unavailable=why, fallback=fallback
        )
    text = prepared_text(entry, assets)
    if text is None:
        return Unplayable("its text cannot be prepared")  # only an entry that did not come through admission
    if isinstance(text, MixedPrepared):
        return mixed_source(entry, text, assets, fallback, name)
    config = speech_config(entry, settings)
    gain = assets.speech_gain(name)
    key = assets.cache_key(name, text, config)
    hit = assets.cache.get(key) if assets.cache is not None and key is not None else None
    if hit is not None:
        return Recorded(list(hit.sentences), hit.sample_rate, start, gain, cached=True)
    if entry.play_at is not None:  # its own voice, never a variant with other durations
        return Synthesis(voice, text, config, gain, key, fallback, name, name, whole=True)
    faster = degrade.variant_for(name, assets) if degrade is not None else None
    if faster is not None:  # not cached: its audio is not the voice's
        variant, why = faster
        return Synthesis(
            variant.voice, text, variant.config, variant.gain, None, fallback, name, variant.key, (variant.label, why)
        )
    return Synthesis(voice, text, config, gain, key, fallback, name, name)


def mixed_source(entry: Entry, text: MixedPrepared, assets: Assets, fallback: Clip | None, name: str) -> Source:
    """A text of several languages (`voice.model: auto` per sentence): each run by its voice, levels
    matched to the first voice's (whose gain the job applies); never cached, never a variant."""
    configured = assets.config.all_voices()
    gain = assets.speech_gain(name)
    parts = []
    for voice_name, part in text.parts:
        voice, settings = assets.voices.get(voice_name), configured.get(voice_name)
        if voice is None or settings is None:
            why = assets.voice_errors.get(voice_name, f"voice {voice_name!r} is not loaded")
            if fallback is None:
                return Unplayable(f"voice unavailable: {why}")
            start = (entry.repeats_done, 0)
            return Recorded([fallback.audio], fallback.rate, start, fallback.gain, unavailable=why, fallback=fallback)
        scale = assets.speech_gain(voice_name) / gain
        parts.append(Part(voice, part, speech_config(entry, settings), scale))
    config = speech_config(entry, configured[name])
    whole = entry.play_at is not None
    return Synthesis(MixedVoice(name, parts), text, config, gain, None, fallback, name, name, whole=whole)


def speech_config(entry: Entry, settings: VoiceModelSettings) -> SynthesisConfig:
    """How ``entry`` is synthesized with a voice's ``settings``: a synchronized one's noise seeded
    from its id (the same samples on every speaker of the zone)."""
    config = voice_synthesis_config(settings)
    return config if entry.play_at is None else sync.seeded(config, entry.id)


def prepared_text(entry: Entry, assets: Assets) -> Prepared | None:
    """``entry``'s text as admission prepared it, or prepared again when a reload changed the
    text options since (then the key and the voice follow the options in force)."""
    held, text, voice = entry.prepared, entry.announcement.text, entry.announcement.voice or assets.config.voice.name
    if text is None or (held is not None and held.options == assets.text_for(voice)):
        return held
    try:
        entry.prepared = assets.prepare(voice, text)
    except (SSMLError, UnspeakableTextError):
        # Valid at admission: the voice reads the source with its own options and says why it cannot.
        _LOGGER.warning("%s: its SSML does not prepare with the reloaded text options", entry.id)
    return entry.prepared


def fallback_clip(ann: Announcement, assets: Assets) -> Clip | None:
    """The clip that stands in for ``ann``'s speech (its own, a rule's or the default), if any is there."""
    fb = assets.config.fallback
    choice = choose(ann.fallback, ann.text, assets.rules, fb.default_clip)
    if choice is None:
        return None
    clip = assets.clips.get(choice.clip)
    if clip is None:
        _LOGGER.warning("fallback clip %r (%s) is not in the clip library", choice.clip, choice.source)
        if choice.source != "default" and fb.default_clip is not None:
            clip = assets.clips.get(fb.default_clip)
    return clip


def feed_audio(
    job: PlaybackJob,
    chime: Clip | None,
    sentences: list[np.ndarray],
    rate: int,
    repeat: int,
    start: tuple[int, int],
    gain: float,
) -> None:
    """Feed audio that exists already (a clip, a phrase-cache hit), each piece with its level ``gain``,
    and end the job."""
    first_repeat, first_sentence = start
    for rep in range(first_repeat, repeat):
        skip = first_sentence if rep == first_repeat else 0
        if chime is not None and skip == 0:
            job.feed(chime.audio, chime.rate, (rep, -1), gain=chime.gain)
        for i, audio in enumerate(sentences):
            if i >= skip:
                job.feed(audio, rate, (rep, i), speech=True, gain=gain)
    job.end()


__all__ = [
    "Recorded",
    "Source",
    "Synthesis",
    "Unplayable",
    "choose_source",
    "fallback_clip",
    "feed_audio",
    "mixed_source",
    "prepared_text",
    "speech_config",
]
