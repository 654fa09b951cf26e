"""When a timetable entry's occurrences fall: its cron rule in its zone, less the dates it is off.

The cron arithmetic is cronsim's (the library healthchecks.io evaluates its users' cron
expressions with): it reads a rule on the zone's wall clock and, for a rule at a fixed time,
follows Debian's cron over a DST change, which is what an announcement needs:

* a time that does not exist that day (02:30 when the clocks go from 02:00 to 03:00) is taken at
  the first existing minute after it (03:00);
* a time that happens twice (02:30 when they go back from 03:00 to 02:00) is taken once, the first
  time;
* a rule that runs every so many minutes (``*/15 * * * *``) follows real time: every 15 minutes.

``at: "HH:MM:SS"`` is the cron rule of its minute plus its seconds.  ``skip``, ``from`` and
``until`` are dates on the zone's wall clock.
"""

from __future__ import annotations

import logging
import os
import zoneinfo
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo
from pathlib import Path

from cronsim import CronSim

from edgetts.config.schedule import ScheduleEntry

_LOGGER = logging.getLogger(__name__)

MAX_SKIPS = 4000
"""Occurrences passed over (skipped dates) in one search before it gives up: more than ten years of
a daily rule's holidays."""


def board_zone() -> tzinfo:
    """The board's own zone as an IANA zone (DST-aware): $TZ, /etc/timezone, /etc/localtime; else UTC."""
    names = [os.environ.get("TZ", "").lstrip(":")]
    try:
        names.append(Path("/etc/timezone").read_text(encoding="utf-8").strip())
    except OSError:
        pass
    target = os.path.realpath("/etc/localtime")
    if "zoneinfo/" in target:
        names.append(target.split("zoneinfo/", 1)[1])
    for name in names:
        if not name:
            continue
        try:
            return zoneinfo.ZoneInfo(name)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
            continue
    try:
        with open("/etc/localtime", "rb") as f:
            return zoneinfo.ZoneInfo.from_file(f, key="localtime")
    except (OSError, ValueError):
        _LOGGER.warning("the board's timezone is unknown: schedule entries without a timezone are in UTC")
        return zoneinfo.ZoneInfo("UTC")


def zone_name(zone: tzinfo) -> str:
    """How a zone is named to an operator: its IANA key, else its name now."""
    return getattr(zone, "key", None) or str(datetime.now(zone).tzname())


@dataclass(frozen=True)
class Rule:
    """One entry's time rule."""

    expr: str
    """Five-field cron expression on the zone's wall clock."""
    second: int
    """Seconds past the expression's minute (``at: "HH:MM:SS"``)."""
    zone: tzinfo
    skip: frozenset[date] = frozenset()
    starts: date | None = None
    until: date | None = None

    @classmethod
    def of(cls, entry: ScheduleEntry, default_zone: tzinfo) -> Rule:
        expr, second = entry.expression()
        zone = zoneinfo.ZoneInfo(entry.timezone) if entry.timezone is not None else default_zone
        return cls(expr, second, zone, frozenset(entry.skip), entry.starts, entry.until)

    def after(self, t: float) -> float | None:
        """The first occurrence strictly after Unix time ``t``, in Unix seconds; None when none is left."""
        if self.starts is not None:
            t = max(t, self._midnight(self.starts) - 1.0)
        for _ in range(MAX_SKIPS):
            found = self._cron_after(t)
            if found is None:
                return None
            day = datetime.fromtimestamp(found, self.zone).date()
            if self.until is not None and day > self.until:
                return None
            if day not in self.skip:
                return found
            t = self._midnight(day + timedelta(days=1)) - 1.0  # (a rule every minute: not 1440 steps a day)
        _LOGGER.warning("rule %r: no occurrence outside its skipped dates", self.expr)
        return None

    def latest(self, lo: float, hi: float, limit: int = 100_000) -> float | None:
        """The last occurrence in (``lo``, ``hi``], or None."""
        last = None
        at = self.after(lo)
        for _ in range(limit):
            if at is None or at > hi:
                break
            last = at
            at = self.after(at)
        return last

    def _cron_after(self, t: float) -> float | None:
        # cronsim yields minutes after its start's minute; on a DST day's repeated hour a start in
        # the second pass may yield the first pass again (an earlier instant): passed over.
        it = CronSim(self.expr, datetime.fromtimestamp(t - self.second, self.zone))
        for _ in range(62):  # (at most the repeated hour's minutes are passed over so)
            try:
                at = next(it).timestamp() + self.second
            except StopIteration:  # (cronsim gives up after 50 years without a match)
                return None
            if at > t:
                return at
        return None

    def _midnight(self, day: date) -> float:
        return datetime.combine(day, time(0), tzinfo=self.zone).timestamp()


__all__ = ["Rule", "board_zone", "zone_name"]
