"""What the timetable has done, kept in the state directory so a restart neither repeats nor forgets.

Per entry id: ``cursor``, the time up to which its occurrences are dealt with (played, or missed
and said so), ``admitted``, the last occurrence handed to the queue (a restart looks whether it
ended; one that did not is looked at again), and ``rule``, a fingerprint of the time rule they
were kept for (a rule edited while the daemon was down has no past to catch up).  One small JSON
file, ``schedule.json``, written atomically (temporary file, fsync, rename) when it changed: at
most once per occurrence.  Without a state directory it is kept in RAM (gone with the process).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

_LOGGER = logging.getLogger(__name__)

FILE_NAME = "schedule.json"
VERSION = 1


@dataclass(frozen=True)
class EntryState:
    """One entry's record."""

    cursor: float
    """Unix seconds: its occurrences at or before this are dealt with."""
    admitted: float | None = None
    """Unix seconds of the last occurrence handed to the queue; None = none yet."""
    rule: str = ""
    """Fingerprint of the time rule (edgetts.daemon.schedule.planner.fingerprint)."""


class ScheduleState:
    """The records of every entry, on disk when ``path`` is given (``problem`` says why not)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.problem: str | None = None
        self._entries: dict[str, EntryState] = {}
        self._dirty = False
        if path is not None:
            self._load(path)

    def _load(self, path: Path) -> None:
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return
        except OSError as exc:
            self.problem = f"schedule state {path} unreadable: {exc.strerror or exc}"
            return
        try:
            obj = json.loads(raw)
            entries = obj["entries"] if obj.get("version") == VERSION else {}
            for ident, rec in entries.items():
                admitted = rec.get("admitted")
                self._entries[str(ident)] = EntryState(
                    float(rec["cursor"]), None if admitted is None else float(admitted), str(rec.get("rule", ""))
                )
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            # Started afresh: nothing is caught up, nothing is played twice (the dedup memory
            # still knows what ended within queue.dedup_window_s).
            _LOGGER.warning("schedule state %s is corrupt (%s): started afresh", path, exc)
            self._entries.clear()

    def get(self, ident: str) -> EntryState | None:
        return self._entries.get(ident)

    def put(self, ident: str, record: EntryState) -> None:
        if self._entries.get(ident) != record:
            self._entries[ident] = record
            self._dirty = True

    def retain(self, idents: set[str]) -> None:
        """Forget the entries no longer configured (one added again later starts afresh)."""
        for ident in [i for i in self._entries if i not in idents]:
            del self._entries[ident]
            self._dirty = True

    def save(self) -> None:
        """Write the file if anything changed (atomic: a crash leaves the old file or the new one)."""
        if not self._dirty:
            return
        self._dirty = False
        if self.path is None:
            return
        blob = json.dumps(
            {"version": VERSION, "entries": {k: asdict(v) for k, v in sorted(self._entries.items())}}, indent=1
        ).encode()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".schedule-", dir=self.path.parent)
        except OSError as exc:
            self._failed(exc)
            return
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            self._failed(exc)
        else:
            self.problem = None

    def _failed(self, exc: OSError) -> None:
        reason = f"schedule state not kept in {self.path}: {exc.strerror or exc}"
        if reason != self.problem:
            _LOGGER.warning("%s", reason)
        self.problem = reason


__all__ = ["FILE_NAME", "EntryState", "ScheduleState"]
