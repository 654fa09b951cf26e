"""How fast the daemon really synthesizes, and when a voice is too slow for the board (issue 14).

The synthesis thread times every run (an announcement's play, a prefetch, a
keepalive) with :class:`Timed` and tells the loop a :class:`SpeedSample`; the
loop keeps them in a :class:`Governor`, which holds the last minute of them.
Its real-time factor (synthesis wall seconds per second of speech) says
whether a voice keeps up: above the voice's `degrade_rtf` the next
announcements use its `degrade_to` variant, and `degraded: speed` says so.

While the variant speaks, the full voice is not heard, so its speed is
estimated: each run's cost is scaled by the ratio of the two voices' costs
measured at load (the same calibration text, on the same board), and the
keepalive still runs the full default voice.  A slow board slows both voices
alike, so the ratio holds while the board's speed changes.  It returns to the
full voice only below :data:`RECOVER` x the limit, so it does not flap at it.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from edgetts.engine import AudioChunk

_LOGGER = logging.getLogger(__name__)

WINDOW_S = 60.0
"""Seconds of runs the real-time factor is taken over ("the last minute")."""

RECOVER = 0.85
"""A degraded voice returns when its estimated RTF falls below this fraction of its limit."""

Clock = Callable[[], float]


@dataclass(frozen=True)
class SpeedSample:
    """To the loop: one synthesis run's cost."""

    voice: str
    """Whose run: a voice's name, or `<name>/degrade_to` for an .onnx variant (edgetts.daemon.pacing.variants)."""
    compute_s: float
    """Wall seconds spent producing its audio (inside the voice, not waiting for the device)."""
    audio_s: float
    """Seconds of audio it produced."""
    at_mono: float
    """time.monotonic() when it ended."""
    keepalive: bool = False


@dataclass
class Meter:
    """What a run cost so far (mutated on the synthesis thread only)."""

    compute_s: float = 0.0
    audio_s: float = 0.0

    def sample(self, voice: str, *, keepalive: bool = False) -> SpeedSample:
        return SpeedSample(voice, self.compute_s, self.audio_s, time.monotonic(), keepalive)


class Timed(Iterator[AudioChunk]):
    """A voice's chunks, timed: wall seconds inside the voice and seconds of audio, into a Meter.

    :meth:`peek` makes the first chunk ahead of time (a prefetch); :meth:`bind` moves what
    was measured so far to the meter of the run that takes the chunks over.
    """

    def __init__(
        self, chunks: Iterable[AudioChunk], meter: Meter | None = None, clock: Clock = time.perf_counter
    ) -> None:
        self._chunks = iter(chunks)
        self.meter = meter if meter is not None else Meter()
        self._clock = clock
        self._held: AudioChunk | None = None

    def __next__(self) -> AudioChunk:
        if self._held is not None:
            chunk, self._held = self._held, None
            return chunk
        t0 = self._clock()
        try:
            chunk = next(self._chunks)
        finally:
            self.meter.compute_s += self._clock() - t0
        self.meter.audio_s += chunk.duration_s
        return chunk

    def peek(self) -> AudioChunk:
        """The first chunk, made now and yielded again by the next ``next()`` (StopIteration if none)."""
        if self._held is None:
            self._held = next(self)
        return self._held

    def bind(self, meter: Meter) -> Timed:
        """Count into ``meter`` from now on, with what was measured before."""
        meter.compute_s += self.meter.compute_s
        meter.audio_s += self.meter.audio_s
        self.meter = meter
        return self


def timed_run(
    chunks: Iterable[AudioChunk], voice: str, notify: Callable[[Any], None], *, keepalive: bool = False
) -> Iterator[AudioChunk]:
    """``chunks`` timed; the sample goes to ``notify`` when the run ends (done, stopped or dropped)."""
    timed = Timed(chunks)
    try:
        yield from timed
    finally:
        if timed.meter.audio_s > 0:
            notify(timed.meter.sample(voice, keepalive=keepalive))


@dataclass(frozen=True)
class Plan:
    """A voice's limit and the variant that may stand in for it."""

    limit: float
    """voice.degrade_rtf."""
    variant: str | None
    """The degrade_to as configured, when it is loaded; None = no variant to switch to."""


