"""The voices folder: each installed voice a folder of its own, renamed into place whole.

``<dir>/<name>/<name>.onnx``, ``<name>.onnx.json`` and, from the catalog, ``MODEL_CARD`` (where
the voice comes from, its licence).  An install writes into a hidden ``.partial-<name>-*`` folder
beside them, which no voice search looks into, checks it, and renames it to ``<name>``: one
rename, so the model and its config appear together or not at all.  A removal renames the folder
to a hidden one first, then deletes it.  Both hold a lock on the folder (two installs at once
would race for the same name); a crash (power cut, SIGKILL) leaves at most a hidden folder, which
the next install or removal deletes.  Voices dropped into the folder by hand as two files
(``<dir>/<name>.onnx`` + ``.onnx.json``) are listed and removed too.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from edgetts.voice.install.index import InstallError, check_name

_LOGGER = logging.getLogger(__name__)

_STAGING = ".partial-"
_REMOVING = ".removing-"
_LOCK = ".edgetts-voices.lock"


@dataclass(frozen=True)
class InstalledVoice:
    """A voice in the voices folder."""

    name: str
    model: Path
    """Its ``.onnx``; the ``.onnx.json`` is beside it."""

    language: str
    """Language code from its config (``language.code``, else ``espeak.voice``); empty if it names none."""

    @property
    def config(self) -> Path:
        return self.model.with_name(self.model.name + ".json")

    @property
    def folder(self) -> Path | None:
        """The voice's own folder (None for a voice dropped in as two files)."""
        return self.model.parent if self.model.parent.name == self.name else None


@dataclass(frozen=True)
class Stage:
    """A hidden folder an install writes one voice into."""

    name: str
    path: Path

    @property
    def model(self) -> Path:
        return self.path / f"{self.name}.onnx"

    @property
    def config(self) -> Path:
        return self.path / f"{self.name}.onnx.json"

    @property
    def card(self) -> Path:
        return self.path / "MODEL_CARD"


def voice_language(config: Path) -> str:
    """The language code a Piper ``.onnx.json`` names ('' when unreadable or absent)."""
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return ""
    if not isinstance(data, dict):
        return ""
    lang, espeak = data.get("language"), data.get("espeak")
    code = lang.get("code") if isinstance(lang, dict) else None
    if not code and isinstance(espeak, dict):
        code = espeak.get("voice")
    return code if isinstance(code, str) else ""


def check_config(path: Path, what: str) -> None:
    """InstallError unless ``path`` is a Piper voice config (a JSON mapping with a phoneme map)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InstallError(f"{what} has no config ({path.name} is missing)") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InstallError(f"{what}: its config {path.name} is not readable JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("phoneme_id_map"), dict):
        raise InstallError(f"{what}: its config {path.name} is not a Piper voice config (no phoneme_id_map)")


class VoiceStore:
    """The folder ``edgetts voices`` installs into (``voices.dir``)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def installed(self) -> list[InstalledVoice]:
        """Every voice in the folder, by name: its own folder, or two files at the top."""
        if not self.directory.is_dir():
            return []
        found: dict[str, InstalledVoice] = {}
        for entry in sorted(self.directory.iterdir()):
            if entry.name.startswith("."):
                continue  # an install or removal under way, or left by a crash
            model = entry / f"{entry.name}.onnx" if entry.is_dir() else entry
            if model.name.endswith(".onnx") and model.with_name(model.name + ".json").is_file():
                name = model.name.removesuffix(".onnx")
                found.setdefault(name, InstalledVoice(name, model, voice_language(Path(f"{model}.json"))))
        return sorted(found.values(), key=lambda v: v.name)

    def find(self, name: str) -> InstalledVoice | None:
        return next((v for v in self.installed() if v.name == name), None)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the folder's lock (another install or removal in it is refused) and clear crash leftovers."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            handle = (self.directory / _LOCK).open("a")
        except OSError as exc:
            raise InstallError(f"cannot use the voices folder {self.directory}: {exc.strerror or exc}") from None
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise InstallError(f"another `edgetts voices` is installing or removing in {self.directory}") from None
            for left in list(self.directory.iterdir()):
                if left.name.startswith((_STAGING, _REMOVING)) and left.is_dir():
                    _LOGGER.info("removing %s, left by an install or removal that did not finish", left)
                    shutil.rmtree(left, ignore_errors=True)
            yield

    def check_space(self, needed: int, name: str) -> None:
        """InstallError before anything is written when the folder's file system has less than ``needed`` bytes."""
        try:
            free = shutil.disk_usage(self.directory).free
        except OSError:
            return  # the writes will tell
        if free < needed:
            raise InstallError(
                f"no space for {name} in {self.directory}: it needs {needed / 1e6:.1f} MB, {free / 1e6:.1f} MB are free"
            )

    @contextmanager
    def staging(self, name: str) -> Iterator[Stage]:
        """A hidden folder to write ``name`` into; removed on the way out unless :meth:`commit` took it."""
        check_name(name)
        try:
            path = Path(tempfile.mkdtemp(prefix=f"{_STAGING}{name}-", dir=self.directory))
        except OSError as exc:
            raise InstallError(f"cannot write in {self.directory}: {exc.strerror or exc}") from None
        try:
            yield Stage(name, path)
        finally:
            if path.exists():
                shutil.rmtree(path, ignore_errors=True)

    def commit(self, stage: Stage) -> InstalledVoice:
        """Rename a checked stage into place as the voice ``stage.name``; InstallError if it is
        incomplete or a voice of that name is installed meanwhile."""
        if not stage.model.is_file():
            raise InstallError(f"{stage.name} has no model")
        check_config(stage.config, stage.name)
        target = self.directory / stage.name
        if self.find(stage.name) is not None or target.exists():
            raise InstallError(f"{stage.name} is installed already in {self.directory}")
        try:
            stage.path.chmod(0o755)  # mkdtemp makes it 0700: the daemon's user must read the voice
            os.rename(stage.path, target)
            _sync_dir(self.directory)
        except OSError as exc:
            raise InstallError(f"cannot install {stage.name} into {self.directory}: {exc.strerror or exc}") from None
        return InstalledVoice(stage.name, target / stage.model.name, voice_language(target / stage.config.name))

    def remove(self, name: str) -> InstalledVoice:
        """Take the voice ``name`` out of the folder (whole); InstallError if it is not there."""
        check_name(name)
        voice = self.find(name)
        if voice is None:
            names = ", ".join(v.name for v in self.installed()) or "none"
            raise InstallError(f"no voice named {name!r} in {self.directory} (installed there: {names})")
        try:
            if voice.folder is not None:
                gone = Path(tempfile.mkdtemp(prefix=f"{_REMOVING}{name}-", dir=self.directory))
                os.rename(voice.folder, gone / name)  # one rename: it stops being a voice at once
                shutil.rmtree(gone)
            else:
                voice.model.unlink()  # a config without its model is no voice
                voice.config.unlink(missing_ok=True)
            _sync_dir(self.directory)
        except OSError as exc:
            raise InstallError(f"cannot remove {name} from {self.directory}: {exc.strerror or exc}") from None
        return voice


def _sync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
