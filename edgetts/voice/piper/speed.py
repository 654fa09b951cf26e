"""What the voice's model runs really cost on this machine, learned as they run (issue 14).

A board is 5-10x slower per core than the machines edgetts is developed on,
and a CPU quota, a busy neighbour or thermal throttling changes that at run
time, so no constant can say how long a window takes.  Every model run of a
:class:`~edgetts.voice.piper.voice.PiperVoice` (announcements, the loudness
calibration at load, the keepalive's runs) is a sample: its part (``front``:
encoder and durations over ids; ``flow`` and ``tail``: over frames;
``whole``: an unsplit voice over ids), its size and its wall time.  Each part
is fitted as ``fixed + per_unit * size`` over its latest samples, so a change of
speed shows within a few sentences.  Wall time, not CPU time: a throttled or
preempted run is what the listener waits for.
"""

from __future__ import annotations

import collections
import statistics
import threading
from dataclasses import dataclass

KINDS = ("front", "flow", "tail", "whole")

_KEEP = 48
"""Samples per part in the fit: a few sentences' worth, so the model follows a change of speed."""

# Costs measured here (x86, 1 thread, seconds) for a voice that has not run yet: real runs
# replace them at the first sample (the daemon's load runs the voice once, for its loudness).
_PRIOR = {
    "front": (0.005, 0.00025),  # per id
    "flow": (0.003, 0.00014),  # per frame
    "tail": (0.0, 0.0008),  # per frame
    "whole": (0.005, 0.0025),  # per id (about 2.2 frames an id)
}
_PRIOR_FRAMES_PER_ID = 2.2

_DRIFT_GAIN = 0.25
"""Weight of the newest run in :attr:`SpeedModel.slowdown`: it follows the last four runs or so,
where the fits, over 48 samples a part, take a few sentences to move."""
_DRIFT_NOISE = 1.05
"""Run-to-run noise (~15 % a run here) moves the average by about this much, which the plan's own
margin already covers: only a slowdown beyond it stretches the plan (and delays first audio)."""
_BUSY_GAIN = 0.3
"""Weight of the newest whole-sentence front of fast start in :attr:`SpeedModel.busy_front`."""
_BUSY_RANGE = (1.0, 3.0)
""":attr:`SpeedModel.busy_front` stays within: a fast one does not shorten a lead below the fit's."""

_DRIFT_FROM = 3
"""Samples a part needs before its runs are compared with its fit (the first runs after load are
slower, and before them the fit is only the prior)."""


@dataclass(frozen=True)
class Cost:
    """Seconds of one run of a part: ``fixed + per_unit * size``."""

    fixed: float
    per_unit: float

    def __call__(self, size: float) -> float:
        return self.fixed + self.per_unit * max(0.0, size)


