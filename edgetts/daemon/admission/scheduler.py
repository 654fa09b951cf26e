"""Which announcement plays next: priority order, FIFO within a priority.

Bounded, expiring, deduplicating by id.  Pure data structure: no threads, no
clock of its own (every call takes ``now``, Unix seconds), so the daemon's one
loop owns it and tests drive it directly.  The ids that ended are kept in a
:class:`~edgetts.daemon.admission.dedup.DedupMemory`, which may be on disk (issue 13).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from edgetts.daemon.admission.dedup import DedupMemory
from edgetts.daemon.admission.messages import Announcement
from edgetts.daemon.inbound.ready_audio import ReadyAudio
from edgetts.daemon.playout.latency import HopStamps
from edgetts.text.prepare import Prepared


@dataclass(eq=False)
class Entry:
    """An accepted announcement and what the daemon needs to finish it."""

    announcement: Announcement
    received_at: float
    """Unix seconds of receipt."""

    expires_at: float | None
    """Unix seconds after which it must not start (ttl, expires_at or the default TTL)."""

    acks: list[Any] = field(default_factory=list)
    """Opaque handles the transport needs to acknowledge the message(s) once it has ended."""

    received_mono: float = 0.0
    """time.monotonic() at receipt, for latency."""

    resume_sentence: int = 0
    """First sentence to play (after a preemption)."""

    repeats_done: int = 0
    """Complete plays so far (of `repeat`)."""

    seq: int = field(default=-1)
    """Arrival order, set by the scheduler."""

    prepared: Prepared | None = None
    """The announcement's text prepared at admission (None without text): the one preparation."""

    hops: HopStamps | None = None
    """When it passed each step to its first PCM (the `started` event's timing_ms)."""

    audio: ReadyAudio | None = None
    """Its audio when a service gave it (:mod:`edgetts.daemon.inbound.ready_audio`): played as recorded,
    its text is a label."""

    play_at: float | None = None
    """Unix seconds its first sample is heard at (edgetts.daemon.playout.sync): its own `play_at` or a
    synchronized group's; None = as soon as it can."""

    @property
    def id(self) -> str:
        return self.announcement.id

    @property
    def key(self) -> tuple[int, int]:
        return (self.announcement.rank, self.seq)

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now >= self.expires_at


@dataclass(frozen=True)
class Admission:
    """The outcome of :meth:`Scheduler.offer`."""

    accepted: bool
    duplicate: bool = False
    reason: str | None = None
    displaced: Entry | None = None
    """A queued lower-priority entry dropped to make room (reject it with `reason`)."""


class Scheduler:
    """Priority queue of :class:`Entry`, FIFO per priority, bounded, deduplicating."""

    def __init__(self, max_length: int, dedup_window_s: float, memory: DedupMemory | None = None) -> None:
        self.max_length = max_length
        self._queue: list[Entry] = []  # sorted by Entry.key
        self._seq = itertools.count()
        self._active: set[str] = set()  # ids queued or playing
        self._done = memory if memory is not None else DedupMemory(dedup_window_s, now=0.0)
        self._done.window_s = dedup_window_s

    @property
    def dedup_window_s(self) -> float:
        return self._done.window_s

    @property
    def memory(self) -> DedupMemory:
        """The ids that ended (within the dedup window)."""
        return self._done

    def __len__(self) -> int:
        return len(self._queue)

    def __iter__(self) -> Iterator[Entry]:
        return iter(list(self._queue))

    def reconfigure(self, max_length: int, dedup_window_s: float) -> None:
        """New limits; entries already queued stay even if over the new bound."""
        self.max_length = max_length
        self._done.window_s = dedup_window_s

    def is_duplicate(self, ident: str, now: float) -> bool:
        self._forget(now)
        return ident in self._active or ident in self._done

    def offer(self, entry: Entry, now: float) -> Admission:
        """Queue ``entry`` unless it is a duplicate or there is no room for it."""
        if self.is_duplicate(entry.id, now):
            return Admission(False, duplicate=True, reason="duplicate id")
        displaced = None
        if len(self._queue) >= self.max_length:
            lowest = self._queue[-1]
            if lowest.announcement.rank <= entry.announcement.rank:
                return Admission(False, reason=f"queue full ({len(self._queue)} waiting)")
            # A more urgent announcement displaces the newest of the least urgent ones.
            displaced = self._queue.pop()
            self._active.discard(displaced.id)
        entry.seq = next(self._seq)
        bisect.insort(self._queue, entry, key=lambda e: e.key)
        self._active.add(entry.id)
        return Admission(True, displaced=displaced)

    def requeue(self, entry: Entry) -> None:
        """Put back an interrupted entry: it keeps its place (its arrival order)."""
        bisect.insort(self._queue, entry, key=lambda e: e.key)
        self._active.add(entry.id)

    def peek(self) -> Entry | None:
        return self._queue[0] if self._queue else None

    def pop(self) -> Entry | None:
        """The most urgent entry (call :meth:`expire` first); it stays a known id."""
        return self._queue.pop(0) if self._queue else None

    def expire(self, now: float) -> list[Entry]:
        """Remove and return the entries that expired by ``now``."""
        gone = [e for e in self._queue if e.expired(now)]
        if gone:
            self._queue = [e for e in self._queue if not e.expired(now)]
            for entry in gone:
                self.ended(entry.id, now)
        return gone

    def next_expiry(self) -> float | None:
        times = [e.expires_at for e in self._queue if e.expires_at is not None]
        return min(times) if times else None

    def ended(self, ident: str, now: float, *, remember: bool = True) -> None:
        """``ident`` is no longer queued or playing.

        ``remember``: it was played (or expired/dropped on purpose), so a duplicate
        within the dedup window is ignored; False (it failed) lets a retry through.
        """
        self._active.discard(ident)
        if remember:
            self._done.remember(ident, now)

    def remove(self, ident: str | None) -> list[Entry]:
        """Take out the queued entry ``ident`` (every queued one for None); they stay known ids
        until :meth:`ended` is called for them."""
        out = [e for e in self._queue if ident is None or e.id == ident]
        self._queue = [e for e in self._queue if e not in out]
        return out

    def snapshot(self) -> tuple[dict[str, Any], ...]:
        """What is queued, in play order, as plain data; safe from any thread (one list copy, which the
        GIL makes atomic, of entries whose announcements are frozen): the console's queue (issue 18)."""
        return tuple(queued_item(e) for e in list(self._queue))

    def drain(self) -> list[Entry]:
        """Remove and return every queued entry."""
        out, self._queue = self._queue, []
        return out

    def _forget(self, now: float) -> None:
        self._done.forget_old(now)


def queued_item(entry: Entry) -> dict[str, Any]:
    """One queued entry as the console shows it."""
    a = entry.announcement
    item: dict[str, Any] = {
        "id": a.id,
        "priority": a.priority,
        "received_at": round(entry.received_at, 3),
        "expires_at": entry.expires_at,
    }
    for key in ("text", "clip", "voice", "chime"):
        if getattr(a, key) is not None:
            item[key] = getattr(a, key)
    if a.repeat != 1:
        item["repeat"] = a.repeat
    return item