class Governor:
    """The last minute of runs, and which voices are too slow (owned by the loop)."""

    def __init__(self, window_s: float = WINDOW_S, clock: Clock = time.monotonic) -> None:
        self._window_s = window_s
        self._clock = clock
        self._samples: deque[SpeedSample] = deque()
        self._slow: dict[str, float] = {}
        """Voices found too slow -> their estimated RTF then."""
        self._in_use: dict[str, str] = {}
        """Voices whose variant speaks instead -> the variant (degrade_to)."""

    def add(self, sample: SpeedSample) -> None:
        if sample.audio_s > 0:
            self._samples.append(sample)

    def _recent(self) -> list[SpeedSample]:
        horizon = self._clock() - self._window_s
        while self._samples and self._samples[0].at_mono < horizon:
            self._samples.popleft()
        return list(self._samples)

    def rtf(self, voice: str | None = None) -> float | None:
        """Synthesis seconds per second of audio over the window (of ``voice``'s runs only); None: no runs."""
        runs = [s for s in self._recent() if voice is None or s.voice == voice]
        audio = sum(s.audio_s for s in runs)
        return sum(s.compute_s for s in runs) / audio if audio > 0 else None

    def estimate(self, voice: str, costs: Mapping[str, float]) -> float | None:
        """``voice``'s RTF over the window: its own runs, and the others' scaled by the cost ratio at load."""
        compute = audio = 0.0
        for s in self._recent():
            if s.voice == voice:
                scale = 1.0
            elif costs.get(voice) and costs.get(s.voice):
                scale = costs[voice] / costs[s.voice]
            else:
                continue  # no ratio known: says nothing about this voice
            compute += s.compute_s * scale
            audio += s.audio_s
        return compute / audio if audio > 0 else None

    def update(self, plans: Mapping[str, Plan], costs: Mapping[str, float]) -> str | None:
        """Decide each voice's state from the window; the `degraded: speed` reason, None when all keep up."""
        for name in list(self._slow):
            if name not in plans:
                del self._slow[name]
        for name, plan in plans.items():
            rtf = self.estimate(name, costs)
            if rtf is None:
                if name in self._slow:  # no runs of late: no evidence it recovered
                    continue
            elif rtf > plan.limit or (name in self._slow and rtf >= plan.limit * RECOVER):
                self._slow[name] = rtf
            else:
                self._slow.pop(name, None)
        before = dict(self._in_use)
        self._in_use = {n: p.variant for n, p in plans.items() if n in self._slow and p.variant is not None}
        if self._in_use != before:
            _LOGGER.warning("speaking with variants: %s (was %s)", self._in_use or "none", before or "none")
        return "; ".join(_reason(n, self._slow[n], plans[n]) for n in sorted(self._slow)) or None

    def too_slow(self) -> list[str]:
        """The voices found too slow now (with or without a variant to speak instead)."""
        return sorted(self._slow)

    def variant_in_use(self, name: str) -> str | None:
        """The degrade_to that speaks for voice ``name`` now, or None (the full voice)."""
        return self._in_use.get(name)

    def why(self, name: str, plan: Plan) -> str | None:
        """Why voice ``name`` is found too slow (as in `degraded: speed`), or None."""
        rtf = self._slow.get(name)
        return None if rtf is None else _reason(name, rtf, plan)

    def status(self, costs: Mapping[str, float]) -> dict[str, Any]:
        """The measured speed, for the retained status (`speed`; issue 19 uses it)."""
        runs = self._recent()
        voices = {s.voice for s in runs} | set(costs)
        rtf = self.rtf()
        return {
            "rtf_1min": None if rtf is None else round(rtf, 3),
            "runs_1min": len(runs),
            "audio_s_1min": round(sum(s.audio_s for s in runs), 2),
            "compute_s_1min": round(sum(s.compute_s for s in runs), 3),
            "voices": {v: {"rtf_1min": _round(self.rtf(v)), "rtf_load": _round(costs.get(v))} for v in sorted(voices)},
            "variants_in_use": dict(self._in_use),
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _reason(name: str, rtf: float, plan: Plan) -> str:
    said = f"voice {name}: RTF {rtf:.2f} over the last minute, above degrade_rtf {plan.limit:.2f}"
    if plan.variant is None:
        return f"{said}; no degrade_to variant to speak instead"
    return f"{said}: speaking with degrade_to {plan.variant} until below {plan.limit * RECOVER:.2f}"


__all__ = ["RECOVER", "WINDOW_S", "Governor", "Meter", "Plan", "SpeedSample", "Timed", "timed_run"]