class SpeedModel:
    """Per-part run costs and frames per id, from the latest runs (thread-safe: the synthesis
    thread records, anyone may read)."""

    def __init__(self, *, assumed: dict[str, Cost] | None = None, frames_per_id: float | None = None) -> None:
        """``assumed``: fixed costs of some parts that runs do not change (tests, what-if tools)."""
        self._lock = threading.Lock()
        self._fixed = dict(assumed or {})
        self._samples: dict[str, collections.deque[tuple[float, float]]] = {
            kind: collections.deque(maxlen=_KEEP) for kind in KINDS
        }
        self._fits: dict[str, Cost] = {kind: Cost(*_PRIOR[kind]) for kind in KINDS} | self._fixed
        self._frames_per_id = frames_per_id or _PRIOR_FRAMES_PER_ID
        self._fixed_frames = frames_per_id is not None
        self._runs = 0
        self._drift = 1.0
        self._busy_front = 1.0

    def record(self, kind: str, size: int, seconds: float) -> None:
        """One run of ``kind`` over ``size`` ids or frames took ``seconds`` (wall)."""
        if kind not in self._samples or kind in self._fixed or size <= 0 or seconds < 0:
            return
        with self._lock:
            samples = self._samples[kind]
            predicted = self._fits[kind](size)
            if len(samples) >= _DRIFT_FROM and predicted > 0:
                ratio = min(3.0, max(0.33, seconds / predicted))
                self._drift += _DRIFT_GAIN * (ratio - self._drift)
            samples.append((float(size), float(seconds)))
            self._fits[kind] = _fit(samples, self._fits[kind])
            self._runs += 1

    def record_busy_front(self, predicted: float, seconds: float) -> None:
        """Fast start's whole-sentence front, predicted ``predicted`` by the front's fit before it ran,
        took ``seconds`` (wall).  It runs while the prefix's windows decode: on a board's profile it
        measured 1.4-1.7x the fit, which is made mostly of fronts that ran alone.  Not learned where the
        front's cost is assumed (a pinned model plans the same whatever the runs took)."""
        if predicted > 0 and seconds >= 0 and "front" not in self._fixed:
            ratio = min(_BUSY_RANGE[1], max(_BUSY_RANGE[0], seconds / predicted))
            with self._lock:
                self._busy_front += _BUSY_GAIN * (ratio - self._busy_front)

    @property
    def busy_front(self) -> float:
        """How much longer than the front's fit fast start's whole-sentence front takes (1.0 at first)."""
        with self._lock:
            return self._busy_front

    def record_frames(self, ids: int, frames: int) -> None:
        """A sentence of ``ids`` ids came to ``frames`` frames (for predicting sentences not yet run)."""
        if ids > 0 and frames > 0 and not self._fixed_frames:
            with self._lock:
                self._frames_per_id += 0.2 * (frames / ids - self._frames_per_id)

    def cost(self, kind: str) -> Cost:
        with self._lock:
            return self._fits[kind]

    @property
    def frames_per_id(self) -> float:
        with self._lock:
            return self._frames_per_id

    @property
    def slowdown(self) -> float:
        """How much slower than their fits the latest runs were (1.0: not slower).

        A busy neighbour, a quota or a throttled core slows every run at once; the plan stretches
        its predictions by this until the fits have caught up, instead of running dry meanwhile."""
        with self._lock:
            return max(1.0, self._drift / _DRIFT_NOISE)

    @property
    def runs(self) -> int:
        """Runs recorded so far (0: the model still holds its priors)."""
        with self._lock:
            return self._runs


def _fit(samples: collections.deque[tuple[float, float]], before: Cost) -> Cost:
    """Least squares ``seconds = fixed + per_unit * size`` (both >= 0); with one size only, the
    fixed part of ``before`` is kept and the rest is per unit.

    Plain Python over at most _KEEP pairs: it runs after every model run, three times before a
    text's first audio, where numpy's polyfit on 48 points cost ~0.3 ms a fit (0.06 ms in a warm
    loop; ~1 ms of a ~30 ms first chunk here), this 0.015 ms."""
    n = len(samples)
    sum_x = sum(s for s, _ in samples)
    mean_x = sum_x / n
    if n < 3 or max(s for s, _ in samples) - min(s for s, _ in samples) < 0.25 * mean_x:
        fixed = min(before.fixed, min(t for _, t in samples))
        return Cost(fixed, max(0.0, statistics.median((t - fixed) / s for s, t in samples)))
    sum_y = sum(t for _, t in samples)
    mean_y = sum_y / n
    sxx = sum((s - mean_x) ** 2 for s, _ in samples)
    per_unit = sum((s - mean_x) * (t - mean_y) for s, t in samples) / sxx
    fixed = mean_y - per_unit * mean_x
    if fixed < 0 or per_unit < 0:  # cache effects bend the line: then a line through zero
        return Cost(0.0, sum(s * t for s, t in samples) / sum(s * s for s, _ in samples))
    return Cost(fixed, per_unit)
