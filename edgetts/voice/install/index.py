"""Piper's voice catalog (``voices.json``): which voices exist, their languages, files, sizes and digests.

The catalog maps a voice key (``de_DE-thorsten-medium``) to its language, quality, speakers and
``files``: each file's path in the repository (``de/de_DE/thorsten/medium/de_DE-thorsten-medium.onnx``)
with ``size_bytes`` and ``md5_digest``; a file's address is ``<base>/<that path>``.  One broken entry
does not spoil the others: an entry is checked when it is asked for (``Catalog.find``), and a listing
leaves out what it cannot read.
"""

from __future__ import annotations

import difflib
import json
import logging
import re
from dataclasses import dataclass
from typing import Any

from edgetts.errors import VoiceError

_LOGGER = logging.getLogger(__name__)

PIPER_VOICES_URL = "https://huggingface.co/rhasspy/piper-voices/resolve/main"
"""Piper's own voice repository: ``voices.json`` and the files it lists."""

VOICE_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}\Z")
"""An installable voice's name (a catalog key): no dots or separators, so it never names a path."""

_MD5_RE = re.compile(r"^[0-9a-f]{32}\Z")


class InstallError(VoiceError):
    """A voice could not be found, fetched, checked or installed; nothing was left half-done."""


def check_name(name: str) -> str:
    """``name`` if it can be a voice name; InstallError (one line) if it holds a path or other characters."""
    if "/" in name or "\\" in name or name in (".", "..") or name.endswith((".onnx", ".json")):
        raise InstallError(
            f"{name[:120]!r} is a path, not a voice name (a name looks like de_DE-thorsten-medium; "
            "a file on disk installs with --offline FILE)"
        )
    if not VOICE_NAME_RE.match(name):
        raise InstallError(f"{name[:120]!r} is not a voice name (letters, digits, - and _ only)")
    return name


@dataclass(frozen=True)
class CatalogFile:
    """One file of a voice in the catalog."""

    key: str
    """Its path in the repository; its address is ``<base>/<key>``."""

    size_bytes: int
    """Bytes."""

    md5_digest: str
    """MD5 of its bytes, lower-case hex (the catalog's integrity check; not a signature)."""


@dataclass(frozen=True)
class CatalogVoice:
    """A voice the catalog offers."""

    name: str
    language: str
    """Language code, e.g. ``de_DE``."""

    family: str
    """Language family, e.g. ``de``."""

    language_name: str
    """The language in English, e.g. ``German``."""

    quality: str
    """``x_low``, ``low``, ``medium`` or ``high``."""

    num_speakers: int
    model: CatalogFile
    """The ``.onnx`` model."""

    config: CatalogFile
    """Its ``.onnx.json``."""

    card: CatalogFile | None
    """``MODEL_CARD``: where the voice comes from and its licence."""

    @property
    def files(self) -> tuple[CatalogFile, ...]:
        return (self.model, self.config) + ((self.card,) if self.card is not None else ())

    @property
    def size_bytes(self) -> int:
        return sum(f.size_bytes for f in self.files)

    def speaks(self, language: str) -> bool:
        """Whether ``language`` (``de``, ``de_DE``, ``de-DE``) is this voice's family or code."""
        return language_matches(language, self.language)


def language_matches(wanted: str, code: str) -> bool:
    """Whether a voice whose language code is ``code`` speaks ``wanted`` (a family or a code)."""
    want, have = wanted.replace("-", "_").lower(), code.replace("-", "_").lower()
    return want == have or want == have.split("_")[0]


def _file(key: Any, info: Any, name: str) -> CatalogFile:
    if not isinstance(key, str) or not key or key.startswith("/") or "\\" in key:
        raise InstallError(f"the catalog's entry for {name} has a bad file path {str(key)[:80]!r}")
    if any(part in ("", ".", "..") for part in key.split("/")):
        raise InstallError(f"the catalog's entry for {name} has a bad file path {key[:80]!r}")
    if not isinstance(info, dict):
        raise InstallError(f"the catalog's entry for {name}: {key} has no size and digest")
    size, md5 = info.get("size_bytes"), info.get("md5_digest")
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
        raise InstallError(f"the catalog's entry for {name}: {key} has no usable size_bytes ({size!r})")
    if not isinstance(md5, str) or not _MD5_RE.match(md5.lower()):
        raise InstallError(f"the catalog's entry for {name}: {key} has no usable md5_digest ({str(md5)[:40]!r})")
    return CatalogFile(key, size, md5.lower())


