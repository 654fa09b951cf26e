"""Which occurrences are due on this device, and when each is rendered ahead, played or missed.

Pure logic on the time it is given (a test drives it with a simulated clock): each call of
:meth:`Planner.step` says which occurrences to render ahead now (``prepare``), which to admit
(``admit``: on time with ``play_at``, or late within ``schedule.catch_up``) and which were missed
(``missed``).  Every occurrence is one of them at most once: the entry's cursor (its
:class:`~edgetts.daemon.schedule.state.EntryState`) moves past it as it is dealt with and is kept in
the state directory, so neither a restart nor a reload plays one twice.

* A new entry (or one whose time rule changed, by a reload or while the daemon was down) starts
  at the time it appears: what its rule had before is nobody's to catch up.
* An occurrence found past (the daemon was down, or the loop stalled) plays late only when
  ``catch_up`` is on and it is no older than that, and only the latest one of the entry; else it
  is missed.
* An occurrence handed to the queue whose announcement never ended (the daemon died meanwhile:
  the dedup memory does not know it) is looked at again after a restart, by the same rules.
"""

from __future__ import annotations

import hashlib
import heapq
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone, tzinfo

from edgetts.config import Config
from edgetts.config.schedule import ScheduleEntry, ScheduleSettings
from edgetts.daemon.schedule.rules import Rule, board_zone, zone_name
from edgetts.daemon.schedule.state import EntryState, ScheduleState

_EPSILON_S = 0.001


@dataclass(frozen=True)
class Here:
    """Which targets this device plays: its own id, its groups, and `all`."""

    device: str
    groups: tuple[str, ...] = ()

    @classmethod
    def of(cls, config: Config) -> Here:
        return cls(config.device.id, config.device.groups)

    def hears(self, entry: ScheduleEntry) -> bool:
        kind, name = entry.target()
        if kind == "all":
            return True
        if kind == "group":
            return name in self.groups
        return name is None or name == self.device


@dataclass(frozen=True)
class Occurrence:
    """One time an entry plays."""

    entry: ScheduleEntry
    at: float
    """Unix seconds (its `play_at`)."""
    zone: tzinfo
    late: bool = False
    """Found past and played late (catch_up): as soon as it can, not at ``at``."""

    @property
    def ident(self) -> str:
        """Its announcement's id: the same on every member (same seed, same samples), and dedup's key."""
        return f"{self.entry.id}@{datetime.fromtimestamp(round(self.at), timezone.utc):%Y-%m-%dT%H:%M:%SZ}"

    def local(self) -> datetime:
        return datetime.fromtimestamp(self.at, self.zone)

    @property
    def label(self) -> str:
        """Local time with the zone: ``2026-12-07 21:45:00 CET (Europe/Berlin)``."""
        when = self.local()
        return f"{when:%Y-%m-%d %H:%M:%S} {when.tzname()} ({zone_name(self.zone)})"


@dataclass
class Turn:
    """What :meth:`Planner.step` found to do now."""

    prepare: list[Occurrence] = field(default_factory=list)
    admit: list[Occurrence] = field(default_factory=list)
    missed: list[Occurrence] = field(default_factory=list)


Horizon = Callable[[Occurrence], float]
"""Seconds before an occurrence's time that something is done for it (rendered, admitted)."""


def fingerprint(entry: ScheduleEntry) -> str:
    """The entry's time rule, hashed: what, changed, makes it a new rule."""
    rule = [entry.cron, entry.at, entry.days, entry.timezone, sorted(map(str, entry.skip))]
    rule += [str(entry.starts), str(entry.until)]
    return hashlib.blake2b(json.dumps(rule, default=str).encode(), digest_size=8).hexdigest()


class _Slot:
    """One entry as planned: its rule, and its next occurrence after the cursor (cached)."""

    def __init__(self, entry: ScheduleEntry, zone: tzinfo) -> None:
        self.entry = entry
        self.rule = Rule.of(entry, zone)
        self.fingerprint = fingerprint(entry)
        self._next: tuple[float, Occurrence | None] | None = None
        self.prepared: set[float] = set()

    def pending(self, cursor: float) -> Occurrence | None:
        if self._next is None or self._next[0] != cursor:
            at = self.rule.after(cursor)
            self._next = (cursor, None if at is None else Occurrence(self.entry, at, self.rule.zone))
        return self._next[1]


