"""Synchronized announcements (issue 19): when one plays, with which noise, and what its events say.

An announcement plays at a Unix time (`play_at`) when its publisher said so or
when it came on a group of ``sync.groups`` (then: receipt + ``sync.lead_s``).
Every member of a zone then speaks the same samples at the same time:

* the noise of the voice is seeded from the announcement's id (the same id on
  every member, so the same durations and pitch on every board);
* it is synthesized in whole sentences, never streamed: a streamed sentence's
  windows follow each board's own speed, the whole sentence does not;
* the voice speaks it, never its `degrade_to` variant (a quantized model has
  other durations: the words would drift apart); the lead absorbs the slowness;
* the audio thread starts its first sample at `play_at`, compensating for the
  device's delay and ``audio.output_delay_ms`` (edgetts.audio.timed_start).

The board's clock is part of the result: a synchronized announcement on a board
whose clock is not synchronized still plays, and says so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from edgetts.config import Config
from edgetts.daemon.admission.messages import Announcement
from edgetts.engine import SynthesisConfig
from edgetts.runtime.clock import ClockHealth
from edgetts.voice.piper.seeded_noise import seed_for

DEFAULT_LEAD_S = 1.5
"""The lead when no member has published its speed yet (sync.lead_s's default too)."""
MIN_LEAD_S = 1.2
"""Never less: the message's way through the broker and the loop's turn, and about a second of
the device running on silence before the first sample, over which the audio thread measures its
delay (through PulseAudio, whose 10 ms ticks make each reading vary by ~5 ms, half a second of
readings left errors of up to 5 ms here; a second and more, under 0.5 ms)."""
SPOKEN_CHARS_PER_S = 14.0
"""An announcer's pace, characters of text per second of speech (a guess that errs long)."""
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")  # (where the voice ends a sentence: not at ; or :)

CLOCK_UNSYNCED = "clock not synchronized: speakers on other boards may not play together"
"""Prefix of the `started` event's detail and of `degraded: clock` (the clock's own reason follows)."""


def play_at(ann: Announcement, topic: str, received_at: float, config: Config) -> float | None:
    """Unix time ``ann`` plays at: its own `play_at`, else receipt + sync.lead_s for a group of
    sync.groups; None = as soon as it can (not synchronized)."""
    if ann.play_at is not None:
        return ann.play_at
    prefix = config.mqtt.topic_prefix
    for group in config.sync.groups:
        if topic == f"{prefix}/group/{group}/announce":
            return received_at + config.sync.lead_s
    return None


def seeded(config: SynthesisConfig, ident: str) -> SynthesisConfig:
    """``config`` with the noise seeded from the announcement id ``ident`` (seed_for: 63 bits of
    its sha256), the same on every board and architecture."""
    return replace(config, seed=seed_for(ident))


def sync_lead(payload: Mapping[str, Any], statuses: Sequence[Mapping[str, Any]]) -> float:
    """Seconds from now to `play_at` that the slowest member needs for ``payload`` (issue 19).

    A member plays its first sample at `play_at`, so it must have synthesized the first sentence
    by then, and, slower than real time, enough of the rest that it never runs dry. Each member's
    real-time factor is the worse of its last minute's and its load-time measurement of the
    voice (``speed`` in its status); the text's length in speech is estimated from its characters.
    """
    text = payload.get("text")
    if not isinstance(text, str):
        return MIN_LEAD_S  # a clip: nothing to synthesize
    rtfs = [rtf for status in statuses if (rtf := member_rtf(status, payload.get("voice"))) is not None]
    if not rtfs:
        return DEFAULT_LEAD_S
    rtf = max(rtfs)
    total_s = len(text) / SPOKEN_CHARS_PER_S
    first_s = len(_SENTENCE_END.split(text.strip(), maxsplit=1)[0]) / SPOKEN_CHARS_PER_S
    need = rtf * first_s + max(0.0, rtf - 1.0) * (total_s - first_s)
    return round(max(MIN_LEAD_S, 0.4 + 1.5 * need), 2)  # (a margin: the speed of the last minute varies)


def member_rtf(status: Mapping[str, Any], voice: object = None) -> float | None:
    """The worse of a member's measured real-time factors of ``voice`` (default: its default voice,
    the first of its status's `voices`); a voice it has not measured: the slowest it has."""
    speed = status.get("speed")
    voices = speed.get("voices") if isinstance(speed, Mapping) else None
    if not isinstance(voices, Mapping):
        return None
    names = status.get("voices")
    name = voice if isinstance(voice, str) else (names[0] if isinstance(names, list) and names else None)
    measured = [voices[name]] if name in voices else [v for k, v in voices.items() if "/" not in k]
    values = [
        float(rtf)
        for m in measured
        if isinstance(m, Mapping)
        for rtf in (m.get("rtf_1min"), m.get("rtf_load"))
        if isinstance(rtf, (int, float))
    ]
    return max(values) if values else None


def clock_problem(clock: ClockHealth) -> str | None:
    """Why this board's clock cannot be trusted to within a few ms, or None."""
    if clock.synchronized:
        return None
    return f"{CLOCK_UNSYNCED} ({clock.reason})" if clock.reason else CLOCK_UNSYNCED


__all__ = [
    "CLOCK_UNSYNCED",
    "DEFAULT_LEAD_S",
    "MIN_LEAD_S",
    "clock_problem",
    "member_rtf",
    "play_at",
    "seeded",
    "sync_lead",
]
