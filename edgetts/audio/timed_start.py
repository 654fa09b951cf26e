"""Timed starts (issue 19): a job whose first sample leaves the speaker at a given Unix time.

Several boards playing one announcement are heard as one voice only when their first samples
leave within a few milliseconds of each other, so a timed job is placed on a timeline rather
than started when its audio is ready.  The audio thread keeps the stream running on silence
before the target, so the device's delay is steady, and measures it right after each blocking
write returns (that is when room has just freed up): the frame written next is heard after what
is queued.  Each such measurement gives the time frame 0 of this job's stream would be heard
(:class:`DeviceClock`); the earliest of the last second's measurements is taken, since a late
wake-up of the audio thread can only make one look later.  Then exactly the silence that puts
the first sample at ``at_unix`` is written.  Unix time is turned into monotonic time at every
step, so a clock step while waiting does not put the start off.

The timeline never moves: audio that is not there when its time comes is skipped when it
arrives (a late join at the start, ``late_ms``; an underrun and a gap in the middle), so a slow
board stays in step with the others instead of drifting behind them.  The engine's hold/lead
mechanism (job.hold()) is not used for timed jobs: the target is their hold.

This module holds what a timed start is; how the audio thread plays one is
:mod:`edgetts.audio.timeline`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class TimedStart:
    """When a job's first sample is to be heard."""

    at_unix: float
    """Unix seconds (the announcement's ``play_at``)."""
    output_delay_s: float = 0.0
    """Seconds between the stream and the listener that the stream cannot know: DAC and amplifier
    (``audio.output_delay_ms`` / 1000)."""


@dataclass(frozen=True)
class Clocks:
    """The two clocks a timed start reads (a test injects simulated ones)."""

    mono: Callable[[], float] = time.monotonic
    unix: Callable[[], float] = time.time

    def mono_of(self, at_unix: float) -> float:
        """``at_unix`` on the monotonic clock, as the clocks stand now."""
        return at_unix - self.unix() + self.mono()


__all__ = ["Clocks", "TimedStart"]
