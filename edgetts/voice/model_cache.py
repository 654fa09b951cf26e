"""A per-machine cache of graph-optimised models.

onnxruntime spends most of a voice's load time optimising the graph (about
0.35 s of 0.5 s for the joe voice here, and seconds on a Pi).  The optimised
graph is saved once and loaded with optimisation off afterwards, so a
restarted daemon is ready sooner.  The fully optimised graph may use
processor-specific kernels, so the key covers the model file, the
onnxruntime version, the optimisation level and the CPU, and a cache entry
that fails to load is deleted and rebuilt.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import platform
import zlib
from collections.abc import Iterator
from pathlib import Path

_LOGGER = logging.getLogger(__name__)


def default_cache_dir() -> Path | None:
    """Where optimised models go: $EDGETTS_CACHE_DIR, systemd's CacheDirectory, or ~/.cache/edgetts.

    ``EDGETTS_CACHE_DIR=""`` (empty) turns the cache off.
    """
    explicit = os.environ.get("EDGETTS_CACHE_DIR")
    if explicit is not None:
        return Path(explicit) / "models" if explicit else None
    systemd = os.environ.get("CACHE_DIRECTORY")  # set by CacheDirectory= in the unit
    if systemd:
        return Path(systemd.split(":")[0]) / "models"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "edgetts" / "models"


def cpu_identity(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The lines of /proc/cpuinfo that say which instructions the CPU has: x86's ``model name`` and
    ``flags``; arm64's ``Features`` and ``CPU part`` (one line per core type on big.LITTLE)."""
    keep = ("model name", "flags", "features", "cpu part", "cpu implementer", "cpu architecture")
    try:
        lines = cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return platform.processor()
    seen: list[str] = []
    for line in lines:
        key = line.split(":", 1)[0].strip().lower()
        if key in keep and line not in seen:
            seen.append(line)
    return "\n".join(seen)


def checksum(text: str) -> str:
    """A short hex digest of ``text`` for cache file names (not cryptographic)."""
    # Two 32-bit checksums, not hashlib: importing hashlib loads OpenSSL (~3 MB of
    # RSS on every start) and a cache name needs no cryptographic strength.
    data = text.encode("utf-8")
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def family(model: Path) -> str:
    """The part of a cache name shared by every version of one model file."""
    return f"{model.name.removesuffix('.onnx')}-{checksum(str(model.resolve()))[:8]}-"


def cache_key(model: Path, ort_version: str, optimization: str, variant: str = "") -> str:
    """A name for the optimised form of ``model`` on this machine (``variant``: of its graph as
    changed by a transform, e.g. seeded noise; "" = the file's own graph)."""
    stat = model.stat()
    identity = "\n".join(
        [
            str(stat.st_size),
            str(stat.st_mtime_ns),
            ort_version,
            optimization,
            platform.machine(),
            cpu_identity(),
            *([variant] if variant else []),
        ]
    )
    return f"{family(model)}{checksum(identity)}.onnx"


def stale_entries(directory: Path, model: Path, current: str) -> list[Path]:
    """Earlier optimised forms of ``model`` (another onnxruntime, an edited file)."""
    return [p for p in directory.glob(f"{family(model)}*.onnx") if p.name != current]


@contextlib.contextmanager
def exclusive(directory: Path, name: str) -> Iterator[None]:
    """Hold the cache entry ``name`` of ``directory`` alone, across processes (an advisory lock file).

    Several daemons (a board's zones, a test's speakers) start on one cold cache together: each
    made the entry and replaced the others' files, whose names (from their stat) then changed, so
    one's clean-up of "stale" entries deleted what another was about to open.  Under the lock the
    first makes it and the others wait, then find it made.  Without a lock file (a read-only cache)
    the entry is made unlocked, as before."""
    try:
        locks = directory / ".locks"  # beside the entries, not among them (globs of a model's files)
        locks.mkdir(exist_ok=True)
        handle = open(locks / f"{name}.lock", "a+b")  # noqa: SIM115 (held across the yield)
    except OSError as err:
        _LOGGER.debug("no lock for %s in %s: %s", name, directory, err)
        yield
        return
    with handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def prepare_dir(directory: Path | None) -> Path | None:
    """``directory`` if it exists or can be made and is writable, else None."""
    if directory is None:
        return None
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        _LOGGER.debug("model cache %s unavailable: %s", directory, err)
        return None
    return directory if os.access(directory, os.W_OK | os.X_OK) else None
