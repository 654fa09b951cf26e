"""The `schedule` section: announcements on a timetable (issue 44).

Each entry is a time rule (a five-field ``cron`` expression, or ``at`` a time of day with optional
``days``) in a ``timezone``, the dates it is off (``skip``, ``from``, ``until``) and the payload an
announcement carries.  The rules are checked here with the library that evaluates them (cronsim),
so a rule that loads is a rule the daemon can run; what they mean over a DST change, and how an
occurrence is played exactly once, is docs/schedule.md and edgetts/daemon/schedule/.
"""

from __future__ import annotations

import re
import typing
import zoneinfo
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Literal

from cronsim import CronSim, CronSimError

from edgetts.config.errors import FieldError
from edgetts.vocabulary import CLIP_NAME_RE, NAME_RE, Priority

Weekday = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
WEEKDAYS: tuple[Weekday, ...] = typing.get_args(Weekday)

AT_RE = re.compile(r"^([01]?[0-9]|2[0-3]):([0-5][0-9])(?::([0-5][0-9]))?\Z")
TARGET_RE = re.compile(r"^(?:all|(device|group)/([A-Za-z0-9][A-Za-z0-9_.-]{0,63}))\Z")
_DURATION_RE = re.compile(r"^\s*(?:(\d+(?:\.\d+)?)\s*h)?\s*(?:(\d+(?:\.\d+)?)\s*m)?\s*(?:(\d+(?:\.\d+)?)\s*s)?\s*\Z")
MAX_CATCH_UP_S = 7 * 86400.0
"""A missed occurrence plays late at most a week after its time (a longer `catch_up` is a mistake)."""


@dataclass(frozen=True)
class ScheduleEntry:
    """One announcement on a timetable."""

    id: str
    """Names the entry: its occurrences' announcement ids are ``<id>@<UTC time>``; the state
    directory keeps the last one played under it."""

    cron: str | None = None
    """Five-field cron expression (minute hour day-of-month month day-of-week), in ``timezone``."""

    at: str | int | None = None
    """Time of day, "HH:MM" or "HH:MM:SS" (quoted: YAML reads an unquoted 21:45 as a number)."""

    days: tuple[Weekday, ...] = ()
    """With ``at``: the weekdays it plays on (mon ... sun); empty = every day."""

    timezone: str | None = None
    """IANA zone the rule is read in (e.g. Europe/Berlin); None = the board's."""

    skip: tuple[date, ...] = ()
    """Dates (YYYY-MM-DD, in ``timezone``) it does not play on: holidays."""

    starts: date | None = field(default=None, metadata={"key": "from"})
    """`from` in the YAML: the first date it plays on; None = from now on."""

    until: date | None = None
    """The last date it plays on; None = no end."""

    text: str | None = None
    """What to say (exactly one of text and clip), as in an announcement."""

    clip: str | None = None
    """A clip of the library to play instead of text."""

    priority: Priority | None = None
    """emergency | high | normal | low; None = queue.default_priority."""

    voice: str | None = None
    """A configured voice; None = the default voice."""

    chime: str | None = None
    """Clip played before it."""

    repeat: int = 1
    """Times it is played (at most queue.max_repeat)."""

    to: str | None = None
    """Who plays it: `device/ID`, `group/G` or `all`; None = this device."""

    def validate(self) -> None:
        if not NAME_RE.match(self.id):
            raise FieldError(("id",), f"{self.id[:80]!r} is not a valid id (letters, digits, -_. only)")
        self._check_rule()
        if self.timezone is not None:
            zone_of(self.timezone)
        if self.starts is not None and self.until is not None and self.until < self.starts:
            raise FieldError(("until",), f"{self.until} is before from ({self.starts})")
        if (self.text is None) == (self.clip is None):
            raise FieldError(("text",), "give exactly one of text and clip")
        if self.text is not None and not self.text.strip():
            raise FieldError(("text",), "must not be empty")
        for key in ("clip", "chime"):
            name = getattr(self, key)
            if name is not None and not CLIP_NAME_RE.match(name):
                raise FieldError((key,), f"{name[:80]!r} is not a clip name (letters, digits, - and _ only)")
        if self.voice is not None and not NAME_RE.match(self.voice):
            raise FieldError(("voice",), f"{self.voice[:80]!r} is not a voice name")
        if not 1 <= self.repeat <= 100:
            raise FieldError(("repeat",), "must be 1-100")
        if self.to is not None and not TARGET_RE.match(self.to):
            raise FieldError(("to",), f"{self.to[:80]!r} is not device/ID, group/G or all")

    def _check_rule(self) -> None:
        if (self.cron is None) == (self.at is None):
            raise FieldError(("cron",), "give exactly one of cron and at")
        if self.cron is not None:
            if self.days:
                raise FieldError(("days",), "goes with at; in a cron rule the weekdays are its fifth field")
            check_cron(self.cron)
        elif isinstance(self.at, int):
            raise FieldError(
                ("at",),
                f'YAML read an unquoted time as the number {self.at} (base 60): quote it, at: "HH:MM"',
            )
        elif self.at is not None and not AT_RE.match(self.at):
            raise FieldError(("at",), f'{self.at[:40]!r} is not a time of day "HH:MM" or "HH:MM:SS"')
        if len(set(self.days)) != len(self.days):
            raise FieldError(("days",), "names a day twice")

    def expression(self) -> tuple[str, int]:
        """The rule as (five-field cron expression, seconds past its minute): ``at`` becomes one."""
        if self.cron is not None:
            return self.cron, 0
        found = AT_RE.match(str(self.at))
        assert found is not None, "validated"
        hour, minute, second = found.groups()
        days = ",".join(self.days) if self.days else "*"
        return f"{int(minute)} {int(hour)} * * {days}", int(second or 0)

    def target(self) -> tuple[str, str | None]:
        """(`device`, `group` or `all`; the device's or group's name): this device is (`device`, None)."""
        if self.to is None:
            return "device", None
        if self.to == "all":
            return "all", None
        kind, _, name = self.to.partition("/")
        return kind, name


