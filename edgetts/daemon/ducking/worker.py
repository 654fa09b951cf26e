"""One mixer's ducking, on a thread of its own: lower while edgetts plays, hold, bring back.

The loop only posts "playing" / "idle" (and a new shape on reload, and close at the end): the
mixer's I/O, its timeouts and its fades happen here, so a slow or unreachable mixer never holds
up the loop or the audio thread.

The fade runs in decibels (even steps to the ear) every FADE_STEP_S; each step reads the levels
first, and so:

* a stream, player or client that appears while edgetts plays is lowered with the others;
* one whose level is not what we last set was changed by someone meanwhile: it is let go, left
  as they set it, and not lowered again in this announcement (we never fight a user);
* one that is gone is forgotten.

What was lowered, with its level before, is written to the state folder before anything is
lowered (edgetts.daemon.ducking.journal); a worker that finds such a record when it starts puts
those levels back (those still on the way between lowered and before) before anything else.
An unreachable mixer is reported to the loop (`degraded: duck`) and tried again every RETRY_S;
the report clears when it answers.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgetts.daemon.ducking import journal
from edgetts.daemon.ducking.mixer import Level, Mixer, MixerError, label, on_the_way, same

_LOGGER = logging.getLogger(__name__)

FADE_STEP_S = 0.02
"""Seconds between two levels of a fade (a 300 ms fade is 15 steps)."""

REFRESH_S = 1.0
"""While lowered, how often the levels are read again (new streams, levels changed by a user)."""

RETRY_S = 5.0
"""How often an unreachable mixer is tried again."""

CLOSE_FADE_S = 0.5
"""Longest fade back up when the daemon stops."""


@dataclass(frozen=True)
class Shape:
    """How far and how fast (DuckSettings in plain values)."""

    level_db: float
    fade_s: float
    hold_s: float


@dataclass(frozen=True)
class DuckReport:
    """From a worker to the loop: the mixer's problem (`degraded: duck`), or None when it answers again."""

    mixer: str
    problem: str | None


_CLOSE = object()


