"""The `duck` section: other audio lowered while edgetts plays, and brought back after it.

Like :mod:`edgetts.config.sections`: one frozen dataclass, units in the field docstrings,
``validate()`` raising :class:`~edgetts.config.errors.FieldError` below the section.  Which
mixers are lowered and how: docs/ducking.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgetts.config.errors import FieldError
from edgetts.config.http import split_listen


def mixer_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` for IPv6) as (host, port); ValueError when it is not one."""
    host, port = split_listen(text)
    if not 1 <= port <= 65535:
        raise ValueError(f"{port} is not a TCP port (1-65535)")
    return host, port


@dataclass(frozen=True)
class DuckSettings:
    """Other audio lowered while edgetts plays (off unless a mixer is named)."""

    level_db: float = -15.0
    """How far the other audio is lowered while edgetts plays, dB (-60 to -1)."""

    fade_ms: int = 300
    """Milliseconds of the fade down, and of the fade back up (0-5000; 0 = at once)."""

    hold_ms: int = 1000
    """Milliseconds the others stay lowered after edgetts stops playing (0-60000), so two
    announcements close together do not bring the music up between them."""

    pulse: bool = False
    """Lower the sound server's other playback streams (PulseAudio, or PipeWire through its
    PulseAudio interface), never edgetts's own."""

    mpd: str | None = None
    """An MPD server's HOST:PORT (its protocol, `setvol`); None = no MPD."""

    snapcast: str | None = None
    """A Snapcast server's control HOST:PORT (JSON-RPC over TCP, usually port 1705): every connected
    client is lowered; None = no Snapcast."""

    def validate(self) -> None:
        if not -60.0 <= self.level_db <= -1.0:
            raise FieldError(("level_db",), "must be -60 to -1 dB")
        if not 0 <= self.fade_ms <= 5000:
            raise FieldError(("fade_ms",), "must be 0-5000")
        if not 0 <= self.hold_ms <= 60000:
            raise FieldError(("hold_ms",), "must be 0-60000")
        for name in ("mpd", "snapcast"):
            value = getattr(self, name)
            if value is None:
                continue
            try:
                mixer_address(value)
            except ValueError as exc:
                raise FieldError((name,), str(exc)) from None

    @property
    def enabled(self) -> bool:
        """Some mixer is named."""
        return self.pulse or self.mpd is not None or self.snapcast is not None


__all__ = ["DuckSettings", "mixer_address"]
