"""Voices from a file carried to the board: a ``.onnx`` with its ``.onnx.json``, or an archive.

An archive (``.tar``, ``.tar.gz``, ``.tar.xz``, ``.zip``) may hold voices at any depth, e.g. a copy
of part of Piper's repository (``de/de_DE/thorsten/medium/de_DE-thorsten-medium.onnx`` beside its
``.onnx.json`` and ``MODEL_CARD``); with a ``voices.json`` in it, each voice it lists is checked
against its sizes and digests as for a download.  Nothing is extracted by the names inside: only
regular files are read, each copied to a name this module chooses in the install's own folder, so
no member can land outside it.  An archive with an absolute path or ``..`` in a member name is
refused whole (it was made to escape, or is not what it claims).
"""

from __future__ import annotations

import difflib
import lzma
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from edgetts.voice.install.index import Catalog, CatalogFile, InstallError, check_name, parse_catalog

READ_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError, tarfile.TarError, zipfile.BadZipFile)
"""What reading a damaged file or archive raises."""


@dataclass(frozen=True)
class Member:
    """One file to copy: how to open it, its size, and what to call it in messages."""

    open: Callable[[], IO[bytes]]
    size: int
    what: str


@dataclass(frozen=True)
class LocalVoice:
    """A voice found in an offline file."""

    name: str
    model: Member
    config: Member | None
    """None: the model came without its ``.onnx.json`` (refused at install)."""

    card: Member | None
    expected: dict[str, CatalogFile | None]
    """``model``/``config``/``card`` -> what the archive's ``voices.json`` says of it (None: unknown)."""


def _local_member(path: Path) -> Member:
    return Member(lambda: path.open("rb"), path.stat().st_size, str(path))


def _single(path: Path) -> dict[str, LocalVoice]:
    name = path.name.removesuffix(".onnx")
    config = path.with_name(path.name + ".json")
    card = path.with_name("MODEL_CARD")
    try:
        voice = LocalVoice(
            check_name(name),
            _local_member(path),
            _local_member(config) if config.is_file() else None,
            _local_member(card) if card.is_file() else None,
            {},
        )
    except OSError as exc:
        raise InstallError(f"cannot read {path}: {exc.strerror or exc}") from None
    return {name: voice}


def _safe(name: str, archive: Path) -> PurePosixPath:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or "\\" in name:
        raise InstallError(f"{archive} is refused: its member {name[:120]!r} would land outside the voices folder")
    return path


def _gather(files: dict[PurePosixPath, Member], archive: Path) -> dict[str, LocalVoice]:
    """The voices among an archive's regular files (path -> member), checked against its voices.json."""
    catalogs = sorted((p for p in files if p.name == "voices.json"), key=lambda p: len(p.parts))
    catalog: Catalog | None = None
    if catalogs:
        with files[catalogs[0]].open() as handle:
            catalog = parse_catalog(handle.read(), f"{archive}:{catalogs[0]}")
    voices: dict[str, LocalVoice] = {}
    for path in sorted(p for p in files if p.name.endswith(".onnx")):
        name = path.name.removesuffix(".onnx")
        if name in voices:
            raise InstallError(f"{archive} holds two voices named {name}")
        card = path.with_name("MODEL_CARD")
        voices[name] = LocalVoice(
            name,
            files[path],
            files.get(path.with_name(path.name + ".json")),
            files.get(card),
            _expected(catalog, name),
        )
    return voices


def _expected(catalog: Catalog | None, name: str) -> dict[str, CatalogFile | None]:
    entry = catalog.get(name) if catalog is not None else None
    if entry is None:
        return {}
    return {"model": entry.model, "config": entry.config, "card": entry.card}


def _tar(path: Path, archive: tarfile.TarFile) -> dict[str, LocalVoice]:
    files: dict[PurePosixPath, Member] = {}
    for info in archive.getmembers():
        where = _safe(info.name, path)
        if info.isfile():

            def opener(info: tarfile.TarInfo = info) -> IO[bytes]:
                handle = archive.extractfile(info)
                assert handle is not None  # a regular file always has one
                return handle

            files[where] = Member(opener, info.size, f"{path}:{info.name}")
    return _gather(files, path)


def _zip(path: Path, archive: zipfile.ZipFile) -> dict[str, LocalVoice]:
    files: dict[PurePosixPath, Member] = {}
    for info in archive.infolist():
        where = _safe(info.filename, path)
        if not info.is_dir():

            def opener(info: zipfile.ZipInfo = info) -> IO[bytes]:
                return archive.open(info)

            files[where] = Member(opener, info.file_size, f"{path}:{info.filename}")
    return _gather(files, path)


@contextmanager
def open_offline(path: Path) -> Iterator[dict[str, LocalVoice]]:
    """The voices in ``path`` (a ``.onnx`` or an archive), by name, readable while the context is open."""
    if not path.is_file():
        raise InstallError(f"{path}: no such file")
    if path.name.endswith(".onnx"):
        yield _single(path)
        return
    with ExitStack() as stack:
        try:
            if tarfile.is_tarfile(path):
                tar = stack.enter_context(tarfile.open(path, "r:*"))
                found = _tar(path, tar)
            elif zipfile.is_zipfile(path):
                zf = stack.enter_context(zipfile.ZipFile(path))
                found = _zip(path, zf)
            else:
                raise InstallError(f"{path} is neither a .onnx voice nor a .tar, .tar.gz or .zip archive")
        except READ_ERRORS as exc:
            raise InstallError(f"cannot read the archive {path}: {exc}") from None
        yield found


def pick(voices: dict[str, LocalVoice], names: list[str], source: Path) -> list[LocalVoice]:
    """The voices ``names`` asks for (every voice when none), each with its config; InstallError otherwise."""
    if not voices:
        raise InstallError(f"{source} holds no voice (.onnx)")
    chosen = []
    for name in names or sorted(voices):
        check_name(name)
        if name not in voices:
            near = difflib.get_close_matches(name, list(voices), n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(near)}?" if near else f" (it holds {', '.join(sorted(voices))})"
            raise InstallError(f"{source} holds no voice named {name!r}{hint}")
        voice = voices[name]
        if voice.config is None:
            raise InstallError(f"{voice.model.what} has no config beside it ({name}.onnx.json): not installed")
        chosen.append(voice)
    return chosen
