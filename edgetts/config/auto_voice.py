"""`voice.model: auto`: the voice chosen by the language of the text (issue 43).

    voice:
      model: auto
      languages: {en: default, de: de_DE-thorsten-medium, fr: fr}
      language_default: en
      language_per: announcement

Each value of ``voice.languages`` is a voice name: one under ``voices:`` (that voice, with its own
settings, speaks the language), or a voice model by name (``default``, or a voice installed in
``voices.dir`` or another search folder), which the daemon loads as a voice of that name with the
``voice:`` section's settings (threads, streaming ...), so a map is all an operator writes.

The ``voice:`` section's own voice (``voice.name``, what every caller without a language, such as
Wyoming or the keepalive, speaks with) is the default language's: its model (or, when that is a
``voices:`` entry, that entry's settings).  Every language mapped to the same voice as the default
language is spoken by ``voice.name``, so that model is loaded once.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Protocol

from edgetts.config.errors import FieldError
from edgetts.config.sections import VoiceModelSettings, VoiceSettings
from edgetts.vocabulary import NAME_RE


class Config(Protocol):
    """What these functions read of edgetts.config.document.Config (which calls them: no import back)."""

    @property
    def voice(self) -> VoiceSettings: ...

    @property
    def voices(self) -> dict[str, VoiceModelSettings]: ...

    def voices_dir(self) -> Path: ...


AUTO = "auto"
"""The `voice.model` that chooses the voice by the language of the text."""


def is_auto(config: Config) -> bool:
    return config.voice.model == AUTO


def _model_settings(entry: VoiceModelSettings) -> dict[str, Any]:
    return {f.name: getattr(entry, f.name) for f in dataclasses.fields(VoiceModelSettings)}


def default_voice(config: Config) -> VoiceSettings:
    """The ``voice:`` section's voice under auto: the default language's model (or ``voices:`` entry)."""
    voice = config.voice
    target = voice.languages[voice.language_default or ""]
    entry = config.voices.get(target)
    if entry is not None:
        return dataclasses.replace(voice, **_model_settings(entry))
    return dataclasses.replace(voice, model=target)


def language_voices(config: Config) -> dict[str, str]:
    """Each mapped language -> the configured voice that speaks it (`voice.name`, a `voices:` entry,
    or a voice implied by a model's name)."""
    voice = config.voice
    target = voice.languages[voice.language_default or ""]
    return {lang: voice.name if value == target else value for lang, value in voice.languages.items()}


def auto_voices(config: Config) -> dict[str, VoiceModelSettings]:
    """Every configured voice by name under auto, the default one first: the ``voice:`` section's,
    the ``voices:`` entries, and a voice for each model the map names by itself (with the ``voice:``
    section's settings; no ``degrade_to``: that names the section's own variant)."""
    out: dict[str, VoiceModelSettings] = {config.voice.name: default_voice(config), **config.voices}
    base = dataclasses.replace(
        VoiceModelSettings(**_model_settings(config.voice)),
        degrade_to=None,
    )
    for name in language_voices(config).values():
        if name not in out:
            out[name] = dataclasses.replace(base, model=name)
    return out


def check_languages(config: Config) -> None:
    """FieldError (below the top) for a map value that is neither a configured voice nor a voice found."""
    for name, settings in config.voices.items():
        if settings.model == AUTO:
            raise FieldError(("voices", name, "model"), "auto chooses among voices: it is for voice/model only")
    voice = config.voice
    if not is_auto(config):
        return
    target = voice.languages[voice.language_default or ""]
    for lang, value in voice.languages.items():
        where = ("voice", "languages", lang)
        if value in config.voices:
            continue
        if value == voice.name and value != target:
            raise FieldError(
                where,
                f"{value!r} is voice/name, which speaks the default language ({voice.language_default}) "
                "under model auto: name another voice, or rename voice/name",
            )
        _check_found(where, value, config)


def _check_found(where: tuple[str, ...], value: str, config: Config) -> None:
    """A model named in the map is one edgetts can find (the packaged default or an installed voice)."""
    from edgetts.errors import VoiceError
    from edgetts.voice.catalog import resolve_voice  # (only for auto: it scans the voice folders)

    if not NAME_RE.match(value) or value.endswith((".onnx", ".json")):
        raise FieldError(where, f"{value[:80]!r} is not a voice name (a path belongs in voices/<name>/model)")
    try:
        resolve_voice(value, [config.voices_dir()])
    except VoiceError as exc:
        configured = ", ".join(config.voices) or "none"
        raise FieldError(where, f"{value!r} is neither a voice of voices: ({configured}) nor found: {exc}") from None


__all__ = ["AUTO", "auto_voices", "check_languages", "default_voice", "is_auto", "language_voices"]
