"""The intake journal: a message that killed the daemon twice is not read a third time.

The first line of defence is an intake that cannot raise (edgetts.daemon.admission.intake,
admission).  This is the second, for whatever still kills the process while
a message is being read (a bug, a C extension, the OOM killer): before the
intake of a message starts, a file named after a digest of its topic and
payload is written; it is removed when the intake ends.  A message is
acknowledged only once its announcement has ended, so after a crash the broker
delivers it again; finding its file already there means the daemon died
reading it.  After :data:`POISON_AFTER` such deaths the message is rejected
as ``poison`` (and acknowledged) instead of being read again: no crash loop.

Only the intake is journalled: an announcement killed while it *plays* is
replayed after the restart as before.  The files are not fsynced: they must
survive the process, not the machine, and a page-cache write spares the SD card.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path

_LOGGER = logging.getLogger(__name__)

POISON_AFTER = 2
"""Deaths during one message's intake after which it is rejected as poison."""

MAX_ENTRIES = 32
"""Journal files kept at most (the oldest go first); normally there is none or one."""


@dataclass(frozen=True)
class JournalEntry:
    """One message whose intake is under way: its journal file, and how often it killed the daemon."""

    key: str
    """Hex digest of topic and payload: the journal file's name."""

    deaths: int
    """Times the daemon died before while reading this same message."""

    @property
    def poison(self) -> bool:
        return self.deaths >= POISON_AFTER


def message_key(topic: str, payload: bytes) -> str:
    """The journal key of a message: sha256 of the topic, a NUL, and the payload."""
    digest = hashlib.sha256(topic.encode("utf-8", "surrogateescape"))
    digest.update(b"\0")
    digest.update(payload)
    return digest.hexdigest()[:32]


class IntakeJournal:
    """A folder of small files, one per message whose intake is under way (or was when the daemon died).

    ``folder`` None: no journal (every message is simply read).  A folder that
    cannot be used is logged once and the daemon reads messages without it.
    """

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self.problem: str | None = None
        if folder is None:
            return
        try:
            folder.mkdir(parents=True, exist_ok=True)
            left = sorted(folder.glob("*.intake"))
        except OSError as exc:
            self._disable(f"cannot use {folder}: {exc.strerror or exc}")
            return
        if left:
            _LOGGER.warning(
                "intake journal %s: %d message(s) were being read when the daemon stopped", folder, len(left)
            )

    def _disable(self, reason: str) -> None:
        self.problem = f"intake journal off: {reason}"
        _LOGGER.warning("%s (a message that crashes the daemon may crash it again)", self.problem)
        self.folder = None

    def _path(self, key: str) -> Path:
        assert self.folder is not None
        return self.folder / f"{key}.intake"

    def begin(self, topic: str, payload: bytes) -> JournalEntry:
        """Record that the intake of this message starts; how often it was under way when the daemon died."""
        key = message_key(topic, payload)
        if self.folder is None:
            return JournalEntry(key, 0)
        path = self._path(key)
        try:
            deaths = int(path.read_text(encoding="ascii").strip() or 0)
        except FileNotFoundError:
            deaths = 0
        except (OSError, ValueError):  # torn or foreign: count it as one death, never as none
            deaths = 1
        if deaths >= POISON_AFTER:
            return JournalEntry(key, deaths)
        try:
            self._make_room()
            path.write_text(f"{deaths + 1}\n", encoding="ascii")
        except OSError as exc:
            self._disable(f"cannot write {path}: {exc.strerror or exc}")
        return JournalEntry(key, deaths)

    def finish(self, intake: JournalEntry) -> None:
        """The intake ended (queued, rejected or dropped): forget it."""
        if self.folder is None:
            return
        try:
            self._path(intake.key).unlink(missing_ok=True)
        except OSError as exc:
            self._disable(f"cannot remove {self._path(intake.key)}: {exc.strerror or exc}")

    def entries(self) -> dict[str, int]:
        """Journal key -> deaths recorded so far (for tests and for operators reading the folder)."""
        if self.folder is None:
            return {}
        out: dict[str, int] = {}
        for path in self.folder.glob("*.intake"):
            try:
                out[path.stem] = int(path.read_text(encoding="ascii").strip() or 0)
            except (OSError, ValueError):
                out[path.stem] = 1
        return out

    def _make_room(self) -> None:
        """Bounded: files left by messages that never came back go, oldest first."""
        assert self.folder is not None
        paths = list(self.folder.glob("*.intake"))
        if len(paths) < MAX_ENTRIES:
            return
        paths.sort(key=lambda p: p.stat().st_mtime if p.exists() else 0.0)
        for path in paths[: len(paths) - MAX_ENTRIES + 1]:
            path.unlink(missing_ok=True)


def journal_folder(configured: str | None, environ: dict[str, str] | None = None) -> Path | None:
    """mqtt/journal_dir, else `$CACHE_DIRECTORY/intake` under systemd, else None (no journal)."""
    if configured is not None:
        return Path(configured)
    env = os.environ if environ is None else environ
    systemd = env.get("CACHE_DIRECTORY")
    return Path(systemd.split(":")[0]) / "intake" if systemd else None


__all__ = ["MAX_ENTRIES", "POISON_AFTER", "JournalEntry", "IntakeJournal", "journal_folder", "message_key"]
