"""Where a secret lives: a file named in the config, or a systemd credential (`LoadCredential=`).

The MQTT password and the console's password are found the same way, so a unit
that moves one of them into systemd's credential store moves the other alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


class CredentialError(ValueError):
    """The configured credential cannot be found; ``str()`` is the reason, naming the key."""


def secret_path(file: str | None, credential: str | None, key: str, environ: Mapping[str, str]) -> Path | None:
    """The file holding the secret: ``file``, else ``credential`` in $CREDENTIALS_DIRECTORY; None for neither.

    ``key``: the config section whose ``password_credential`` it is (for the message).
    """
    if file is not None:
        return Path(file)
    if credential is None:
        return None
    folder = environ.get("CREDENTIALS_DIRECTORY")
    if not folder:
        raise CredentialError(
            f"{key}/password_credential {credential!r}: $CREDENTIALS_DIRECTORY is not set "
            "(use LoadCredential= in the unit)"
        )
    return Path(folder) / credential


__all__ = ["CredentialError", "secret_path"]