class DuckWorker:
    """The thread that ducks one mixer; :meth:`post` is its only door (any thread)."""

    def __init__(
        self,
        kind: str,
        address: str,
        connect: Callable[[str, str], Mixer],
        shape: Shape,
        folder: Path | None,
        report: Callable[[DuckReport], None],
        *,
        recover_only: bool = False,
    ) -> None:
        self.kind, self.address, self.label = kind, address, label(kind, address)
        self._connect, self._shape, self._report = connect, shape, report
        self._path = None if folder is None else folder / journal.file_name(kind, address)
        self._recover_only = recover_only
        """A record of a mixer no longer configured: put it back, then end."""
        self._inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._mixer: Mixer | None = None
        self._want = self._closing = False
        self._atten = self._target = 0.0  # dB, <= 0
        self._last_step = time.monotonic()
        self._restore_at: float | None = None
        self._refresh_at: float | None = None
        self._problem: str | None = None
        self._retry_at = 0.0
        self._before: dict[str, Level] = {}
        self._last: dict[str, Level] = {}
        """What we set each key to last."""
        self._recovered: dict[str, Level] = {}
        """Keys of a record found at start: their lowered level, until first seen on the way."""
        self._released: set[str] = set()
        self._journal_failed = False
        self.thread = threading.Thread(target=self._run, name=f"edgetts-duck-{kind}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def post(self, msg: bool | Shape | object) -> None:
        """True: edgetts plays; False: it stopped; a Shape: new settings; CLOSE: put back and end."""
        self._inbox.put(msg)

    def close(self) -> None:
        self._inbox.put(_CLOSE)

    # ------------------------------------------------------------ thread
    def _run(self) -> None:
        try:
            self._adopt_record()
            self._tick(time.monotonic(), probe=True)
            while not self._done():
                wake = self._next_wake()
                try:
                    msg = self._inbox.get(timeout=None if wake is None else max(0.0, wake - time.monotonic()))
                except queue.Empty:
                    msg = None
                now = time.monotonic()
                if msg is not None:
                    self._handle(msg, now)
                self._tick(now)
        except Exception:  # a bug: say so, never take the daemon down
            _LOGGER.exception("duck: %s: the worker failed", self.label)
        finally:
            if self._mixer is not None:
                self._mixer.close()

    def _done(self) -> bool:
        idle = not self._before and self._atten == 0.0 and self._restore_at is None and not self._want
        if self._closing:
            return idle or self._problem is not None  # (unreachable: the record stays for the next start)
        return self._recover_only and idle and self._problem is None

    def _adopt_record(self) -> None:
        record = None if self._path is None else journal.read(self._path)
        if record is None:
            return
        _LOGGER.info("duck: %s: putting back %d level(s) a previous run lowered", self.label, len(record.targets))
        # Put back at once, not faded: each may stand anywhere on the way down, and a fade from the
        # bottom would first lower one the kill left halfway.
        self._before = {k: before for k, (before, _low) in record.targets.items()}
        self._recovered = {k: low for k, (_before, low) in record.targets.items()}

    def _handle(self, msg: Any, now: float) -> None:
        if msg is _CLOSE:
            self._closing, self._want, self._restore_at = True, False, None
            self._shape = Shape(self._shape.level_db, min(self._shape.fade_s, CLOSE_FADE_S), 0.0)
            self._set_target(0.0, now)
        elif isinstance(msg, Shape):
            self._shape = msg
            if self._target < 0.0:
                self._set_target(msg.level_db, now)
            if self._before:
                self._save()
        elif msg is True and not self._closing:
            self._want, self._restore_at = True, None
            self._set_target(self._shape.level_db, now)
            self._refresh_at = now  # (read the levels at once: what to lower)
        elif msg is False:
            self._want = False
            if self._target < 0.0:
                self._restore_at = now + self._shape.hold_s

    def _set_target(self, target: float, now: float) -> None:
        if self._atten == self._target:
            self._last_step = now  # a fade starts now
        self._target = target

    def _next_wake(self) -> float | None:
        if self._problem is not None:  # (nothing to step or refresh until it answers)
            return min(t for t in (self._retry_at, self._restore_at) if t is not None)
        wakes = [t for t in (self._restore_at, self._refresh_at) if t is not None]
        if self._atten != self._target:
            wakes.append(self._last_step + FADE_STEP_S)
        return min(wakes) if wakes else None

    def _tick(self, now: float, probe: bool = False) -> None:
        if self._restore_at is not None and now >= self._restore_at:
            self._restore_at = None
            self._set_target(0.0, now)
        moved = self._advance(now)
        due = probe or moved or (self._refresh_at is not None and now >= self._refresh_at)
        if self._problem is not None:
            due = now >= self._retry_at
        if not due:
            return
        lowering = self._want or self._atten < 0.0
        self._refresh_at = now + REFRESH_S if lowering else None
        if self._apply() and not lowering and not self._want and self._target == 0.0:
            self._finish()

    def _advance(self, now: float) -> bool:
        """Move the attenuation toward its target by the time since the last step; whether it moved."""
        if self._atten == self._target:
            return False
        span = abs(self._shape.level_db)
        step = span if self._shape.fade_s <= 0 else span * (now - self._last_step) / self._shape.fade_s
        self._last_step = now
        if self._atten > self._target:
            self._atten = max(self._target, self._atten - step)
        else:
            self._atten = min(self._target, self._atten + step)
        return True

    # -------------------------------------------------------------- mixer
    def _apply(self) -> bool:
        """Set every lowered key to the current attenuation; whether the mixer answered."""
        try:
            if self._mixer is None:
                self._mixer = self._connect(self.kind, self.address)
            mixer = self._mixer
            current = mixer.levels()
            if self._want:
                fresh = {k: v for k, v in current.items() if k not in self._before and k not in self._released}
                if fresh:
                    self._before.update(fresh)
                    self._save()  # (before anything is lowered)
            changes: dict[str, Level] = {}
            for key, before in list(self._before.items()):
                if key not in current:
                    self._drop(key)
                elif not self._still_ours(mixer, key, current[key]):
                    _LOGGER.info(
                        "duck: %s: %s was changed meanwhile (%s): left as it is", self.label, key, current[key]
                    )
                    self._drop(key)
                    self._released.add(key)
                    self._save()
                else:
                    level = before if self._atten >= 0.0 else mixer.lowered(before, self._atten)
                    if not same(mixer, level, current[key]):
                        changes[key] = level
                    self._last[key] = level
                    self._recovered.pop(key, None)
            mixer.set_levels(changes)
        except MixerError as exc:
            self._failed(str(exc))
            return False
        if self._problem is not None:
            _LOGGER.info("duck: %s answers again", self.label)
            self._problem = None
            self._report(DuckReport(self.label, None))
        if not (self._want or self._before) and self._mixer is not None:
            self._mixer.close()  # (idle: MPD would drop it anyway, and Snapcast's notifications pile up)
            self._mixer = None
        return True

    def _still_ours(self, mixer: Mixer, key: str, level: Level) -> bool:
        if key in self._recovered:
            return on_the_way(mixer, level, self._recovered[key], self._before[key])
        return key not in self._last or same(mixer, level, self._last[key])

    def _drop(self, key: str) -> None:
        self._before.pop(key, None)
        self._last.pop(key, None)
        self._recovered.pop(key, None)

    def _failed(self, reason: str) -> None:
        if self._mixer is not None:
            self._mixer.close()
            self._mixer = None
        self._retry_at = time.monotonic() + RETRY_S
        if reason != self._problem:
            _LOGGER.warning("duck: %s (tried again every %g s)", reason, RETRY_S)
            self._problem = reason
            self._report(DuckReport(self.label, reason))

    def _finish(self) -> None:
        """Everything is back: forget it, and the record."""
        if self._before:
            _LOGGER.debug("duck: %s: %d level(s) back", self.label, len(self._before))
        self._before.clear()
        self._last.clear()
        self._recovered.clear()
        self._released.clear()
        if self._path is not None:
            journal.remove(self._path)

    def _save(self) -> None:
        if self._path is None or self._mixer is None:
            return
        mixer, db = self._mixer, self._shape.level_db
        targets = {k: (b, self._recovered.get(k, mixer.lowered(b, db))) for k, b in self._before.items()}
        try:
            journal.write(self._path, journal.Record(self.kind, self.address, db, targets))
        except OSError as exc:
            if not self._journal_failed:
                _LOGGER.error("duck: cannot write %s (%s): a crash would leave the levels lowered", self._path, exc)
            self._journal_failed = True


CLOSE = _CLOSE
"""The message that ends a worker (after putting back what it lowered)."""

__all__ = ["CLOSE", "CLOSE_FADE_S", "FADE_STEP_S", "REFRESH_S", "RETRY_S", "DuckReport", "DuckWorker", "Shape"]
