"""The dedup memory: ids of announcements that ended, kept for the dedup window, optionally on disk.

Why on disk (issue 13): an acknowledgement sent while the broker is away is
lost, and the broker delivers the message again, possibly to a daemon that
restarted in between.  With the ids of what already played remembered across
the restart, such a redelivery is dropped (and acknowledged) instead of read
aloud a second time.

The file is an append-only log of JSON lines ``["<id>", <unix seconds>]``: one
``write()`` per announcement (no rewrite of the whole file on the loop), so a
crash can at worst tear the last line, which loading skips.  When the log holds
more than twice the live ids it is rewritten atomically (temporary file,
fsync, rename).  The appends are not fsynced: a process crash loses nothing
(the page cache survives it); a power cut may forget the last seconds, and then
a message whose acknowledgement was also lost could play once more.

Bounded: ids older than the window are dropped, and at most ``max_entries``
are kept (the oldest go first); a line longer than 1 KiB is never written
(ids are at most 128 characters).
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from pathlib import Path

from edgetts.config import QueueSettings
from edgetts.daemon.health import Health

_LOGGER = logging.getLogger(__name__)

FILE_NAME = "dedup.jsonl"
"""The memory's file inside the state directory (queue/state_dir)."""

MAX_ENTRIES = 10000
"""Ids remembered at most (the file then stays under ~1.5 MB)."""

_MAX_LINE = 1024
_MAX_READ = 8 * 1024 * 1024  # a foreign file this big is read from its tail only


class DedupMemory:
    """Id -> Unix seconds it ended, for ``window_s`` seconds; on disk when ``path`` is given."""

    def __init__(
        self, window_s: float, path: Path | None = None, *, now: float, max_entries: int = MAX_ENTRIES
    ) -> None:
        self.window_s = window_s
        self.path = path
        self.max_entries = max_entries
        self.problem: str | None = None
        """Why the memory is not on disk as configured (None when it is, or when no path is set)."""
        self._done: dict[str, float] = {}
        self._lines = 0  # lines in the file (live or not)
        self._fd: int | None = None
        if path is not None:
            self._open(path, now)

    # ------------------------------------------------------------ queries
    def __contains__(self, ident: object) -> bool:
        return ident in self._done

    def __len__(self) -> int:
        return len(self._done)

    def ids(self) -> list[str]:
        return list(self._done)

    # ------------------------------------------------------------ changes
    def remember(self, ident: str, now: float) -> None:
        """``ident`` ended at ``now``: a later delivery with it is a duplicate (within the window)."""
        if self.window_s <= 0:
            return
        self._done.pop(ident, None)  # re-inserted last: the dict stays in order of time
        self._done[ident] = now
        while len(self._done) > self.max_entries:
            del self._done[next(iter(self._done))]
        self._append(ident, now)

    def forget_old(self, now: float) -> None:
        """Drop the ids older than the window (and rewrite the file when most of it is dead)."""
        horizon = now - self.window_s
        if self._done and next(iter(self._done.values())) < horizon:
            self._done = {k: t for k, t in self._done.items() if t >= horizon}
        if self._fd is not None and self._lines > 2 * len(self._done) + 256:
            self._rewrite()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    # ------------------------------------------------------------- file
    def _open(self, path: Path, now: float) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._load(path, now)
            self._rewrite()  # starts every run with a compact file (and proves it is writable)
        except OSError as exc:
            self._fail(f"dedup memory {path}: {exc.strerror or exc}; ids are remembered in RAM only")

    def _load(self, path: Path, now: float) -> None:
        try:
            with open(path, "rb") as f:
                size = f.seek(0, os.SEEK_END)
                f.seek(max(0, size - _MAX_READ))
                data = f.read()
        except FileNotFoundError:
            return
        horizon = now - self.window_s
        loaded = skipped = 0
        for line in data.splitlines():
            entry = _parse_line(line)
            if entry is None:
                skipped += 1  # a line torn by a crash, or not ours
                continue
            ident, ts = entry
            if ts >= horizon:
                self._done.pop(ident, None)
                self._done[ident] = ts
                loaded += 1
        if len(self._done) > self.max_entries:
            self._done = dict(list(self._done.items())[-self.max_entries :])
        _LOGGER.info(
            "dedup memory %s: %d ids within the window%s",
            path,
            len(self._done),
            f" ({skipped} unreadable lines skipped)" if skipped else "",
        )

    def _append(self, ident: str, ts: float) -> None:
        if self._fd is None:
            return
        line = _format_line(ident, ts)
        if line is None:
            return
        try:
            os.write(self._fd, line)
            self._lines += 1
        except OSError as exc:
            self._fail(
                f"dedup memory {self.path}: cannot append: {exc.strerror or exc}; ids are remembered in RAM only"
            )

    def _rewrite(self) -> None:
        assert self.path is not None
        tmp = self.path.with_name(self.path.name + ".tmp")
        lines = [line for ident, ts in self._done.items() if (line := _format_line(ident, ts))]
        try:
            with open(tmp, "wb") as f:
                f.write(b"".join(lines))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
            self.close()
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
            self._lines = len(lines)
        except OSError as exc:
            self._fail(f"dedup memory {self.path}: cannot write: {exc.strerror or exc}; ids are remembered in RAM only")

    def _fail(self, reason: str) -> None:
        if self.problem is None:
            _LOGGER.error("%s", reason)
        self.problem = reason
        self.close()


def open_dedup_memory(queue: QueueSettings, health: Health, now: float | None = None) -> DedupMemory:
    """The memory queue/state_dir asks for (start-up only: a changed state_dir needs a restart).

    A folder that cannot be used leaves the ids in RAM and says so in `degraded: state`.
    """
    folder = queue.resolved_state_dir()
    memory = DedupMemory(
        queue.dedup_window_s, None if folder is None else folder / FILE_NAME, now=time.time() if now is None else now
    )
    if memory.problem is not None:
        health.set("state", memory.problem)
    return memory


def _format_line(ident: str, ts: float) -> bytes | None:
    # ensure_ascii: any str (a lone surrogate too) becomes plain ASCII JSON, one line.
    line = (json.dumps([ident, round(ts, 3)], ensure_ascii=True) + "\n").encode("ascii")
    return line if len(line) <= _MAX_LINE else None


def _parse_line(line: bytes) -> tuple[str, float] | None:
    if len(line) > _MAX_LINE:
        return None
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    if (
        isinstance(obj, list)
        and len(obj) == 2
        and isinstance(obj[0], str)
        and isinstance(obj[1], (int, float))
        and not isinstance(obj[1], bool)
        and math.isfinite(obj[1])
    ):
        return obj[0], float(obj[1])
    return None


__all__ = ["FILE_NAME", "MAX_ENTRIES", "DedupMemory", "open_dedup_memory"]
