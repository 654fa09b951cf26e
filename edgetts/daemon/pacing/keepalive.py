"""Keepalive: a dummy inference while idle, so code, caches and page tables stay warm.

The policy runs on the daemon's synthesis thread, never on a thread of its
own: that thread waits for work with ``timeout=keepalive.seconds_until_due()``
and, when the wait times out, calls :meth:`Keepalive.run`.  A real
announcement therefore never waits for more than one keepalive *step*: the
warm-up callable may return an iterable (e.g. ``voice.synthesize(...)``, one
item per sentence), and :meth:`Keepalive.run` asks ``preempted()`` before each
next item and stops as soon as a request is waiting.

CPU cost: measured around each run with the process CPU clock
(``time.process_time``).  ``time.thread_time`` would miss the work of
onnxruntime's intra-op worker threads (with 2 threads it reads about half);
the run happens only when the daemon is idle, so the other threads add
next to nothing.  Cost per hour = CPU per run x runs per hour.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from edgetts.daemon.pacing.speed import timed_run
from edgetts.engine import AudioChunk, SynthesisConfig, Voice

_LOGGER = logging.getLogger(__name__)

#: What the daemon feeds through the voice: short, every phoneme class once.
KEEPALIVE_TEXT = "Ready."

Clock = Callable[[], float]


@dataclass(frozen=True)
class KeepaliveStats:
    runs: int
    """Keepalive runs finished (or preempted) so far."""
    preempted: int
    """Runs cut short because real work arrived."""
    cpu_s: float
    """CPU seconds of all runs."""
    wall_s: float
    """Wall-clock seconds of all runs."""
    interval_s: float

    @property
    def cpu_s_per_run(self) -> float:
        return self.cpu_s / self.runs if self.runs else 0.0

    @property
    def cpu_s_per_hour(self) -> float:
        """CPU seconds an idle hour costs: per run x 3600 / interval (0 when off)."""
        if self.interval_s <= 0:
            return 0.0
        return self.cpu_s_per_run * 3600.0 / self.interval_s

    def to_dict(self) -> dict[str, float | int]:
        return {
            "runs": self.runs,
            "preempted": self.preempted,
            "cpu_s_per_run": round(self.cpu_s_per_run, 4),
            "cpu_s_per_hour": round(self.cpu_s_per_hour, 2),
            "interval_s": self.interval_s,
        }


class Keepalive:
    """When to run the warm-up, running it preemptibly, and what it cost.

    ``warm``: the dummy inference, e.g.
    ``lambda: voice.synthesize(KEEPALIVE_TEXT, SynthesisConfig(noise_scale=0, noise_w=0))``
    (the generator is consumed here).  ``interval_s`` 0 = off.
    ``clock``/``cpu_clock`` are injectable for tests.
    """

    def __init__(
        self,
        interval_s: float,
        warm: Callable[[], Iterable[Any] | Any],
        *,
        clock: Clock = time.monotonic,
        cpu_clock: Clock = time.process_time,
    ) -> None:
        if interval_s < 0:
            raise ValueError("keepalive.interval_s must be >= 0")
        self.interval_s = float(interval_s)
        self._warm = warm
        self._clock = clock
        self._cpu_clock = cpu_clock
        self._last = clock()
        self._runs = 0
        self._preempted = 0
        self._cpu = 0.0
        self._wall = 0.0

    @property
    def enabled(self) -> bool:
        return self.interval_s > 0

    def note_activity(self) -> None:
        """Call when real work ends (and starts): idleness counts from here."""
        self._last = self._clock()

    def seconds_until_due(self) -> float | None:
        """Timeout for the synthesis thread's wait for work; None = wait forever (off)."""
        if not self.enabled:
            return None
        return max(0.0, self._last + self.interval_s - self._clock())

    def due(self) -> bool:
        left = self.seconds_until_due()
        return left is not None and left <= 0.0

    def run(self, preempted: Callable[[], bool] = lambda: False) -> bool:
        """Run the warm-up now; stop between steps once ``preempted()`` is true.

        Returns True when it ran to the end.  A failure is logged, never raised:
        the next real announcement will report a broken voice itself.
        """
        wall0, cpu0 = self._clock(), self._cpu_clock()
        complete = True
        try:
            if preempted():
                complete = False
            else:
                result = self._warm()
                if isinstance(result, Iterator):  # a generator: one step per item
                    for _step in result:
                        if preempted():
                            complete = False
                            break
        except Exception:  # noqa: BLE001 - a keepalive must never take the thread down
            _LOGGER.warning("keepalive inference failed", exc_info=True)
        finally:
            self._cpu += self._cpu_clock() - cpu0
            self._wall += self._clock() - wall0
            self._runs += 1
            self._preempted += 0 if complete else 1
            self._last = self._clock()
        return complete

    def run_if_due(self, preempted: Callable[[], bool] = lambda: False) -> bool:
        """:meth:`run` when due; False when not due (or off)."""
        if not self.due():
            return False
        self.run(preempted)
        return True

    def stats(self) -> KeepaliveStats:
        return KeepaliveStats(self._runs, self._preempted, self._cpu, self._wall, self.interval_s)


def keepalive_run(voice: Voice | None, name: str, notify: Callable[[Any], None]) -> Iterator[AudioChunk]:
    """The keepalive's inference: ``voice`` (the default one, or None) reads a word, timed under ``name``
    so the full voice's speed is known while its degrade_to variant speaks (issue 14)."""
    if voice is None:
        return iter(())
    return timed_run(
        voice.synthesize(KEEPALIVE_TEXT, SynthesisConfig(noise_scale=0.0, noise_w=0.0)), name, notify, keepalive=True
    )
