"""Which dictionary an espeak-ng voice reads, and whether the espeak-ng data holds it.

espeak-ng loads a voice whose dictionary file is missing without an error: it
prints "Can't read dictionary file" on stderr, ``espeak_SetVoiceByName`` returns
success and every text then phonemizes to nothing ("Buongiorno a tutti." in
``it`` without ``it_dict`` gives ``[['.']]``).  So the dictionary is looked up
here, the way espeak-ng's ``LoadVoice`` names it, and a voice without one is
refused with :class:`PhonemizerError` (issue 16 follow-up).
"""

from __future__ import annotations

import functools
from pathlib import Path

from edgetts.errors import PhonemizerError


def _voice_files(data: Path) -> list[Path]:
    return sorted(p for p in (data / "lang").rglob("*") if p.is_file())


@functools.lru_cache(maxsize=64)
def _keywords(path: Path) -> tuple[str | None, str | None, str | None]:
    """(name, first language, dictionary) of a voice file."""
    found: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        words = line.split("//", 1)[0].split()
        if len(words) >= 2 and words[0] in ("name", "language", "dictionary") and words[0] not in found:
            found[words[0]] = words[1]
    return found.get("name"), found.get("language"), found.get("dictionary")


def voice_file(data: Path, voice: str) -> Path | None:
    """The file of ``data/lang`` espeak-ng reads for voice ``voice`` (``en-us``, ``it``, ``cmn``), if any.

    Its identifier's last part (the file name) or its ``name`` line, compared as espeak-ng
    does, without case; a ``+variant`` suffix is not part of it.
    """
    wanted = voice.split("+", 1)[0].strip().lower()
    files = _voice_files(data)
    for path in files:
        if path.name.lower() == wanted:
            return path
    for path in files:
        name, _, _ = _keywords(path)
        if name is not None and name.lower() == wanted:
            return path
    return None


@functools.lru_cache(maxsize=256)  # a text switching voices asks again at every switch
def dictionary_of(data: Path, voice: str) -> str | None:
    """The dictionary (``it`` for ``it_dict``) voice ``voice`` reads; None if no voice file names it.

    espeak-ng's ``LoadVoice``: a ``dictionary`` line, else the first ``language`` line up to
    its first ``-`` (``en-us`` -> ``en``).  A name with no file of its own (``de-de``) is taken
    as its language's voice (``de``), as espeak-ng falls back to selecting by language.
    """
    path = voice_file(data, voice) or voice_file(data, voice.split("+", 1)[0].split("-", 1)[0])
    if path is None:
        return None
    _, language, dictionary = _keywords(path)
    if dictionary:
        return dictionary
    return language.split("-", 1)[0] if language else None


def check_dictionary(data: Path, voice: str) -> None:
    """Raise PhonemizerError if espeak-ng voice ``voice`` reads a dictionary ``data`` does not have.

    ``data``: an ``espeak-ng-data`` folder.  A voice no file names is left to espeak-ng
    (``espeak_SetVoiceByName`` refuses an unknown one).
    """
    dictionary = dictionary_of(data, voice)
    if dictionary is not None and not (data / f"{dictionary}_dict").is_file():
        raise PhonemizerError(
            f"espeak-ng voice {voice!r} reads language {dictionary!r}, whose dictionary {dictionary}_dict is not "
            f"in the espeak-ng data {data} (rebuild it: tools/build_espeak_data.py)"
        )
