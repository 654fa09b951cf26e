"""The `http` section: the operator's console and its JSON API (issue 18).

Like :mod:`edgetts.config.sections`: one frozen dataclass, units in the field
docstrings, ``validate()`` raising :class:`~edgetts.config.errors.FieldError`
below the section.  A change of this section needs a restart (services are not
restarted on reload).
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass

from edgetts.config.errors import FieldError

LOOPBACK_NAMES = ("localhost",)


def split_listen(listen: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port`` for IPv6) as (host, port); ValueError when it is not one."""
    host, sep, port = listen.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"{listen[:80]!r} is not HOST:PORT")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    number = int(port)
    if not 0 <= number <= 65535:  # 0: the kernel picks a free one (tests)
        raise ValueError(f"{number} is not a TCP port (0-65535)")
    return host, number


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and `localhost`: addresses no other machine can reach."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class HttpSettings:
    """The console: a web page and a JSON API inside the daemon (off by default)."""

    enabled: bool = False
    """Serve the console and the API."""

    listen: str = "127.0.0.1:8480"
    """HOST:PORT to bind (`'[::1]:8480'` for IPv6, quoted in YAML); without credentials only a
    loopback address is allowed."""

    certfile: str | None = None
    """PEM certificate: serve HTTPS (with keyfile)."""

    keyfile: str | None = None
    """PEM private key of certfile."""

    password_file: str | None = None
    """File whose first line is the console's password (mode 0600)."""

    password_credential: str | None = None
    """Name of a systemd credential (LoadCredential=) holding the password."""

    tokens_file: str | None = None
    """File of bearer tokens for scripts, one a line (`Authorization: Bearer <token>`)."""

    session_ttl_s: float = 43200.0
    """Seconds a login lasts (the session cookie's life)."""

    max_body_bytes: int = 131072
    """Largest request body accepted, bytes; a larger one gets 413."""

    rate_per_min: int = 600
    """Requests one client address may make per minute; more get 429."""

    max_tts_jobs: int = 2
    """`/api/tts` syntheses running at once (they never delay an announcement); more wait, then get 503."""

    max_batch_texts: int = 32
    """Most texts in one `/api/tts/batch` request."""

    def validate(self) -> None:
        try:
            host, _port = split_listen(self.listen)
        except ValueError as exc:
            raise FieldError(("listen",), str(exc)) from None
        if (self.certfile is None) != (self.keyfile is None):
            raise FieldError(("certfile",), "certfile and keyfile must be set together")
        for name in ("certfile", "keyfile", "password_file", "tokens_file"):
            value = getattr(self, name)
            if value is not None and self.enabled and not os.path.isfile(value):
                raise FieldError((name,), f"no such file: {value}")
        if self.password_file is not None and self.password_credential is not None:
            raise FieldError(("password_credential",), "set only one of password_file, password_credential")
        if self.password_credential is not None and "/" in self.password_credential:
            raise FieldError(("password_credential",), "a credential name has no '/'")
        if not self.has_credentials and not is_loopback(host):
            raise FieldError(
                ("listen",),
                f"{host!r} is not a loopback address: without password_file, "
                "password_credential or tokens_file the console binds to loopback only",
            )
        if not 60 <= self.session_ttl_s <= 30 * 86400:
            raise FieldError(("session_ttl_s",), "must be 60 s to 30 days")
        if not 1024 <= self.max_body_bytes <= 16 * 2**20:
            raise FieldError(("max_body_bytes",), "must be 1024 to 16777216 bytes")
        if not 10 <= self.rate_per_min <= 100000:
            raise FieldError(("rate_per_min",), "must be 10-100000")
        if not 1 <= self.max_tts_jobs <= 16:
            raise FieldError(("max_tts_jobs",), "must be 1-16")
        if not 1 <= self.max_batch_texts <= 1000:
            raise FieldError(("max_batch_texts",), "must be 1-1000")

    @property
    def has_credentials(self) -> bool:
        return any(v is not None for v in (self.password_file, self.password_credential, self.tokens_file))


__all__ = ["HttpSettings", "is_loopback", "split_listen"]