def check_cron(expr: str) -> None:
    """FieldError(("cron",)) unless ``expr`` is a five-field expression cronsim evaluates."""
    if len(expr.split()) != 5:
        raise FieldError(("cron",), f"{expr[:80]!r} has {len(expr.split())} fields, not five")
    try:
        CronSim(expr, datetime(2000, 1, 1))
    except CronSimError as exc:  # its messages name the field: "Bad day-of-month"
        raise FieldError(("cron",), f"{expr[:80]!r}: {exc}") from None


def zone_of(name: str) -> zoneinfo.ZoneInfo:
    """The IANA zone ``name``; FieldError(("timezone",)) when there is none of that name."""
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise FieldError(("timezone",), f"unknown timezone {name[:80]!r} (an IANA name, e.g. Europe/Berlin)") from None


def duration_s(value: bool | float | str) -> float:
    """Seconds of a duration: a number of seconds, "90s", "15m", "1h30m"; false (or off) = 0.

    ValueError says what was wrong."""
    if isinstance(value, bool):
        if value:
            raise ValueError("give a duration (e.g. 15m) or false")
        return 0.0
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        found = _DURATION_RE.match(value)
        if found is None or not any(found.groups()):
            raise ValueError(f"{value[:40]!r} is not a duration (seconds, or e.g. 90s, 15m, 1h30m)")
        hours, minutes, secs = (float(g) if g else 0.0 for g in found.groups())
        seconds = hours * 3600 + minutes * 60 + secs
    if not 0.0 <= seconds <= MAX_CATCH_UP_S:
        raise ValueError(f"must be 0 to {MAX_CATCH_UP_S / 86400:.0f} days")
    return seconds


@dataclass(frozen=True)
class ScheduleSettings:
    """Announcements on a timetable (docs/schedule.md)."""

    entries: tuple[ScheduleEntry, ...] = ()
    """The timetable; ids unique."""

    catch_up: bool | float | str = False
    """How long after its time an occurrence missed while the daemon was down still plays (late,
    once): seconds or "15m", "2h"; false = never (a missed one is said `expired`)."""

    prepare_s: float | None = None
    """Seconds before its time an occurrence's speech is rendered into the phrase cache; None =
    from the slowest voice's measured speed and the text's length (docs/schedule.md)."""

    def validate(self) -> None:
        seen: dict[str, int] = {}
        for i, entry in enumerate(self.entries):
            if entry.id in seen:
                raise FieldError(("entries", str(i), "id"), f"duplicate id {entry.id!r} (also entry {seen[entry.id]})")
            seen[entry.id] = i
        try:
            duration_s(self.catch_up)
        except ValueError as exc:
            raise FieldError(("catch_up",), str(exc)) from None
        if self.prepare_s is not None and not 1.0 <= self.prepare_s <= 3600.0:
            raise FieldError(("prepare_s",), "must be 1-3600 seconds (null: from the voices' speed)")

    @property
    def catch_up_s(self) -> float:
        """``catch_up`` in seconds (0 = off)."""
        return duration_s(self.catch_up)


__all__ = [
    "WEEKDAYS",
    "ScheduleEntry",
    "ScheduleSettings",
    "Weekday",
    "check_cron",
    "duration_s",
    "zone_of",
]
