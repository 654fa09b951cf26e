"""The YAML sections that put this device on the bus: `device`, `mqtt` (and its `tls`).

Like :mod:`edgetts.config.sections`: one frozen dataclass per section, units in
the field docstrings, ``validate()`` raising
:class:`~edgetts.config.errors.FieldError` below the section.
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass, field
from typing import Literal

from edgetts.config.errors import FieldError
from edgetts.vocabulary import NAME_RE


def _default_device_id() -> str:
    host = socket.gethostname().split(".")[0]
    host = re.sub(r"[^A-Za-z0-9_-]", "-", host).strip("-")
    return host or "edgetts"


@dataclass(frozen=True)
class DeviceSettings:
    """This announcer's identity on the bus."""

    id: str = field(default_factory=_default_device_id)
    """Topic level naming this device (`<prefix>/<id>/announce`); default: the host name."""

    groups: tuple[str, ...] = ()
    """Zones/groups this device also listens to: `<prefix>/group/<name>/announce`."""

    def validate(self) -> None:
        if not NAME_RE.match(self.id):
            raise FieldError(("id",), f"{self.id!r} is not a valid id (letters, digits, - _ .)")
        for i, group in enumerate(self.groups):
            if not NAME_RE.match(group):
                raise FieldError(("groups", str(i)), f"{group!r} is not a valid group name")


@dataclass(frozen=True)
class TlsSettings:
    """TLS to the broker; mutual TLS when cert_file and key_file are set."""

    enabled: bool = False
    """Use TLS (the broker's port is then usually 8883)."""

    ca_file: str | None = None
    """PEM CA bundle that signed the broker's certificate; None = the system CAs."""

    cert_file: str | None = None
    """PEM client certificate for mutual TLS."""

    key_file: str | None = None
    """PEM private key of cert_file."""

    insecure: bool = False
    """Skip the host name check of the broker certificate (never in production)."""

    def validate(self) -> None:
        if (self.cert_file is None) != (self.key_file is None):
            raise FieldError(("cert_file",), "cert_file and key_file must be set together")
        for name in ("ca_file", "cert_file", "key_file"):
            value = getattr(self, name)
            if value is not None and self.enabled and not os.path.isfile(value):
                raise FieldError((name,), f"no such file: {value}")


@dataclass(frozen=True)
class MqttSettings:
    """The broker connection."""

    host: str = "127.0.0.1"
    """Broker host name or address."""

    port: int = 1883
    """Broker TCP port."""

    topic_prefix: str = "edgetts"
    """First topic level(s) of every topic this device uses."""

    client_id: str | None = None
    """MQTT client id, fixed so the session persists; None = `edgetts-<device.id>`."""

    protocol: Literal["auto", "5", "3.1.1"] = "auto"
    """`auto` = MQTT 5, falling back to 3.1.1 when the broker refuses 5."""

    keepalive_s: int = 30
    """Seconds between keep-alive pings."""

    session_expiry_s: int = 604800
    """Seconds the broker keeps this device's session (and its queued messages) while it is away (MQTT 5)."""

    username: str | None = None
    """User name; None = anonymous."""

    password: str | None = None
    """Password in the clear; prefer password_file or password_credential."""

    password_file: str | None = None
    """File whose first line is the password."""

    password_credential: str | None = None
    """Name of a systemd credential (LoadCredential=) holding the password."""

    reconnect_min_s: float = 1.0
    """First reconnect delay, seconds; doubled on every failure."""

    reconnect_max_s: float = 60.0
    """Cap of the reconnect delay, seconds."""

    accept_retained: bool = False
    """Play retained messages on the announce topics; false = reject them (they replay on every restart)."""

    journal_dir: str | None = None
    """Folder of the intake journal (a message that crashed the daemon twice is rejected as poison);
    None = `$CACHE_DIRECTORY/intake` under systemd, else no journal."""

    takeover_backoff_s: float = 60.0
    """Seconds to wait before reconnecting once another client with this client id keeps taking the
    session over (a second daemon with the same device id; issue 13)."""

    tls: TlsSettings = field(default_factory=TlsSettings)

    def validate(self) -> None:
        if not 1 <= self.port <= 65535:
            raise FieldError(("port",), f"{self.port} is not a TCP port (1-65535)")
        levels = self.topic_prefix.split("/")
        if not self.topic_prefix or any(not lv or "+" in lv or "#" in lv for lv in levels):
            raise FieldError(("topic_prefix",), f"{self.topic_prefix!r} is not a topic prefix")
        if self.keepalive_s < 5:
            raise FieldError(("keepalive_s",), "must be at least 5")
        if self.session_expiry_s < 0:
            raise FieldError(("session_expiry_s",), "must be >= 0")
        given = [n for n in ("password", "password_file", "password_credential") if getattr(self, n)]
        if len(given) > 1:
            raise FieldError((given[1],), f"set only one of {', '.join(given)}")
        if given and self.username is None:
            raise FieldError((given[0],), "a password needs mqtt/username")
        if self.password_file is not None and not os.path.isfile(self.password_file):
            raise FieldError(("password_file",), f"no such file: {self.password_file}")
        if self.password_credential is not None and "/" in self.password_credential:
            raise FieldError(("password_credential",), "a credential name has no '/'")
        if not 0 < self.reconnect_min_s <= self.reconnect_max_s:
            raise FieldError(("reconnect_min_s",), "need 0 < reconnect_min_s <= reconnect_max_s")
        if not 1 <= self.takeover_backoff_s <= 3600:
            raise FieldError(("takeover_backoff_s",), "must be 1-3600 seconds")