def _voice(name: str, entry: Any) -> CatalogVoice:
    """The catalog entry of ``name`` as a :class:`CatalogVoice`; InstallError naming what is wrong."""
    if not isinstance(entry, dict) or not isinstance(entry.get("files"), dict):
        raise InstallError(f"the catalog's entry for {name} has no files")
    files = [_file(key, info, name) for key, info in entry["files"].items()]
    models = [f for f in files if f.key.endswith(".onnx")]
    if len(models) != 1:
        raise InstallError(f"the catalog's entry for {name} lists {len(models)} .onnx models (expected one)")
    model = models[0]
    config = next((f for f in files if f.key == model.key + ".json"), None)
    if config is None:
        raise InstallError(f"the catalog's entry for {name} lists no config for its model ({model.key}.json)")
    card = next((f for f in files if f.key.rsplit("/", 1)[-1] == "MODEL_CARD"), None)
    lang: dict[str, Any] = entry["language"] if isinstance(entry.get("language"), dict) else {}
    code = str(lang.get("code") or name.split("-")[0])
    speakers = entry.get("num_speakers")
    return CatalogVoice(
        name=name,
        language=code,
        family=str(lang.get("family") or code.split("_")[0]),
        language_name=str(lang.get("name_english") or ""),
        quality=str(entry.get("quality") or ""),
        num_speakers=speakers if isinstance(speakers, int) and not isinstance(speakers, bool) else 1,
        model=model,
        config=config,
        card=card,
    )


@dataclass(frozen=True)
class Catalog:
    """A parsed ``voices.json``: voice key -> its raw entry (read when asked for)."""

    entries: dict[str, Any]
    source: str
    """Where it was read from (for messages)."""

    def find(self, name: str) -> CatalogVoice:
        """The voice ``name`` (or a voice one of whose ``aliases`` it is); InstallError with the
        nearest names when the catalog has none."""
        check_name(name)
        if name not in self.entries:
            for key, entry in self.entries.items():
                aliases = entry.get("aliases") if isinstance(entry, dict) else None
                if isinstance(aliases, list) and name in aliases:
                    name = key
                    break
            else:
                near = difflib.get_close_matches(name, list(self.entries), n=3, cutoff=0.6)
                hint = f"; did you mean {', '.join(near)}?" if near else " (see `edgetts voices list --available`)"
                raise InstallError(f"no voice named {name!r} in the catalog at {self.source}{hint}")
        return _voice(name, self.entries[name])

    def get(self, name: str) -> CatalogVoice | None:
        """The entry ``name`` exactly, if the catalog has one (InstallError if it is unreadable)."""
        return _voice(check_name(name), self.entries[name]) if name in self.entries else None

    def voices(self, language: str | None = None) -> list[CatalogVoice]:
        """Every readable voice (of ``language``), by name; unreadable entries are logged and left out."""
        out = []
        for key in sorted(self.entries):
            try:
                voice = _voice(check_name(key), self.entries[key])
            except InstallError as exc:
                _LOGGER.warning("%s", exc)
                continue
            if language is None or voice.speaks(language):
                out.append(voice)
        return out


def parse_catalog(data: bytes, source: str) -> Catalog:
    """``voices.json``'s bytes as a :class:`Catalog`; InstallError if it is not a JSON mapping."""
    try:
        entries = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InstallError(f"the catalog at {source} is not JSON ({exc})") from None
    if not isinstance(entries, dict):
        raise InstallError(f"the catalog at {source} is not a mapping of voice names (JSON {type(entries).__name__})")
    return Catalog(entries, source)
