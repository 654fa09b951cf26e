"""The `sync` section: announcements that play together on many speakers (issue 19).

An announcement with `play_at` plays at that Unix time whatever this section
says; here a device is told to synchronize every announcement of some of its
groups as well, and what to do when its audio cannot be ready in time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from edgetts.config.errors import FieldError
from edgetts.vocabulary import NAME_RE


@dataclass(frozen=True)
class SyncSettings:
    """Synchronized zone announcements."""

    groups: tuple[str, ...] = ()
    """Groups (of device.groups) whose every announcement without `play_at` plays at its receipt
    plus ``lead_s``; each member receives it within milliseconds of the others on one broker."""

    lead_s: float = 1.5
    """Seconds from receipt to `play_at` for the announcements of ``groups``: long enough for the
    slowest member to synthesize the first sentence."""

    late: Literal["join", "fallback"] = "join"
    """When the speech is not ready at `play_at`: `join` plays it from where the others are (what
    is past is skipped); `fallback` plays the announcement's fallback clip instead, if it has one."""

    def validate(self) -> None:
        for i, group in enumerate(self.groups):
            if not NAME_RE.match(group):
                raise FieldError(("groups", str(i)), f"{group!r} is not a valid group name")
        if not 0.0 < self.lead_s <= 60.0:
            raise FieldError(("lead_s",), "must be > 0 and at most 60 seconds")


__all__ = ["SyncSettings"]
