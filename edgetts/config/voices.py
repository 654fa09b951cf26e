"""`voices/base_url` and `voices/dir`: where `edgetts voices install` fetches from and installs to.

They share the `voices:` mapping with the extra voices, which are named by the operator:

    voices:
      base_url: https://mirror.example/piper-voices   # reserved key: a URL
      dir: /srv/edgetts/voices                         # reserved key: a folder
      fr:                                              # a voice, named "fr"
        model: fr_FR-siwis-medium

So ``base_url`` and ``dir`` are reserved: they are never voice names, and their values are plain
strings where a voice's is a mapping of settings.  :class:`~edgetts.config.document.Config` turns
what the loader made of ``voices:`` into a :class:`VoiceTable` as it is built: the voice settings by
name, as ``config.voices`` always held, with the two values beside them (``config.voice_library``),
not a section of their own; a config without them reads as before.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgetts.config.errors import FieldError
from edgetts.config.sections import VoiceModelSettings
from edgetts.voice.install.index import PIPER_VOICES_URL

LIBRARY_KEYS = ("base_url", "dir")
"""Keys of `voices:` that are not voice names."""

DEFAULT_VOICES_DIR = Path("/var/lib/edgetts/voices")
"""`voices/dir` without a state directory: the first of the voice search directories (edgetts/voice/catalog.py)."""


@dataclass(frozen=True)
class VoiceLibrarySettings:
    """Where voices are installed from and to (`edgetts voices install`; the daemon only reads `dir`)."""

    base_url: str = PIPER_VOICES_URL
    """Base of the voice catalog: `<base_url>/voices.json`, each file at `<base_url>/<its path in the catalog>`
    (http, https, or file:// for a mirror on a disk)."""

    dir: str | None = None
    """Folder voices are installed into and found in by name; None = `voices` under the state
    directory (`queue/state_dir`, else systemd's `$STATE_DIRECTORY`), else /var/lib/edgetts/voices."""

    def validate(self) -> None:
        url = urllib.parse.urlsplit(self.base_url)
        if url.scheme not in ("http", "https", "file") or not (url.netloc or url.scheme == "file"):
            raise FieldError(("base_url",), f"{self.base_url[:80]!r} is not an http(s):// or file:// URL")
        if self.dir is not None and not self.dir.strip():
            raise FieldError(("dir",), "must not be empty (null for the default)")

    def resolved_dir(self, state_dir: Path | None) -> Path:
        """The voices folder in use."""
        if self.dir is not None:
            return Path(self.dir)
        return state_dir / "voices" if state_dir is not None else DEFAULT_VOICES_DIR


def split_voices(entries: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """`voices:` as converted by the loader: (the voices by name, the reserved keys' plain values).

    A voice given as nothing (`fr:`) has the default settings, as before the reserved keys."""
    plain = {k: v for k, v in entries.items() if k in LIBRARY_KEYS and not _is_settings(v)}
    voices = {k: VoiceModelSettings() if v is None else v for k, v in entries.items() if k not in plain}
    return voices, plain


def _is_settings(value: Any) -> bool:
    return isinstance(value, VoiceModelSettings)


def check_voices(entries: dict[str, Any]) -> None:
    """A FieldError for a voice named like a reserved key, or a voice given as a plain value."""
    for name, value in entries.items():
        if name in LIBRARY_KEYS:
            raise FieldError(
                ("voices", name),
                f"{name!r} is reserved (voices/{name}: {'a URL' if name == 'base_url' else 'a folder'}), "
                "not a voice name: name the voice otherwise",
            )
        if not _is_settings(value):
            raise FieldError(
                ("voices", name),
                f"a voice is a mapping of settings (e.g. `{name}: {{model: {value}}}`), not {value!r}",
            )


class VoiceTable(dict[str, VoiceModelSettings]):
    """The voices by name, with `voices/base_url` and `voices/dir` beside them (``library``).

    A dict, so every caller of ``config.voices`` reads it as before; ``library`` rides along when a
    config is copied (``dataclasses.replace`` hands the table to the new config), and counts when
    two configs are compared."""

    def __init__(self, voices: dict[str, Any] | None = None, library: VoiceLibrarySettings | None = None) -> None:
        super().__init__(voices or {})
        self.library = library or VoiceLibrarySettings()

    @classmethod
    def of(cls, entries: dict[str, Any]) -> VoiceTable:
        """What the loader made of `voices:` (voices and the reserved keys' plain values) as a table;
        a table (from a copied config) keeps its ``library`` unless the entries set one."""
        voices, plain = split_voices(entries)
        library = entries.library if isinstance(entries, VoiceTable) else VoiceLibrarySettings()
        given = {k: v for k, v in plain.items() if v is not None}  # `base_url: null`: the default
        return cls(voices, VoiceLibrarySettings(**given) if plain else library)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, dict):
            return NotImplemented
        library = other.library if isinstance(other, VoiceTable) else VoiceLibrarySettings()
        return dict.__eq__(self, other) and self.library == library

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None  # type: ignore[assignment]  # a dict