class Planner:
    """The timetable of one device (see the module's doc)."""

    def __init__(
        self,
        settings: ScheduleSettings,
        here: Here,
        state: ScheduleState,
        now: float,
        ended: Callable[[str], bool] = lambda _ident: True,
        zone: tzinfo | None = None,
    ) -> None:
        """``ended``: whether an announcement id ended (the dedup memory); ``zone``: the board's."""
        self._state = state
        self._zone = zone or board_zone()
        self._settings = settings
        self._here = here
        self._slots = self._build(settings.entries)
        for slot in self._slots:
            self._adopt(slot, now, ended)
        self._state.retain({s.entry.id for s in self._slots})
        self._state.save()

    @property
    def settings(self) -> ScheduleSettings:
        return self._settings

    def _build(self, entries: Iterable[ScheduleEntry]) -> list[_Slot]:
        return [_Slot(entry, self._zone) for entry in entries]

    def _adopt(self, slot: _Slot, now: float, ended: Callable[[str], bool] | None) -> None:
        """The slot's record: kept when its rule is the one it was kept for, else started at ``now``."""
        ident = slot.entry.id
        old = self._state.get(ident)
        if old is None or old.rule != slot.fingerprint:
            self._state.put(ident, EntryState(now, None, slot.fingerprint))
            return
        if ended is not None and old.admitted is not None and old.admitted <= old.cursor:
            handed = Occurrence(slot.entry, old.admitted, slot.rule.zone)
            if not ended(handed.ident):  # handed over, never ended: the daemon died with it
                old = EntryState(min(old.cursor, old.admitted - _EPSILON_S), old.admitted, old.rule)
        self._state.put(ident, old)

    def reconfigure(self, settings: ScheduleSettings, here: Here, now: float) -> None:
        """A reload: entries whose rule is unchanged go on from their cursor; the others start now."""
        self._settings, self._here = settings, here
        self._slots = self._build(settings.entries)
        for slot in self._slots:
            self._adopt(slot, now, None)
        self._state.retain({s.entry.id for s in self._slots})
        self._state.save()

    def _cursor(self, slot: _Slot) -> EntryState:
        record = self._state.get(slot.entry.id)
        assert record is not None, "adopted"
        return record

    def _mine(self) -> list[_Slot]:
        return [slot for slot in self._slots if self._here.hears(slot.entry)]

    def step(self, now: float, lead: Horizon, prepare: Horizon) -> Turn:
        """What to do at ``now``; the cursors move past what it returns to admit or as missed."""
        turn = Turn()
        catch_up = self._settings.catch_up_s
        for slot in self._mine():
            record = self._cursor(slot)
            occ = slot.pending(record.cursor)
            if occ is None:
                continue
            if now > occ.at:
                latest = slot.rule.latest(max(record.cursor, now - catch_up), now) if catch_up > 0 else None
                if latest is not None:
                    turn.admit.append(Occurrence(slot.entry, latest, slot.rule.zone, late=True))
                    self._state.put(slot.entry.id, EntryState(latest, latest, slot.fingerprint))
                else:
                    # The one to report: the latest missed within a day (a rule every minute after a
                    # week down is one line, not ten thousand).
                    last = slot.rule.latest(max(record.cursor, now - 86400.0), now) or occ.at
                    turn.missed.append(Occurrence(slot.entry, last, slot.rule.zone))
                    self._state.put(slot.entry.id, EntryState(now, record.admitted, slot.fingerprint))
            elif now >= occ.at - lead(occ):
                turn.admit.append(occ)
                self._state.put(slot.entry.id, EntryState(occ.at, occ.at, slot.fingerprint))
            elif now >= occ.at - prepare(occ) and occ.at not in slot.prepared:
                slot.prepared.add(occ.at)
                turn.prepare.append(occ)
        self._state.save()
        return turn

    def wake(self, now: float, lead: Horizon, prepare: Horizon) -> float | None:
        """The next time :meth:`step` has something to do (Unix seconds), or None."""
        times = []
        for slot in self._mine():
            occ = slot.pending(self._cursor(slot).cursor)
            if occ is None:
                continue
            times.append(occ.at - lead(occ))
            if occ.at not in slot.prepared:
                times.append(occ.at - prepare(occ))
        return min(times, default=None)

    def next(self) -> Occurrence | None:
        """The earliest occurrence still to come on this device."""
        found = [occ for slot in self._mine() if (occ := slot.pending(self._cursor(slot).cursor)) is not None]
        return min(found, key=lambda occ: occ.at, default=None)

    def upcoming(self, now: float, count: int, everywhere: bool = False) -> list[Occurrence]:
        """The next ``count`` occurrences after ``now`` in time order (``everywhere``: of every entry,
        whoever it is for; else this device's)."""
        slots = self._slots if everywhere else self._mine()
        heads: list[tuple[float, int, Rule, ScheduleEntry]] = []
        for i, slot in enumerate(slots):
            at = slot.rule.after(now)
            if at is not None:
                heads.append((at, i, slot.rule, slot.entry))
        heapq.heapify(heads)
        out: list[Occurrence] = []
        while heads and len(out) < count:
            at, i, rule, entry = heapq.heappop(heads)
            out.append(Occurrence(entry, at, rule.zone))
            following = rule.after(at)
            if following is not None:
                heapq.heappush(heads, (following, i, rule, entry))
        return out


__all__ = ["Here", "Horizon", "Occurrence", "Planner", "Turn", "fingerprint"]
