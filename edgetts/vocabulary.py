"""The names edgetts shares across its layers: one definition of each.

Priorities and their ranks, the patterns of clip and voice names, the events
and fallback reasons of the events topic, the largest deadline, and the `what`
of a status's `degraded` entries.  They are an interface (issue 3: publishers and dashboards
match on them), so a name here changes only with the wire format.  The config
(``edgetts.config``), the wire messages (``edgetts.daemon.admission.messages``) and the
clip library all check against these, so a name the config accepts is one an
announcement may use.  This module imports nothing from edgetts: every layer
may use it.
"""

from __future__ import annotations

import re
import typing
from typing import Literal

Priority = Literal["emergency", "high", "normal", "low"]
PRIORITIES: tuple[Priority, ...] = typing.get_args(Priority)
"""Highest first; an announcement's rank is its index here."""


def priority_rank(priority: str) -> int:
    """0 for emergency ... 3 for low: smaller is more urgent (ValueError for another name)."""
    return PRIORITIES.index(priority)


DEGRADE_INT8 = "int8"
"""The `voice.degrade_to` that names the voice's own static int8 variant (edgetts.voice.piper.int8_variant)."""


CLIP_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")
r"""Clip and chime names: a file stem, never a path.
\Z, not $: `$` also matches before a final newline ("fire\n" is no clip name)."""

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")
r"""A voice name, device id or group name: one topic level an operator chooses,
no MQTT wildcards, no separators.  \Z as in CLIP_NAME_RE: with `$`, "hall-1\n" passed and
became a topic level with a newline in it."""

EventName = Literal[
    "queued",
    "rejected",
    "started",
    "finished",
    "preempted",
    "expired",
    "failed",
    "fallback",
    "cancelled",
]
EVENTS: tuple[EventName, ...] = typing.get_args(EventName)
"""`event` of a message on `<prefix>/<device>/events`."""

FallbackReason = Literal["voice_unavailable", "synthesis_error", "deadline", "unspeakable"]
FALLBACK_REASONS: tuple[FallbackReason, ...] = typing.get_args(FallbackReason)
"""`reason` of a `fallback` event (issue 6)."""

MAX_DEADLINE_MS = 600000
"""Largest `deadline_ms`, in an announcement and in the config's fallback section (10 minutes)."""

BLOCK_FRAMES = 1024
"""Frames per write to the device by default (`audio.block_frames`; 46 ms at 22050 Hz): a write
costs the audio thread about the same CPU whatever its size (PortAudio, the ALSA pulse plugin, the
player's loop).  20 s through the paced sink here: the player and PulseAudio's client thread took
0.77 s of CPU at 256 frames, 0.22 s at 1024; on a board's slow core the difference is dry spells
with the next samples in hand (issue 14).  An interruption starts within a block."""

DegradedWhat = Literal[
    "audio",
    "audio_thread",
    "cache",
    "clips",
    "clock",
    "config",
    "cpu",
    "duck",
    "homeassistant",
    "http",
    "memory",
    "mqtt",
    "npu",
    "speed",
    "state",
    "voice",
    "wyoming",
]
DEGRADED: tuple[DegradedWhat, ...] = typing.get_args(DegradedWhat)
"""`what` of an entry in a status's `degraded` list: the part not working as configured."""

__all__ = [
    "BLOCK_FRAMES",
    "CLIP_NAME_RE",
    "DEGRADED",
    "DEGRADE_INT8",
    "EVENTS",
    "FALLBACK_REASONS",
    "MAX_DEADLINE_MS",
    "NAME_RE",
    "PRIORITIES",
    "DegradedWhat",
    "EventName",
    "FallbackReason",
    "Priority",
    "priority_rank",
]
