"""The YAML sections of Home Assistant's ways in (issue 17): `wyoming` and `homeassistant`.

Like :mod:`edgetts.config.sections`: one frozen dataclass per section, units in the
field docstrings, ``validate()`` raising :class:`~edgetts.config.errors.FieldError`
below the section.  Both are read at start-up only: a reload does not restart the
services, so a change here needs a restart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlparse

from edgetts.config.errors import FieldError
from edgetts.vocabulary import CLIP_NAME_RE

_TOPIC_LEVELS = re.compile(r"^[^#+\s]+(/[^#+\s]+)*$")


@dataclass(frozen=True)
class WyomingSettings:
    """A Wyoming TTS server (Home Assistant's local voice protocol): `edgetts run` and `edgetts wyoming`."""

    enabled: bool = False
    """Serve Wyoming clients from the daemon."""

    uri: str = "tcp://0.0.0.0:10200"
    """Where it listens: `tcp://HOST:PORT` or `unix:///path/to/socket`."""

    zeroconf: bool = False
    """Advertise the server over mDNS as `_wyoming._tcp.local.` (Home Assistant discovers it)."""

    zeroconf_name: str | None = None
    """Instance name of the mDNS service; None = `edgetts-<device.id>`."""

    max_jobs: int = 2
    """Wyoming syntheses run at once (round-robin, only while no announcement is synthesized);
    a request beyond max_jobs + backlog gets an `error` event."""

    backlog: int = 16
    """Syntheses that may wait for one of the max_jobs."""

    announce: bool = True
    """Accept announcement audio (audio-start, audio-chunk, audio-stop: `assist_satellite.announce`)
    and play it through the queue, answered with `played`."""

    max_header_bytes: int = 65536
    """Longest event header line or data block a client may send, bytes; a longer one is refused."""

    max_payload_bytes: int = 4194304
    """Largest payload of one event (an audio chunk), bytes."""

    satellite_uri: str | None = None
    """A second listener (e.g. `tcp://0.0.0.0:10700`) whose `info` names a satellite: added in
    Home Assistant's Wyoming integration it becomes an assist_satellite entity, and
    `assist_satellite.announce` plays through the queue.  Home Assistant takes no TTS from a
    satellite's entry, so TTS stays on `uri`.  None = no satellite."""

    satellite_area: str | None = None
    """The area Home Assistant suggests for the satellite (e.g. `Kitchen`)."""

    def validate(self) -> None:
        _check_uri("uri", self.uri)
        if self.satellite_uri is not None:
            _check_uri("satellite_uri", self.satellite_uri)
            if self.satellite_uri == self.uri:
                raise FieldError(("satellite_uri",), "must differ from uri")
            if not self.announce:
                raise FieldError(("satellite_uri",), "a satellite takes announcements: needs announce: true")
        if self.satellite_area is not None and not 0 < len(self.satellite_area) <= 100:
            raise FieldError(("satellite_area",), "must be 1-100 characters")
        if not 1 <= self.max_jobs <= 16:
            raise FieldError(("max_jobs",), "must be 1-16")
        if not 0 <= self.backlog <= 256:
            raise FieldError(("backlog",), "must be 0-256")
        if not 1024 <= self.max_header_bytes <= 1048576:
            raise FieldError(("max_header_bytes",), "must be 1024-1048576")
        if not 65536 <= self.max_payload_bytes <= 67108864:
            raise FieldError(("max_payload_bytes",), "must be 65536-67108864")
        if self.zeroconf_name is not None and not 0 < len(self.zeroconf_name) <= 63:
            raise FieldError(("zeroconf_name",), "must be 1-63 characters")


def _check_uri(key: str, uri: str) -> None:
    parsed = urlparse(uri)
    if parsed.scheme == "tcp":
        try:
            port = parsed.port
        except ValueError:
            port = None
        if not parsed.hostname or port is None:
            raise FieldError((key,), f"{uri!r}: a tcp:// uri needs a host and a port")
    elif parsed.scheme != "unix" or not parsed.path:
        raise FieldError((key,), f"{uri!r}: expected tcp://HOST:PORT or unix:///path")


@dataclass(frozen=True)
class HomeAssistantSettings:
    """MQTT discovery: Home Assistant shows this device and its entities without YAML."""

    discovery: bool = False
    """Publish the discovery configs (notify, text, sensors, degraded, buttons, voice select)."""

    prefix: str = "homeassistant"
    """Home Assistant's discovery prefix (its MQTT integration's setting)."""

    name: str | None = None
    """The device's name in Home Assistant; None = `edgetts <device.id>`."""

    test_chime: str | None = None
    """Clip played by the test button; None = the default voice says a test sentence."""

    def validate(self) -> None:
        if not _TOPIC_LEVELS.match(self.prefix):
            raise FieldError(("prefix",), f"{self.prefix!r} is not a topic prefix")
        if self.name is not None and not 0 < len(self.name) <= 100:
            raise FieldError(("name",), "must be 1-100 characters")
        if self.test_chime is not None and not CLIP_NAME_RE.match(self.test_chime):
            raise FieldError(("test_chime",), f"{self.test_chime[:80]!r} is not a clip name")


__all__ = ["HomeAssistantSettings", "WyomingSettings"]
