"""Reading the catalog and a voice's files from a base URL, checked against the catalog as they stream.

The standard library's urllib: ``https://``, ``http://`` and ``file://`` (a mirror on a USB stick).
Every socket operation has a timeout (``timeout_s``), so a stalled server ends the download with an
error instead of hanging; a slow one that keeps sending is not cut off (a 60 MB voice on a slow link
takes minutes).  A file is written as it arrives and its size and MD5 compared with the catalog's:
more bytes than the catalog says stop the download at once, fewer are a truncated download.
"""

from __future__ import annotations

import errno
import hashlib
import http.client
import logging
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import IO

from edgetts.voice.install.index import Catalog, CatalogFile, InstallError, parse_catalog

_LOGGER = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 30.0
"""Seconds any one connect or read may take."""

CATALOG_MAX_BYTES = 32 * 1024 * 1024
"""Largest ``voices.json`` read (Piper's is under 1 MB): a wrong URL serving a stream is not read forever."""

_BLOCK = 256 * 1024

Progress = Callable[[str, int, int], None]
"""Called as a file arrives: (its name, bytes so far, bytes in all)."""


def file_url(base_url: str, key: str) -> str:
    """The address of the catalog path ``key`` under ``base_url``."""
    return base_url.rstrip("/") + "/" + urllib.parse.quote(key, safe="/")


def _open(url: str, timeout_s: float) -> IO[bytes]:
    try:
        response: IO[bytes] = urllib.request.urlopen(url, timeout=timeout_s)
    except urllib.error.HTTPError as exc:
        raise InstallError(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        raise InstallError(f"cannot read {url}: {_reason(exc.reason)}") from None
    except ValueError as exc:  # urllib: "unknown url type"
        raise InstallError(f"not a URL: {url} ({exc})") from None
    except (OSError, http.client.HTTPException) as exc:
        raise InstallError(f"cannot read {url}: {_reason(exc)}") from None
    return response


def _reason(exc: object) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def read_catalog(base_url: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> Catalog:
    """``<base_url>/voices.json``, parsed; InstallError if it cannot be read or is not a JSON mapping."""
    url = file_url(base_url, "voices.json")
    with _open(url, timeout_s) as response:
        try:
            data = response.read(CATALOG_MAX_BYTES + 1)
        except (OSError, http.client.HTTPException) as exc:
            raise InstallError(f"reading {url} was interrupted: {_reason(exc)}") from None
    if len(data) > CATALOG_MAX_BYTES:
        raise InstallError(f"{url} is larger than {CATALOG_MAX_BYTES // 1_000_000} MB: not a voice catalog")
    return parse_catalog(data, url)


def download(
    url: str, dest: Path, expected: CatalogFile | None, timeout_s: float, progress: Progress | None = None
) -> int:
    """Write ``url`` to the new file ``dest``, checking size and MD5 against ``expected`` (None: no
    catalog entry to check against); returns its size.  InstallError on any failure (``dest`` may
    then hold part of the file: the caller's staging folder is removed whole)."""
    md5 = hashlib.md5(usedforsecurity=False)  # the catalog's integrity check, not a security boundary
    total = expected.size_bytes if expected is not None else 0
    done = 0
    with _open(url, timeout_s) as response, _create(dest) as out:
        while True:
            try:
                block = response.read(_BLOCK)
            except (OSError, http.client.HTTPException) as exc:
                raise InstallError(f"download of {url} interrupted after {done} bytes: {_reason(exc)}") from None
            if not block:
                break
            done += len(block)
            if expected is not None and done > total:
                raise InstallError(f"{url} is larger than the catalog's {total} bytes: not the catalog's file")
            md5.update(block)
            _write(out, block, dest)
            if progress is not None:
                progress(dest.name, done, total)
        _sync(out, dest)
    if expected is not None:
        if done < total:
            raise InstallError(f"download of {url} is truncated: {done} of {total} bytes")
        if md5.hexdigest() != expected.md5_digest:
            raise InstallError(
                f"{url} has MD5 {md5.hexdigest()}, the catalog says {expected.md5_digest}: "
                "damaged, or not the catalog's file"
            )
    return done


def copy_checked(
    source: IO[bytes], dest: Path, expected: CatalogFile | None, what: str, size: int, progress: Progress | None = None
) -> None:
    """Copy an open file (a local file or an archive member of ``size`` bytes) into the new file
    ``dest``, checking it against ``expected`` when the catalog is known; InstallError naming ``what``."""
    if expected is not None and size != expected.size_bytes:
        raise InstallError(f"{what} has {size} bytes, the catalog says {expected.size_bytes}")
    md5 = hashlib.md5(usedforsecurity=False)
    done = 0
    with _create(dest) as out:
        while block := source.read(_BLOCK):
            done += len(block)
            if done > size:
                raise InstallError(f"{what} is longer than its {size} bytes")
            md5.update(block)
            _write(out, block, dest)
            if progress is not None:
                progress(dest.name, done, size)
        _sync(out, dest)
    if done != size:
        raise InstallError(f"{what} is truncated: {done} of {size} bytes")
    if expected is not None and md5.hexdigest() != expected.md5_digest:
        raise InstallError(f"{what} has MD5 {md5.hexdigest()}, the catalog says {expected.md5_digest}")


def _create(dest: Path) -> IO[bytes]:
    # Unbuffered: a full disk shows at the write that hits it, never again when the file is closed.
    try:
        return dest.open("xb", buffering=0)
    except OSError as exc:
        raise _write_error(exc, dest) from None


def _write(out: IO[bytes], block: bytes, dest: Path) -> None:
    view = memoryview(block)
    try:
        while view:  # a raw write may take part of the block
            written = out.write(view)
            if not written:
                raise OSError(errno.EIO, "the file system took no bytes")
            view = view[written:]
    except OSError as exc:
        raise _write_error(exc, dest) from None


def _sync(out: IO[bytes], dest: Path) -> None:
    """On the disk before the folder is renamed into place: a power cut never leaves a voice of empty files."""
    try:
        os.fsync(out.fileno())
    except OSError as exc:
        raise _write_error(exc, dest) from None


def _write_error(exc: OSError, dest: Path) -> InstallError:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return InstallError(f"no space left on the device of {dest.parent.parent} while writing {dest.name}")
    return InstallError(f"cannot write {dest}: {exc.strerror or exc}")
