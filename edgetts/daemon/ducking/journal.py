"""What a mixer's worker lowered, on disk, so a daemon killed while music was down puts it back.

One small JSON file per mixer in the state folder (queue/state_dir), `duck-<mixer>.json`:

    {"kind": "mpd", "address": "127.0.0.1:6600", "level_db": -15.0,
     "targets": {"volume": {"before": 80, "lowered": 45}}}

written atomically (temporary file, fsync, rename) before anything is lowered, rewritten when
a stream is added, and removed once everything is back.  At the next start a worker reads it
and puts back each target that is still where a fade of ours may have left it (between
`lowered` and `before`); what is elsewhere was changed by someone since, and is left alone.
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgetts.daemon.ducking.mixer import Level

_LOGGER = logging.getLogger(__name__)

PREFIX = "duck-"
_MAX_BYTES = 1 << 20
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Record:
    """What one mixer's worker lowered."""

    kind: str
    address: str
    level_db: float
    targets: dict[str, tuple[Level, Level]]
    """key -> (level before, level lowered by level_db)."""


def file_name(kind: str, address: str) -> str:
    """`duck-mpd-127.0.0.1-6600.json`: one file per mixer, so two never share one."""
    name = kind if not address else f"{kind}-{address}"
    return f"{PREFIX}{_UNSAFE.sub('-', name).strip('-')}.json"


def write(path: Path, record: Record) -> None:
    """Replace ``path`` with ``record`` atomically; OSError when the folder cannot be written."""
    body = {
        "kind": record.kind,
        "address": record.address,
        "level_db": record.level_db,
        "targets": {k: {"before": b, "lowered": low} for k, (b, low) in record.targets.items()},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, json.dumps(body, sort_keys=True).encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def read(path: Path) -> Record | None:
    """The record in ``path``; None when there is none or it is not one (said in the log)."""
    try:
        with path.open("rb") as f:
            data: Any = json.loads(f.read(_MAX_BYTES))
        targets = {str(k): (_level(v["before"]), _level(v["lowered"])) for k, v in dict(data["targets"]).items()}
        return Record(str(data["kind"]), str(data["address"]), float(data["level_db"]), targets)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        _LOGGER.error("duck: %s is not a record of lowered levels (%s): ignored", path, exc)
        return None


def remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def found(folder: Path) -> list[Path]:
    """Every record in ``folder`` (none when it cannot be read)."""
    try:
        return sorted(p for p in folder.glob(f"{PREFIX}*.json") if p.is_file())
    except OSError:
        return []


def _level(value: Any) -> Level:
    if isinstance(value, list) and value and all(_number(v) for v in value):
        return [float(v) for v in value]
    if _number(value):
        return value  # (an int percentage stays an int)
    raise ValueError(f"not a level: {value!r}"[:100])


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


__all__ = ["PREFIX", "Record", "file_name", "found", "read", "remove", "write"]
