"""What does not work as configured, and the retained status that says so.

One :class:`Health` belongs to the daemon's loop and is handed to whoever
reports (the player's reports, the connection, reload, the events): each
``set``/``clear`` also marks the status as changed, so it is published once
at the end of the loop's turn, however many reports came in that turn.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, cast

from edgetts import __version__
from edgetts.daemon.status import Degraded, Status
from edgetts.runtime.clock import clock_health
from edgetts.runtime.memlock import read_vmlck
from edgetts.vocabulary import DegradedWhat

Problem = str | None | Callable[[], str | None]
"""A `degraded` entry as the assets decide it: the reason, None when fine, or what tells the reason
whenever a status is made (something that can fail while the daemon runs: a voice's NPU)."""

_PLAYED = frozenset({"started", "finished", "failed", "cancelled", "preempted", "fallback"})
"""Events of an announcement whose turn came (not `queued`, `rejected` or `expired`)."""


class Health:
    """The `degraded` map (what -> reason), the underrun totals and the "status changed" flag."""

    def __init__(self, groups: tuple[str, ...] = ()) -> None:
        self._degraded: dict[str, str] = {}
        self._changed = True  # the first status goes out at the loop's first turn
        self._underruns = 0
        self._gap_ms = 0.0
        self._groups = groups
        """The device's groups, as it started (a device change needs a restart)."""
        self._last: dict[str, Any] | None = None
        self._watched: dict[str, Callable[[], str | None]] = {}

    def note_event(self, ident: str, event: str, ts: float) -> None:
        """An announcement's event: the status's `last` (what played last, and how it ended)."""
        if event in _PLAYED:
            self._last = {"id": ident, "event": event, "ts": round(ts, 3)}

    def set(self, what: str, reason: str) -> None:
        self._degraded[what] = reason
        self._changed = True

    def clear(self, what: str) -> None:
        self._degraded.pop(what, None)
        self._changed = True

    def apply_problems(self, problems: Mapping[str, Problem]) -> None:
        """The assets' problems by what they concern: each set with its reason, or cleared where the
        assets found none (None), so a reload that mended something clears it.  One given as a callable
        is asked now and again at every turn of the loop and every status (until the next assets)."""
        for what, reason in problems.items():
            if callable(reason):
                self._watched[what] = reason
                reason = reason()
            else:
                self._watched.pop(what, None)
            if reason is None:
                self.clear(what)
            else:
                self.set(what, reason)

    def _poll(self) -> None:
        for what, source in self._watched.items():
            reason = source()
            if reason != self._degraded.get(what):
                if reason is None:
                    self.clear(what)
                else:
                    self.set(what, reason)

    def get(self, what: str) -> str | None:
        return self._degraded.get(what)

    def __contains__(self, what: object) -> bool:
        return what in self._degraded

    def snapshot(self) -> dict[str, str]:
        """A copy of the map (for other threads: tests, tools), watched problems as they are now."""
        current = dict(self._degraded)
        for what, source in list(self._watched.items()):
            reason = source()
            if reason is None:
                current.pop(what, None)
            else:
                current[what] = reason
        return current

    def count_underruns(self, underruns: int, gap_ms: float) -> None:
        """A job's underruns (the player's report) into the status's totals since start."""
        if underruns:
            self._underruns += underruns
            self._gap_ms += gap_ms
            self._changed = True

    def changed(self) -> None:
        """Something the status shows besides `degraded` changed (queue, current, voices)."""
        self._changed = True

    def take_changed(self) -> bool:
        """Whether the status must be published again; clears the flag."""
        self._poll()
        changed, self._changed = self._changed, False
        return changed

    def status(
        self,
        state: str,
        *,
        voice: str,
        queue_depth: int,
        voices: tuple[str, ...],
        current: str | None,
        keepalive: dict[str, float] | None,
        speed: dict[str, Any] | None = None,
    ) -> Status:
        """The retained status as of now."""
        self._poll()
        return Status(
            state=state,  # type: ignore[arg-type]
            version=__version__,
            voice=voice,
            queue_depth=queue_depth,
            locked_bytes=read_vmlck(),
            degraded=tuple(Degraded(cast(DegradedWhat, w), r) for w, r in sorted(self._degraded.items())),
            voices=voices,
            current=current,
            ts=time.time(),
            keepalive=keepalive,
            underruns=self._underruns,
            gap_ms=self._gap_ms,
            rtf_1min=None if speed is None else speed.get("rtf_1min"),
            speed=speed,
            groups=self._groups,
            clock=clock_health().to_dict(),
            last=self._last,
        )


__all__ = ["Health"]
