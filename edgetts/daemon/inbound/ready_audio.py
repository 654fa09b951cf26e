"""Announcement audio a service hands over ready-made (issue 17: Home Assistant's
`assist_satellite.announce` renders its own and sends it over Wyoming).

It travels with the message (``Inbound.audio``) and its queue entry (``Entry.audio``);
admission treats the message as any other (id, priority, ttl, events), and the source
choice plays it as recorded audio: same queue, priorities, fades and events.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ReadyAudio:
    """One announcement's audio."""

    audio: np.ndarray
    """Mono float32 samples in [-1, 1]."""

    rate: int
    """Hertz (the player resamples to the device's)."""


__all__ = ["ReadyAudio"]
